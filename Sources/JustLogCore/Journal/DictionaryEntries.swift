/// The entries of a `[String: Any]` read where the dictionary keeps them: each key and value by a pointer into
/// its storage, nothing copied, retained or released — the fast lane's walk over a call's `userInfo`.
///
/// The standard library has no borrowing iteration of a dictionary: its `keys` and `values` iterators each retain
/// the storage, and hand out every key and every `Any` as a copy (a retain, the runtime's value witness to copy the
/// existential, another to destroy it) — ~200 instructions an entry on the documented call (BENCHMARKS.md,
/// part 17). A native dictionary's storage is one object whose layout the standard library's inlinable code fixes
/// (`_RawDictionaryStorage`, `@_fixed_layout`; `stdlib/public/core/DictionaryStorage.swift`): after the object's
/// two header words, `_count`, `_capacity`, `_scale` (with three small fields in its word), `_seed`, `_rawKeys`,
/// `_rawValues`; then, allocated at its tail, the occupied buckets' bitmap (a bit a bucket, 2^scale buckets; a table
/// of fewer than 64 sets the bits past its end), the keys and the values, bucket by bucket. Iteration visits the
/// occupied buckets in increasing order; so does this.
///
/// Every walk first checks that the storage it is handed has that layout — its count is the dictionary's, the keys
/// begin right after the bitmap and the values right after the keys — reading only the header's words, which
/// every dictionary storage object has; where it does not (another layout, a bridged Cocoa dictionary), ``visit(_:_:)``
/// says so and the caller iterates as the standard library does. Platforms with the Objective-C runtime always
/// take that path: their dictionaries may be bridged, and the check reads the storage's words before knowing.
enum DictionaryEntries {
    /// Calls `body` with a pointer to each entry's key and to its value (an `Any`'s container), in the dictionary's
    /// order, while `body` returns `true`; returns what the last call of `body` returned (`true` for an empty
    /// dictionary), or `nil` without calling it when the storage is not the layout described above.
    ///
    /// The pointers are valid during the call only; `dictionary` is kept alive until the walk ends. (A function
    /// taking the loop's body, not an iterator: measured, the iterator's state kept the caller's out of registers,
    /// ~20 instructions a call more.)
    @inline(__always)
    static func visit(
        _ dictionary: [String: Any],
        _ body: (UnsafePointer<String>, UnsafeRawPointer) -> Bool
    ) -> Bool? {
        #if canImport(ObjectiveC)
        return nil
        #else
        guard MemoryLayout<[String: Any]>.size == MemoryLayout<UnsafeRawPointer>.size,
            MemoryLayout<Int>.size == 8, MemoryLayout<String>.stride == 16, MemoryLayout<Any>.stride == 32
        else { return nil }
        return withExtendedLifetime(dictionary) {
            let storage = unsafeBitCast(dictionary, to: UnsafeRawPointer.self)
            let count = storage.load(fromByteOffset: Layout.count, as: Int.self)
            let scale = Int(storage.load(fromByteOffset: Layout.scale, as: Int8.self))
            guard count == dictionary.count, scale >= 0, scale < Layout.maximumScale else { return nil }
            let buckets = 1 &<< scale
            let words = (buckets &+ 63) &>> 6
            let bitmap = storage + Layout.bitmap
            let keys = storage.load(fromByteOffset: Layout.rawKeys, as: UnsafeRawPointer.self)
            let values = storage.load(fromByteOffset: Layout.rawValues, as: UnsafeRawPointer.self)
            guard keys == bitmap + words &* 8, values == keys + buckets &* 16 else { return nil }
            // A table of fewer than 64 buckets sets the bits past its last one (the standard library's sentinel).
            let lastWordMask: UInt = buckets >= 64 ? ~0 : (1 &<< UInt(buckets)) &- 1
            var word = 0
            while word < words {
                var bits = bitmap.load(fromByteOffset: word &* 8, as: UInt.self)
                if word == words &- 1 { bits &= lastWordMask }
                while bits != 0 {
                    let bucket = word &* 64 &+ bits.trailingZeroBitCount
                    bits &= bits &- 1
                    let key = (keys + bucket &* 16).assumingMemoryBound(to: String.self)
                    guard body(key, values + bucket &* 32) else { return false }
                }
                word &+= 1
            }
            return true
        }
        #endif
    }

    /// Byte offsets in a dictionary's storage object on a 64-bit platform.
    private enum Layout {
        /// After the object's header (its metadata and reference counts).
        static let count = 16
        static let scale = 32
        static let rawKeys = 48
        static let rawValues = 56
        /// Where the tail allocation, the bitmap first, begins.
        static let bitmap = 64
        /// A scale the standard library never reaches (its count must stay an `Int`): a bound for a wrong read.
        static let maximumScale = 48
    }
}
