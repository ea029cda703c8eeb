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
}
