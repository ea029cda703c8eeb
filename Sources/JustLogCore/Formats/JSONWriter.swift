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
        case .int(let int): out.append(contentsOf: String(int).utf8)
        case .uint(let uint): out.append(contentsOf: String(uint).utf8)
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
        guard double.isFinite else {
            // Unreachable through LogValue(any:), which turns these into strings; kept valid regardless.
            writeString(double.isNaN ? "NaN" : (double < 0 ? "-Infinity" : "Infinity"), into: &out)
            return
        }
        if double == double.rounded(.towardZero), abs(double) < 1e15 {
            out.append(contentsOf: String(Int64(double)).utf8)
            out.append(contentsOf: ".0".utf8)
        } else {
            out.append(contentsOf: "\(double)".utf8)
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `string` as a JSON string literal: runs of bytes that need no escape are copied at once.
    public static func writeString(_ string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { bytes in
            let count = bytes.count
            var runStart = 0
            var index = 0
            while index < count {
                let byte = bytes[index]
                // Fast path: printable ASCII other than `"` and `\`, and UTF-8 bytes that are not E2.
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
                if index > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
                if let replacement {
                    replacement.withUTF8Buffer { out.append(contentsOf: $0) }
                } else {
                    out.append(contentsOf: [
                        UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                        hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                    ])
                }
                index += width
                runStart = index
            }
            if count > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<count])) }
        }
        out.append(UInt8(ascii: "\""))
    }
}
