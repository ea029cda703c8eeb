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

// MARK: - Typed values

extension LogValue {
    /// An integer of any type, as `userInfo` captures it: `.int` for a signed type, `.uint` for an unsigned one
    /// (its text, for one wider than 64 bits that does not fit). For typed fields of values known at run time:
    /// `fields: ["userID": LogValue(user.id), "plan": .string(user.plan)]`.
    public init(_ value: some BinaryInteger) {
        if type(of: value).isSigned {
            self = Int64(exactly: value).map(LogValue.int) ?? .string(String(value))
        } else {
            self = UInt64(exactly: value).map(LogValue.uint) ?? .string(String(value))
        }
    }

    /// A floating-point value, as `userInfo` captures it: `.double` (NaN and ±infinity are written as text).
    public init(_ value: some BinaryFloatingPoint) {
        self = .double(Self.double(value))
    }

    /// `value` as a `Double`; a narrower type's by its shortest decimal text, so that `Float(0.1)` is written `0.1`,
    /// not `0.10000000149011612` (review, helper-63).
    static func double(_ value: some BinaryFloatingPoint) -> Double {
        guard type(of: value).significandBitCount < Double.significandBitCount, value.isFinite else {
            return Double(value)
        }
        return Double("\(value)") ?? Double(value)
    }
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
    /// | arrays, sets, dictionaries, and their Foundation kinds | `.array` / `.object` (non-string keys described) |
    /// | a collection inside itself | `"<cycle: NSMutableArray>"` |
    /// | `nil`, `NSNull` | `.null` |
    /// | an `Error` | its description (an `NSError`'s with its user info as JSON) |
    /// | anything else | `String(describing:)` |
    ///
    /// Within the default ``CaptureLimits``: nesting deeper than 32 becomes `"<nested deeper than 32: TYPE>"`, a
    /// string past the size limit ends in `…[truncated]`, long arrays and big objects keep their first elements
    /// and keys. To learn what was cut, capture through ``fields(_:)`` or a ``ValueCapture``.
    public init(any value: Any) {
        var capture = ValueCapture()
        self = capture.value(value)
    }

    /// Captures a `userInfo` dictionary, as ``init(any:)`` captures each value, within the default
    /// ``CaptureLimits``. If something was cut, the result also says what under ``UserInfoKey/truncated`` (a
    /// caller's own `truncated` moves to `truncated_userInfo`).
    public static func fields(_ userInfo: [String: Any]) -> [String: LogValue] {
        var capture = ValueCapture()
        var fields = capture.fields(userInfo)
        let truncations = capture.truncations
        if !truncations.isEmpty {
            KeyCollision.insert(
                UserInfoKey.truncated,
                .string(truncations.joined(separator: "; ")),
                into: &fields,
                displacedSuffix: "userInfo"
            )
        }
        return fields
    }
}
