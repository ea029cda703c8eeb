import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

// Golden tests: each case renders one record four ways — console line, file line, aggregated JSON and
// flattened JSON — and compares them byte for byte with `Golden/<case>.txt`. To re-record after an
// intended format change: `JUSTLOG_RECORD_GOLDEN=1 swift test --filter GoldenFormatTests`, then review the diff.

enum NetworkError: Error {
    case refused
    case timedOut(seconds: Int)
}

struct PaymentDeclined: LocalizedError {
    var errorDescription: String? { "The payment was declined." }
    var failureReason: String? { "The card issuer refused the charge." }
    var recoverySuggestion: String? { "Try another card." }
}

struct GoldenCase: Sendable, CustomTestStringConvertible {
    let name: String
    let defaults: [String: LogValue]
    let event: @Sendable () -> LogEvent
    var testDescription: String { name }
}

let goldenCases: [GoldenCase] = [
    GoldenCase(name: "level-verbose", defaults: Fixtures.defaultUserInfo) {
        Fixtures.event(.verbose, "not so important")
    },
    GoldenCase(name: "level-debug", defaults: Fixtures.defaultUserInfo) {
        Fixtures.event(.debug, "something to debug")
    },
    GoldenCase(name: "level-info", defaults: Fixtures.defaultUserInfo) {
        Fixtures.event(.info, "a nice information", userInfo: ["some key": "some extra info"])
    },
    GoldenCase(name: "level-warning", defaults: Fixtures.defaultUserInfo) {
        Fixtures.event(.warning, "oh no, that won't be good", userInfo: ["some key": "some extra info"])
    },
    GoldenCase(name: "level-error-nserror-chain", defaults: Fixtures.defaultUserInfo) {
        let underlying = NSError(
            domain: NSURLErrorDomain,
            code: -1004,
            userInfo: [NSLocalizedDescriptionKey: "Could not connect to the server."]
        )
        let error = NSError(
            domain: "com.just-eat.test",
            code: 1234,
            userInfo: [
                NSLocalizedDescriptionKey: "description",
                NSLocalizedFailureReasonErrorKey: "error value",
                NSLocalizedRecoverySuggestionErrorKey: "recovery suggestion",
                NSUnderlyingErrorKey: underlying,
            ]
        )
        return Fixtures.event(
            .error,
            "ouch, an error did occur!",
            error: error,
            userInfo: ["some key": "some extra info"]
        )
    },
    GoldenCase(name: "defaults-overridden-per-call", defaults: Fixtures.defaultUserInfo) {
        Fixtures.event(.info, "tenant switched", userInfo: ["tenant": "IE", "environment": "staging"])
    },
    GoldenCase(name: "swift-enum-error", defaults: [:]) {
        Fixtures.event(.error, "request failed", error: NetworkError.timedOut(seconds: 30))
    },
    GoldenCase(name: "localized-error", defaults: [:]) {
        Fixtures.event(.error, "checkout failed", error: PaymentDeclined())
    },
    GoldenCase(name: "nested-dictionaries", defaults: [:]) {
        Fixtures.event(
            .info,
            "order placed",
            userInfo: [
                "order": ["id": 42, "customer": ["id": "c-7", "tier": "gold"], "empty": [String: Any]()]
            ]
        )
    },
    GoldenCase(name: "arrays", defaults: [:]) {
        Fixtures.event(
            .info,
            "basket",
            userInfo: ["items": ["pizza", "chips"], "counts": [1, 2, 3], "mixed": [1, "two", ["three": 3]] as [Any]]
        )
    },
    GoldenCase(name: "non-json-values", defaults: [:]) {
        Fixtures.event(
            .debug,
            "odd values",
            userInfo: [
                "date": Date(timeIntervalSince1970: 1_482_582_698.475),
                "data": Data([0xDE, 0xAD, 0xBE, 0xEF]),
                "url": URL(string: "https://www.just-eat.co.uk/menu?id=7")!,
                "nan": Double.nan,
                "infinity": Double.infinity,
                "minusInfinity": -Double.infinity,
                "float": Float(0.5),
                "big": UInt64.max,
                "nothing": NSNull(),
                "optional": Optional<Int>.none as Any,
                "custom": CustomThing(),
            ]
        )
    },
    GoldenCase(name: "key-collisions", defaults: ["log_type": "from defaults"]) {
        Fixtures.event(
            .error,
            "collisions",
            error: NetworkError.refused,
            userInfo: [
                "message": "user message key", "file": "user file key", "error_domain": "user domain",
                "a": ["b": 1], "a.b": 2, "timestamp": "user timestamp",
            ]
        )
    },
    GoldenCase(name: "emoji-control-and-invalid-utf8", defaults: [:]) {
        let invalid = String(decoding: [0x66, 0x6F, 0xFF, 0xFE, 0x6F] as [UInt8], as: UTF8.self)
        return Fixtures.event(
            .warning,
            "pizza 🍕 \(invalid)\nforged line\u{1B}[31m red \u{202E}evil\u{7}",
            userInfo: ["emoji": "🇬🇧"]
        )
    },
]

struct CustomThing: CustomStringConvertible {
    var description: String { "CustomThing(size: 3)" }
}

func render(_ record: LogRecord) -> String {
    let format = LineFormat(timeZone: TimeZone(identifier: "UTC")!, colors: false)
    var file: [UInt8] = []
    format.writeFileLine(for: record, into: &file)
    return """
        == console
        \(format.consoleLine(for: record))== file
        \(String(decoding: file, as: UTF8.self))== aggregated
        \(String(decoding: AggregatedFormat.encode(record), as: UTF8.self))
        == flattened
        \(String(decoding: FlattenedFormat.encode(record), as: UTF8.self))

        """
}

let goldenFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")

@Test(arguments: goldenCases)
func renderingMatchesGoldenFile(_ golden: GoldenCase) throws {
    let record = Fixtures.builder(defaults: golden.defaults).record(for: golden.event(), sequence: 1)
    let rendered = render(record)
    let url = goldenFolder.appendingPathComponent("\(golden.name).txt")
    if ProcessInfo.processInfo.environment["JUSTLOG_RECORD_GOLDEN"] == "1" {
        try rendered.write(to: url, atomically: true, encoding: .utf8)
    }
    let expected = try String(contentsOf: url, encoding: .utf8)
    #expect(rendered == expected, "\(golden.name) differs from Golden/\(golden.name).txt")
    // Every JSON rendering parses back, with both our reader and Foundation's.
    for json in [AggregatedFormat.encode(record), FlattenedFormat.encode(record)] {
        _ = try JSONReader.parse(bytes: json)
        _ = try JSONSerialization.jsonObject(with: Data(json))
    }
}

@Test func fileLineRoundTripsThroughTheReader() throws {
    for golden in goldenCases {
        let record = Fixtures.builder(defaults: golden.defaults).record(for: golden.event(), sequence: 9)
        var line: [UInt8] = []
        LineFormat(timeZone: TimeZone(identifier: "UTC")!).writeFileLine(for: record, into: &line)
        let parsed = try FileLine(parsing: Substring(String(decoding: line, as: UTF8.self)))
        #expect(parsed.level == record.level)
        #expect(parsed.record.message == record.message)
        #expect(parsed.record.userInfo == record.userInfo)
        #expect(parsed.record.metadata == record.metadata)
        #expect(parsed.record.timestamp == record.timestamp)
        #expect(parsed.record.eventID == record.eventID)
    }
}

@Test func oneMegabyteMessageIsWrittenWholeOnOneLine() throws {
    let message = String(repeating: "0123456789abcdef", count: 65_536)  // 1 MiB
    let record = Fixtures.builder().record(for: Fixtures.event(.info, message), sequence: 1)
    var line: [UInt8] = []
    LineFormat(timeZone: TimeZone(identifier: "UTC")!).writeFileLine(for: record, into: &line)
    #expect(line.count > 1 << 20)
    #expect(line.filter { $0 == UInt8(ascii: "\n") }.count == 1)
    #expect(line.last == UInt8(ascii: "\n"))
    let parsed = try FileLine(parsing: Substring(String(decoding: line, as: UTF8.self)))
    #expect(parsed.record.message == message)
    let flattened = try JSONReader.parse(bytes: FlattenedFormat.encode(record))
    guard case .object(let object) = flattened else {
        Issue.record("not an object")
        return
    }
    #expect(object["message"] == .string(message))
    #expect(LineFormat().consoleLine(for: record).utf8.count > 1 << 20)
}

@Test func bridgedFoundationErrorsAreOneLinkNotTwo() {
    struct Wrapper: Error { let underlyingError: any Error }
    let chain = ErrorChain(Wrapper(underlyingError: URLError(.timedOut)))
    #expect(chain.links.count == 2)
    #expect(chain.links.last?.domain == NSURLErrorDomain)
    #expect(ErrorChain(CocoaError(.fileNoSuchFile)).links.count == 1)
}
