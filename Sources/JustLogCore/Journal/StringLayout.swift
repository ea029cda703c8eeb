/// Where a `String` keeps its UTF-8, read from the string's own two words: the fast lane copies a string's bytes into
/// a record without asking the standard library to lend them.
///
/// Lending them (`utf8.withContiguousStorageIfAvailable`) retains the string's storage, copies a small string onto
/// the stack, and calls a closure; with the length (`utf8.count`) and the copy, a call's seven strings cost ~100
/// instructions each (BENCHMARKS.md, part 17). The two words are Swift's stable ABI on 64-bit platforms
/// (`stdlib/public/core/StringObject.swift`): the first holds the count and flags, the second the object, whose
/// top four bits say the form:
/// - *small* (bit 61 of the object): up to 15 UTF-8 bytes held in the two words themselves, in memory order on a
///   little-endian machine; the count is in bits 56–59 of the object;
/// - *large, tail-allocated* (bits 60 and 61 of the object clear — not foreign, not small — and bit 60 of the
///   count and flags set): the bytes are contiguous, 32 bytes past the address in the object's low 60 bits (a
///   native string's storage, or a literal's bytes in the binary, which the compiler biases the same way); the
///   count is the low 48 bits of the first word.
///
/// Anything else — a shared or foreign (bridged) string, a big-endian or 32-bit platform — is ``other``, and the
/// caller asks the standard library.
enum StringLayout {
    /// At most 15 bytes, held in the string's two words (`low` first in memory).
    case small(low: UInt64, high: UInt64, count: Int)
    /// `count` contiguous bytes at `start`, alive as long as the string is.
    case contiguous(start: UnsafeRawPointer, count: Int)
    /// Neither: read it through the standard library.
    case other

    /// The layout of `string`.
    @inline(__always)
    init(_ string: String) {
        #if _endian(little) && (arch(x86_64) || arch(arm64))
        self.init(words: unsafeBitCast(string, to: (UInt64, UInt64).self))
        #else
        self = .other
        #endif
    }

    /// The layout of the string at `pointer`, read without loading it as a `String` (a load would retain its
    /// storage for as long as the value is used).
    @inline(__always)
    init(at pointer: UnsafePointer<String>) {
        #if _endian(little) && (arch(x86_64) || arch(arm64))
        let words = UnsafeRawPointer(pointer)
        self.init(words: (words.load(as: UInt64.self), words.load(fromByteOffset: 8, as: UInt64.self)))
        #else
        self = .other
        #endif
    }

    @inline(__always)
    private init(words: (countAndFlags: UInt64, object: UInt64)) {
        let (countAndFlags, object) = words
        if object & Bits.isSmall != 0 {
            self = .small(low: countAndFlags, high: object, count: Int(truncatingIfNeeded: (object &>> 56) & 0xF))
        } else if object & Bits.isForeign == 0, countAndFlags & Bits.isTailAllocated != 0,
            let start = UnsafeRawPointer(bitPattern: UInt(truncatingIfNeeded: object & Bits.address) &+ Bits.bias)
        {
            self = .contiguous(start: start, count: Int(truncatingIfNeeded: countAndFlags & Bits.count))
        } else {
            self = .other
        }
    }

    private enum Bits {
        static let isSmall: UInt64 = 1 << 61
        static let isForeign: UInt64 = 1 << 60
        static let isTailAllocated: UInt64 = 1 << 60
        static let address: UInt64 = 0x0FFF_FFFF_FFFF_FFFF
        static let count: UInt64 = 0x0000_FFFF_FFFF_FFFF
        /// The distance from the address in the object to the first byte (`_StringObject.nativeBias`).
        static let bias: UInt = 32
    }
}
