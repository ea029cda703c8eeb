#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte order of UTF-8: the order in which ``JSONWriter`` writes keys, the flattened form lists fields and a
/// capture chooses what to keep. `memcmp` on the strings' bytes: the generic `utf8.lexicographicallyPrecedes` costs
/// about ten times as much, and sorting keys is done for every record.
enum UTF8Order {
    static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        let order = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right -> Bool in
                let common = min(left.count, right.count)
                if common > 0, let a = left.baseAddress, let b = right.baseAddress {
                    let difference = memcmp(a, b, common)
                    if difference != 0 { return difference < 0 }
                }
                return left.count < right.count
            }
        }
        return (order ?? nil) ?? lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    /// The same order for two byte ranges of one buffer (keys read in place from a journal record).
    static func precedes(_ lhs: Range<Int>, _ rhs: Range<Int>, in bytes: UnsafeRawBufferPointer) -> Bool {
        compare(UnsafeRawBufferPointer(rebasing: bytes[lhs]), UnsafeRawBufferPointer(rebasing: bytes[rhs])) < 0
    }

    /// Negative, zero or positive as `lhs` comes before, is equal to or comes after `rhs`.
    static func compare(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Int {
        let common = min(lhs.count, rhs.count)
        if common > 0, let a = lhs.baseAddress, let b = rhs.baseAddress {
            let difference = memcmp(a, b, common)
            if difference != 0 { return Int(difference) }
        }
        return lhs.count - rhs.count
    }

    /// The first eight bytes of `key`, big-endian, zero-padded: two keys whose heads differ are in the order of
    /// their heads as integers — one comparison instead of a `memcmp` call (see ``compare(_:_:_:_:)``).
    static func head(of key: UnsafeRawBufferPointer) -> UInt64 {
        if key.count >= 8 { return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)) }
        var head: UInt64 = 0
        for index in 0..<key.count { head |= UInt64(key[index]) << (56 - 8 * UInt64(index)) }
        return head
    }

    /// ``head(of:)`` of the key at `range` of `bytes`, read as one word when eight bytes from its start are in
    /// `bytes` (a key in a journal record is always followed by more of the record).
    @inline(__always)
    static func head(of range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard range.lowerBound + 8 <= bytes.count else {
            return head(of: UnsafeRawBufferPointer(rebasing: bytes[range]))
        }
        let word = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: range.lowerBound, as: UInt64.self))
        // Keep the key's bytes, zero the rest (smart shifts: a shift by 64 gives 0).
        return range.count >= 8 ? word : word & ~(UInt64.max >> (8 * UInt64(range.count)))
    }

    static func head(of key: [UInt8]) -> UInt64 {
        key.withUnsafeBytes { head(of: $0) }
    }

    /// ``compare(_:_:)`` for keys whose ``head(of:)`` is given.
    @inline(__always)
    static func compare(
        _ lhsHead: UInt64,
        _ lhs: UnsafeRawBufferPointer,
        _ rhsHead: UInt64,
        _ rhs: UnsafeRawBufferPointer
    ) -> Int {
        if lhsHead != rhsHead { return lhsHead < rhsHead ? -1 : 1 }
        // Equal heads: if either key is eight bytes or shorter, it is a prefix of the other (zeros pad the head).
        guard lhs.count > 8, rhs.count > 8 else { return lhs.count - rhs.count }
        return compare(
            UnsafeRawBufferPointer(rebasing: lhs[8...]),
            UnsafeRawBufferPointer(rebasing: rhs[8...])
        )
    }
}
