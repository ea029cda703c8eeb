import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

// Property tests: for thousands of random records (nested objects, arrays, colliding and dotted keys,
// Unicode and control characters), flattening keeps every leaf and always produces valid JSON.

/// A small deterministic generator (SplitMix64), so a failure names a seed that reproduces it.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum RandomValues {
    /// Keys chosen to collide: with JustLog's own keys, with each other through dots, and with renamed keys.
    static let keyPool = [
        "message", "log_type", "file", "line", "event_id", "timestamp", "@timestamp", "error_code",
        "a", "a.b", "b", "a_userInfo", "message_userInfo", "x.y.z", "🍕", "naïve", "", "\u{7}bell", "quote\"d",
    ]

    static func key(_ rng: inout SeededGenerator) -> String {
        if Int.random(in: 0..<4, using: &rng) == 0 { return "k\(Int.random(in: 0..<50, using: &rng))" }
        return keyPool.randomElement(using: &rng)!
    }

    static func string(_ rng: inout SeededGenerator) -> String {
        let pieces = ["plain", "🍕", "\n", "\"", "\\", "\u{0}", "\u{1B}[31m", "\u{2028}", "é", " ", "\u{FFFD}", "𝄞"]
        return (0..<Int.random(in: 0..<6, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
    }

    static func value(_ rng: inout SeededGenerator, depth: Int) -> LogValue {
        switch Int.random(in: 0..<(depth > 3 ? 6 : 9), using: &rng) {
        case 0: return .string(string(&rng))
        case 1: return .int(Int64.random(in: .min ... .max, using: &rng))
        case 2: return .uint(UInt64.random(in: 0 ... .max, using: &rng))
        case 3: return .double(Double.random(in: -1e300...1e300, using: &rng))
        case 4: return .bool(Bool.random(using: &rng))
        case 5: return .null
        case 6: return .array((0..<Int.random(in: 0..<4, using: &rng)).map { _ in value(&rng, depth: depth + 1) })
        default: return .object(object(&rng, depth: depth + 1))
        }
    }

    static func object(_ rng: inout SeededGenerator, depth: Int) -> [String: LogValue] {
        var object: [String: LogValue] = [:]
        for _ in 0..<Int.random(in: 0..<6, using: &rng) { object[key(&rng)] = value(&rng, depth: depth) }
        return object
    }

    static func record(seed: UInt64) -> LogRecord {
        var rng = SeededGenerator(state: seed)
        var metadata = object(&rng, depth: 1)
        metadata["timestamp"] = .string("2016-12-24T12:31:38.475Z")
        return LogRecord(
            level: LogLevel.allCases.randomElement(using: &rng)!,
            message: string(&rng),
            userInfo: object(&rng, depth: 1),
            metadata: metadata,
            timestamp: Fixtures.timestamp,
            eventID: "id"
        )
    }
}

/// The leaves of an object: non-object values and empty objects, which flattening must each keep.
func leaves(of object: [String: LogValue]) -> [LogValue] {
    object.values.flatMap { value -> [LogValue] in
        if case .object(let nested) = value, !nested.isEmpty { return leaves(of: nested) }
        return [value]
    }
}

func canonical(_ value: LogValue, topLevelKey: String?) -> String {
    // error_code is written as a string at the top level of the flattened form.
    if topLevelKey == "error_code", case .int(let code) = value {
        return String(decoding: JSONWriter.encode(.string(String(code))), as: UTF8.self)
    }
    return String(decoding: JSONWriter.encode(value), as: UTF8.self)
}

@Test(arguments: 0..<20)
func flatteningKeepsEveryLeafAndWritesValidJSON(batch: Int) throws {
    for index in 0..<250 {
        let seed = UInt64(batch * 1000 + index)
        let record = RandomValues.record(seed: seed)
        let members = FlattenedFormat.members(of: record)

        // Nothing lost: one flattened member per leaf of metadata (timestamp becomes @timestamp) and userInfo, plus message.
        var metadata = record.metadata
        metadata["timestamp"] = nil
        let userInfoLeaves = leaves(of: record.userInfo)
        let expectedCount = 2 + leaves(of: metadata).count + userInfoLeaves.count
        #expect(members.count == expectedCount, "seed \(seed): \(members.count) members for \(expectedCount) leaves")

        // Keys are unique.
        #expect(Set(members.map(\.key)).count == members.count, "seed \(seed): duplicate key")

        // The same multiset of values comes out (error_code aside, compared as JSON text).
        var expected = (leaves(of: metadata) + [LogValue.string(record.message), .string("2016-12-24T12:31:38.475Z")])
            .map { canonical($0, topLevelKey: nil) }
        for (key, value) in record.userInfo {
            if case .object(let nested) = value, !nested.isEmpty {
                expected += leaves(of: nested).map { canonical($0, topLevelKey: nil) }
            } else {
                expected.append(canonical(value, topLevelKey: key))
            }
        }
        let actual = members.map { canonical($0.value, topLevelKey: nil) }
        #expect(expected.sorted() == actual.sorted(), "seed \(seed): values differ")

        // Valid JSON, for our reader and for Foundation's, and a single line.
        let json = FlattenedFormat.encode(record)
        #expect(!json.contains(UInt8(ascii: "\n")), "seed \(seed): newline in a json_lines object")
        guard case .object(let parsed) = try JSONReader.parse(bytes: json) else {
            Issue.record("seed \(seed): not an object")
            continue
        }
        #expect(parsed.count == members.count)
        _ = try JSONSerialization.jsonObject(with: Data(json))
        _ = try JSONSerialization.jsonObject(with: Data(AggregatedFormat.encode(record)))
    }
}

@Test func flatteningIsDeterministic() {
    for seed in UInt64(0)..<200 {
        let record = RandomValues.record(seed: seed)
        #expect(FlattenedFormat.encode(record) == FlattenedFormat.encode(record))
    }
}

@Test func jsonWriterAndReaderRoundTripRandomValues() throws {
    var rng = SeededGenerator(state: 42)
    for _ in 0..<2000 {
        let value = RandomValues.value(&rng, depth: 0)
        let text = JSONWriter.encode(value)
        let back = try JSONReader.parse(bytes: text)
        #expect(JSONWriter.encode(back) == text)
    }
}

/// `JSONWriter.writeString` copies runs of plain bytes at once (sixteen at a time by SSE2, then eight): at every
/// length and position — in the first block of sixteen, the second, the words after them — a character that needs
/// escaping (or a multi-byte one) must still be escaped exactly as one character at a time would.
@Test func jsonStringsAreEscapedAtEveryPositionOfARun() throws {
    func reference(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\u00" + String(format: "%02x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
    let specials: [String] = [
        "\"", "\\", "\n", "\u{01}", "\u{1F}", "\u{7F}", "é", "✓", "\u{2028}", "\u{2029}", "€", "🎉", " ", "~", "\u{0}",
        "\u{80}", "\u{FF}", "!", "[", "]", "\u{2027}",
    ]
    for special in specials {
        for length in 0..<40 {
            for position in 0...length {
                let plain = String(repeating: "a", count: length)
                var text = plain
                text.insert(contentsOf: special, at: text.index(text.startIndex, offsetBy: position))
                var out: [UInt8] = []
                JSONWriter.writeString(text, into: &out)
                #expect(
                    String(decoding: out, as: UTF8.self) == reference(text),
                    "\(special.debugDescription) at \(position) of \(length)"
                )
            }
        }
    }
}

/// A key that collides is renamed only after every key's owner has it: a caller's own `file_userInfo`, which collides
/// with nothing, keeps its name, and the caller's `file` (which the metadata's `file` outranks) takes the next free
/// one. It took the caller's `file_userInfo`, which was pushed to `file_userInfo_userInfo` (review, helper-63) — the
/// same record's aggregated form and `KeyCollision` say otherwise.
@Test func aRenamedKeyNeverTakesTheNameOfAKeyThatCollidedWithNothing() {
    let record = LogRecord(
        level: .info,
        message: "m",
        userInfo: ["file": "a", "file_userInfo": "b"],
        metadata: ["file": "X.swift", "timestamp": "2016-12-24T12:31:38.475Z"],
        timestamp: Fixtures.timestamp,
        eventID: "id"
    )
    let members = Dictionary(uniqueKeysWithValues: FlattenedFormat.members(of: record).map { ($0.key, $0.value) })
    #expect(members["file"] == "X.swift")
    #expect(members["file_userInfo"] == "b")
    #expect(members["file_userInfo_2"] == "a")
    #expect(members["file_userInfo_userInfo"] == nil)
}
