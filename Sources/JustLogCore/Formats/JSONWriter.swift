import CJustLogText

/// Writes ``LogValue``s as compact JSON with keys in byte order, so that two runs diff cleanly.
///
/// Strings are escaped per RFC 8259; control characters become `\n`, `\t`, … or `\u00XX`, and the
/// line and paragraph separators U+2028/U+2029 are escaped too, so a value can never split a line.
///
/// ```swift
/// JSONWriter.encode(["b": 1, "a": "x\ny"])   // {"a":"x\ny","b":1}
/// ```
public enum JSONWriter {
    /// The JSON text of `value`, as UTF-8 bytes.
    public static func encode(_ value: LogValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(value, into: &out)
        return out
    }

    /// Appends the JSON text of `value` to `out`.
    public static func write(_ value: LogValue, into out: inout [UInt8]) {
        switch value {
        case .string(let string): writeString(string, into: &out)
        case .int(let int): writeInteger(int, into: &out)
        case .uint(let uint): writeInteger(uint, into: &out)
        case .double(let double): writeDouble(double, into: &out)
        case .bool(let bool): out.append(contentsOf: (bool ? "true" : "false").utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            writeObject(object.sorted { UTF8Order.precedes($0.key, $1.key) }, into: &out)
        }
    }

    /// Appends an object whose members are already in the order to write.
    public static func writeObject(_ members: [(key: String, value: LogValue)], into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            write(member.value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    static func writeDouble(_ double: Double, into out: inout [UInt8]) {
        _ = out.write(atMost: 40) { writer in
            writeDouble(double, into: &writer)
            return true
        }
    }

    /// Appends the decimal digits of `value` (what `String(value)` writes, without making a `String`).
    static func writeInteger<Integer: FixedWidthInteger>(_ value: Integer, into out: inout [UInt8]) {
        _ = out.write(atMost: 21) { writer in
            writeInteger(value, into: &writer)
            return true
        }
    }

    /// Writes the decimal digits of `value`: at most 21 bytes.
    static func writeInteger<Integer: FixedWidthInteger>(_ value: Integer, into out: inout RawWriter) {
        if value < 0 { out.byte(UInt8(ascii: "-")) }
        var magnitude = UInt64(value.magnitude)
        // 20 digits hold any UInt64: written from the end of 24 bytes on the stack.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { digits in
            var start = 24
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.bytes(UnsafeRawBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Writes `double` as ``write(_:into:)`` does: at most 40 bytes (a `Double`'s description is at most 24).
    static func writeDouble(_ double: Double, into out: inout RawWriter) {
        guard double.isFinite else {
            out.byte(UInt8(ascii: "\""))
            out.bytes(double.isNaN ? "NaN" : (double < 0 ? "-Infinity" : "Infinity"))
            out.byte(UInt8(ascii: "\""))
            return
        }
        if double == double.rounded(.towardZero), abs(double) < 1e15 {
            // -0.0 keeps its sign (an integer has none: review, helper-63).
            if double.sign == .minus, double == 0 { out.byte(UInt8(ascii: "-")) }
            writeInteger(Int64(double), into: &out)
            out.byte(UInt8(ascii: "."))
            out.byte(UInt8(ascii: "0"))
        } else {
            var text = "\(double)"
            text.withUTF8 { out.bytes(UnsafeRawBufferPointer($0)) }
        }
    }

    /// Appends `string` as a JSON string literal: runs of bytes that need no escape are copied at once.
    public static func writeString(_ string: String, into out: inout [UInt8]) {
        var string = string
        string.withUTF8 { writeString(utf8: UnsafeRawBufferPointer($0), into: &out) }
    }

    /// Appends the UTF-8 text `bytes` as a JSON string literal (see ``writeString(_:into:)``).
    static func writeString(utf8 bytes: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        _ = out.write(atMost: escapedBound(bytes.count)) { writer in
            writeString(utf8: bytes, into: &writer)
            return true
        }
    }

    /// The most bytes the JSON string literal of `count` bytes of text takes: `\u00XX` for each, and the quotes.
    static func escapedBound(_ count: Int) -> Int { 6 * count + 2 }

    /// Writes the UTF-8 text `bytes` as a JSON string literal: at most ``escapedBound(_:)`` bytes.
    ///
    /// Text that needs no escape — almost all of it — is checked sixteen bytes at a time by the processor where it
    /// can (`cjustlog_json_clean_prefix`), then eight at a time, the last eight overlapping the ones before, and
    /// copied; the first word that needs a look hands over to ``writeEscaping(_:from:into:)``.
    static func writeString(utf8 bytes: UnsafeRawBufferPointer, into out: inout RawWriter) {
        out.byte(UInt8(ascii: "\""))
        let count = bytes.count
        var clean = 0
        if count >= 8 {
            let start = out.count
            if count >= 16, let base = bytes.baseAddress {
                clean = cjustlog_json_clean_prefix(base.assumingMemoryBound(to: UInt8.self), count)
                out.bytes(UnsafeRawBufferPointer(rebasing: bytes[..<clean]))
            }
            while clean + 8 <= count {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: clean, as: UInt64.self))
                if mayNeedEscape(word) { break }
                out.word(word)
                clean += 8
            }
            if clean < count, clean + 8 > count {
                // The last eight bytes, overlapping what is already written.
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
                if !mayNeedEscape(word) {
                    out.overwriteWord(word, endingAt: start + count)
                    clean = count
                }
            }
        } else if count >= 4 {
            // 4 to 7 bytes: two words of four that overlap, each checked with its upper half filled with `A`.
            let head = bytes.loadUnaligned(as: UInt32.self)
            let tail = bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            let filler: UInt64 = 0x4141_4141_0000_0000
            if !mayNeedEscape(UInt64(UInt32(littleEndian: head)) | filler),
                !mayNeedEscape(UInt64(UInt32(littleEndian: tail)) | filler)
            {
                let start = out.count
                out.word(UInt32(littleEndian: head))
                out.overwriteWord(UInt32(littleEndian: tail), endingAt: start + count)
                clean = count
            }
        }
        if clean < count { writeEscaping(bytes, from: clean, into: &out) }
        out.byte(UInt8(ascii: "\""))
    }

    /// Writes `bytes` from `start` on, escaping what needs it: runs of bytes that need no escape are copied at once.
    private static func writeEscaping(_ bytes: UnsafeRawBufferPointer, from start: Int, into out: inout RawWriter) {
        let count = bytes.count
        var runStart = start
        var index = start
        while index < count {
            // Eight bytes at a time while none needs a look.
            if index + 8 <= count,
                !mayNeedEscape(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
            {
                index += 8
                continue
            }
            let byte = bytes[index]
            // Printable ASCII other than `"` and `\`, and UTF-8 bytes that are not E2.
            if byte >= 0x20, byte != 0x22, byte != 0x5C, byte != 0x7F, byte != 0xE2 {
                index += 1
                continue
            }
            var width = 1
            var replacement: StaticString?
            switch byte {
            case 0x22: replacement = "\\\""
            case 0x5C: replacement = "\\\\"
            case 0x0A: replacement = "\\n"
            case 0x0D: replacement = "\\r"
            case 0x09: replacement = "\\t"
            case 0x08: replacement = "\\b"
            case 0x0C: replacement = "\\f"
            case 0xE2:
                // U+2028 / U+2029 (E2 80 A8 / E2 80 A9) would end a line in JavaScript readers.
                guard index + 2 < count, bytes[index + 1] == 0x80,
                    bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9
                else {
                    index += 1
                    continue
                }
                replacement = bytes[index + 2] == 0xA8 ? "\\u2028" : "\\u2029"
                width = 3
            default: break  // other C0 controls and DEL: \u00XX below
            }
            if index > runStart { out.bytes(UnsafeRawBufferPointer(rebasing: bytes[runStart..<index])) }
            if let replacement {
                out.bytes(replacement)
            } else {
                out.bytes("\\u00")
                out.byte(hexDigit(byte >> 4))
                out.byte(hexDigit(byte & 0xF))
            }
            index += width
            runStart = index
        }
        if count > runStart { out.bytes(UnsafeRawBufferPointer(rebasing: bytes[runStart..<count])) }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }

    /// Whether any of the eight bytes of `word` may need escaping (a control character, `"`, `\`, DEL) or a look
    /// (E2, the lead byte of U+2028 and U+2029). Never `false` for such a word; `true` only for one that has a
    /// byte of those.
    @inline(__always)
    private static func mayNeedEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZeroByte(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        let control = (word &- ones &* 0x20) & ~word & highs
        let quote = hasZeroByte(word ^ (ones &* 0x22))
        let backslash = hasZeroByte(word ^ (ones &* 0x5C))
        let delete = hasZeroByte(word ^ (ones &* 0x7F))
        let lead = hasZeroByte(word ^ (ones &* 0xE2))
        return control | quote | backslash | delete | lead != 0
    }
}
