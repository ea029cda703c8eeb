import Foundation

/// A value that JSON can carry: what `userInfo` and metadata values become when they are captured.
///
/// Anything else — dates, data, URLs, NaN, custom types — is turned into a readable string at capture
/// time by ``init(any:)``, so an event is never dropped because of a value JSON cannot hold.
///
/// ```swift
/// let value: LogValue = ["user": ["id": 42, "roles": ["admin"]], "ratio": 0.5]
/// let captured = LogValue(any: Date(timeIntervalSince1970: 0))   // .string("1970-01-01T00:00:00.000Z")
/// ```
public enum LogValue: Hashable, Sendable {
    case string(String)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case bool(Bool)
    case null
    case array([LogValue])
    case object([String: LogValue])
}

// MARK: - Literals

extension LogValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: LogValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, LogValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

// MARK: - Reading

extension LogValue {
    /// The value as text: strings as they are, everything else as its JSON text.
    public var text: String {
        if case .string(let string) = self { return string }
        return String(decoding: JSONWriter.encode(self), as: UTF8.self)
    }
}

// MARK: - Capturing arbitrary values

extension LogValue {
    /// Captures any value, turning what JSON cannot carry into a readable string.
    ///
    /// | value | becomes |
    /// |---|---|
    /// | `String`, `Substring`, `Character` | `.string` |
    /// | signed / unsigned integers, `Bool` | `.int` / `.uint` / `.bool` |
    /// | finite `Double`, `Float` | `.double` (NaN and ±infinity become `"NaN"`, `"Infinity"`, `"-Infinity"`) |
    /// | `Date` | RFC 3339 UTC with milliseconds |
    /// | `Data` | `"<N bytes: base64>"` |
    /// | `URL`, `UUID`, `Decimal` | their string form |
    /// | arrays, sets, dictionaries | `.array` / `.object` (non-string keys described), nesting capped at 32 |
    /// | `nil`, `NSNull` | `.null` |
    /// | an `Error` | its description |
    /// | anything else | `String(describing:)` |
    public init(any value: Any) {
        self = LogValue.capture(value, depth: 0)
    }

    static let maximumDepth = 32

    private static func capture(_ value: Any, depth: Int) -> LogValue {
        // The common types first: each failed cast of an `Any` costs tens of nanoseconds on the caller's thread.
        switch value {
        case let value as String: return .string(value)
        case let value as Int: return .int(Int64(value))
        case let value as Double: return finite(value)
        case let value as Bool: return .bool(value)
        case let value as LogValue: return value
        case let value as Substring: return .string(String(value))
        case let value as Character: return .string(String(value))
        case let value as Int8: return .int(Int64(value))
        case let value as Int16: return .int(Int64(value))
        case let value as Int32: return .int(Int64(value))
        case let value as Int64: return .int(value)
        case let value as UInt: return .uint(UInt64(value))
        case let value as UInt8: return .uint(UInt64(value))
        case let value as UInt16: return .uint(UInt64(value))
        case let value as UInt32: return .uint(UInt64(value))
        case let value as UInt64: return .uint(value)
        case let value as Float: return finite(Double(value))
        case let value as Date: return .string(LogTimestamp(value).rfc3339)
        case let value as Data: return .string("<\(value.count) bytes: \(value.base64EncodedString())>")
        case let value as URL: return .string(value.absoluteString)
        case let value as UUID: return .string(value.uuidString)
        case let value as Decimal: return .string(value.description)
        case is NSNull: return .null
        case let value as any Error: return .string(String(describing: value))
        default: break
        }
        if depth >= maximumDepth { return .string(String(describing: value)) }
        switch value {
        case let value as [String: Any]:
            return .object(value.mapValues { capture($0, depth: depth + 1) })
        case let value as [AnyHashable: Any]:
            var object: [String: LogValue] = [:]
            for (key, element) in value {
                object[String(describing: key.base)] = capture(element, depth: depth + 1)
            }
            return .object(object)
        case let value as [Any]:
            return .array(value.map { capture($0, depth: depth + 1) })
        default:
            break
        }
        // Optionals, sets and other collections are reached through reflection.
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional:
            guard let wrapped = mirror.children.first?.value else { return .null }
            return capture(wrapped, depth: depth + 1)
        case .set, .collection:
            return .array(mirror.children.map { capture($0.value, depth: depth + 1) })
        default:
            return .string(String(describing: value))
        }
    }

    private static func finite(_ value: Double) -> LogValue {
        if value.isNaN { return .string("NaN") }
        if value.isInfinite { return .string(value < 0 ? "-Infinity" : "Infinity") }
        return .double(value)
    }

    /// Captures a `userInfo` dictionary.
    public static func fields(_ userInfo: [String: Any]) -> [String: LogValue] {
        userInfo.mapValues { LogValue(any: $0) }
    }
}
