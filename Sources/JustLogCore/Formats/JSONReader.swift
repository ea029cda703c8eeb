/// Reads JSON text into a ``LogValue``: the inverse of ``JSONWriter``, for reading log files back
/// (`justlog view`, `justlog ship`) and for tests.
///
/// Integers that fit stay `.int` / `.uint`, other numbers become `.double`; duplicate keys keep the last
/// value. Errors say at which byte offset the text went wrong.
///
/// ```swift
/// let value = try JSONReader.parse(#"{"a":[1,2.5,"x"]}"#)
/// ```
public enum JSONReader {
    /// Parses `text`, which must hold exactly one JSON value (surrounding white space allowed).
    public static func parse(_ text: some StringProtocol) throws(JustLogError) -> LogValue {
        try parse(bytes: Array(text.utf8))
    }

    /// Parses UTF-8 `bytes`, which must hold exactly one JSON value.
    public static func parse(bytes: [UInt8]) throws(JustLogError) -> LogValue {
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("unexpected text after the JSON value") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        func failure(_ what: String) -> JustLogError {
            JustLogError(.malformedInput, "invalid JSON at byte \(index): \(what)")
        }

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) throws(JustLogError) -> LogValue {
            guard depth < 512 else { throw failure("nesting deeper than 512") }
            guard index < bytes.count else { throw failure("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            default: return try number()
            }
        }

        mutating func literal(_ word: String) throws(JustLogError) {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw failure("expected \(word)")
            }
            index += expected.count
        }

        mutating func object(depth: Int) throws(JustLogError) -> LogValue {
            index += 1
            var members: [String: LogValue] = [:]
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a key") }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
                index += 1
                skipWhitespace()
                members[key] = try value(depth: depth + 1)
                skipWhitespace()
                guard index < bytes.count else { throw failure("unterminated object") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(members)
                }
                throw failure("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(JustLogError) -> LogValue {
            index += 1
            var elements: [LogValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw failure("unterminated array") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(elements)
                }
                throw failure("expected ',' or ']'")
            }
        }

        mutating func string() throws(JustLogError) -> String {
            index += 1
            var out: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < bytes.count else { throw failure("unterminated escape") }
                    let escaped = bytes[index]
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escaped)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar), index + 1 < bytes.count,
                            bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                        {
                            index += 2
                            let start = index
                            let low = try hex4()
                            if (0xDC00..<0xE000).contains(low) {
                                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                            } else {
                                // Not its partner: the high surrogate alone is replaced, the escape after it read
                                // on its own (it was eaten: review, helper-63).
                                index = start - 2
                            }
                        }
                        let character = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                        out.append(contentsOf: Array(String(character).utf8))
                    default: throw failure("unknown escape")
                    }
                case 0x00..<0x20:
                    throw failure("control character in a string")
                default:
                    out.append(byte)
                    index += 1
                }
            }
            throw failure("unterminated string")
        }

        mutating func hex4() throws(JustLogError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw failure("short \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw failure("bad hex digit")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        mutating func number() throws(JustLogError) -> LogValue {
            let start = index
            var isInteger = true
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            while index < bytes.count {
                let byte = bytes[index]
                if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                    index += 1
                } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
                    || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
                {
                    isInteger = false
                    index += 1
                } else {
                    break
                }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard !text.isEmpty, text != "-" else { throw failure("expected a value") }
            if isInteger {
                if let int = Int64(text) { return .int(int) }
                if let uint = UInt64(text) { return .uint(uint) }
            }
            guard let double = Double(text), double.isFinite else { throw failure("bad number \(text)") }
            return .double(double)
        }
    }
}
