import Foundation
import JustLogTestSupport
import Testing

@testable import JustLogCore

/// `fields:` (typed `KeyValuePairs<String, LogValue>`): the events, and the journal records, a `userInfo` of the same
/// values gives.
@Suite struct TypedFieldsTests {
    static let prefix: UInt64 = 0x0bad_cafe_f00d_0002
    static let callSite = CallSite(file: "Tests/TypedFieldsTests.swift", function: "call()", line: 7)
    static let timestamp = LogTimestamp(nanosecondsSinceEpoch: 1_700_000_000_987_654_321)

    static func fields(_ index: Int) -> KeyValuePairs<String, LogValue> {
        switch index {
        case 0: [:]
        case 1: ["userID": 42, "plan": "gold", "attempt": 1]
        case 2:
            [
                "empty": "", "unicode": "naïve ✓ 🎉", "newline": "a\nb\"c\\", "zero": 0, "min": .int(.min),
                "max": .int(.max), "unsigned": .uint(.max),
            ]
        case 3:
            [
                "half": 0.5, "negativeZero": -0.0, "nan": .double(.nan), "infinity": .double(.infinity),
                "minus": .double(-.infinity),
            ]
        default: ["yes": true, "no": false, "": "empty key", "nothing": nil]
        }
    }

    /// The same values as a `userInfo` dictionary: what the full capture is given.
    static func userInfo(_ fields: KeyValuePairs<String, LogValue>) -> [String: Any] {
        var userInfo: [String: Any] = [:]
        for (key, value) in fields { userInfo[key] = value }
        return userInfo
    }

    private func fastLane(
        _ fields: KeyValuePairs<String, LogValue>,
        limits: CaptureLimits = CaptureLimits()
    ) throws -> JournalEntry? {
        try JournalCodec.decodedFastLaneRecord { buffer in
            JournalCodec.encodeCall(
                level: .info,
                message: "m",
                fields: fields,
                callSite: Self.callSite,
                timestamp: Self.timestamp,
                eventIDPrefix: Self.prefix,
                limits: limits,
                into: buffer
            )
        }
    }

    private func fullCapture(_ userInfo: [String: Any], limits: CaptureLimits = CaptureLimits()) throws -> JournalEntry
    {
        var event = LogEvent(
            level: .info,
            message: "m",
            capturing: userInfo,
            limits: limits,
            callSite: Self.callSite,
            timestamp: Self.timestamp
        )
        let bytes = JournalCodec.record(of: &event, eventIDPrefix: Self.prefix, errorLimits: limits)
        return try bytes.withUnsafeBytes { try JournalCodec.decode($0) }.0
    }

    @Test(arguments: 0..<5)
    func typedFieldsAreJournaledAsTheSameUserInfoIs(example: Int) throws {
        let fields = Self.fields(example)
        let fast = try #require(try fastLane(fields), "the fast lane declined scalar fields")
        let full = try fullCapture(Self.userInfo(fields))
        #expect(fast.event.userInfo == full.event.userInfo)
        #expect(fast.event.truncations == full.event.truncations)
        #expect(fast.event.message == full.event.message && fast.event.callSite == full.event.callSite)
        #expect(fast.event.timestamp == full.event.timestamp && fast.eventIDPrefix == full.eventIDPrefix)
    }

    @Test func nestedValuesAndRepeatedKeysTakeTheFullCapture() throws {
        #expect(try fastLane(["list": [1, 2]]) == nil)
        #expect(try fastLane(["object": ["id": 1]]) == nil)
        #expect(try fastLane(["a": 1, "b": 2, "a": 3]) == nil)
        // Keys that a dictionary holds as one: "é" precomposed and decomposed.
        #expect(try fastLane(["\u{E9}": 1, "e\u{301}": 2]) == nil)
    }

    @Test func theFastLaneStopsWhereTheLimitsWouldCut() throws {
        let fields: KeyValuePairs<String, LogValue> = ["k": "vvvv", "n": 1]
        let exact = CaptureLimits(maximumBytes: 11 + 5 + 8)
        #expect(
            try fastLane(fields, limits: exact)?.event.userInfo == fullCapture(Self.userInfo(fields)).event.userInfo
        )
        #expect(try fastLane(fields, limits: CaptureLimits(maximumBytes: 11 + 5 + 8 - 1)) == nil)
        #expect(try fastLane(fields, limits: CaptureLimits(maximumKeys: 1)) == nil)
    }

    // MARK: - Through a logger

    private func logger(journaled: Bool) throws -> (StructuredLogger, CapturingDestination, TemporaryDirectory) {
        let folder = try TemporaryDirectory()
        let capture = CapturingDestination()
        let journal =
            journaled ? try EventJournal(configuration: .init(directory: folder.file("app.log.journal"))) : nil
        let logger = StructuredLogger(
            configuration: .init(
                destinations: [.init(capture, minimumLevel: .info)],
                diagnostics: DiagnosticSink { _ in },
                journal: journal
            )
        )
        return (logger, capture, folder)
    }

    @Test(arguments: [true, false])
    func aTypedCallLogsWhatTheSameUserInfoLogs(journaled: Bool) async throws {
        let (logger, capture, folder) = try logger(journaled: journaled)
        defer { folder.remove() }
        for example in 0..<5 {
            logger.info("typed \(example)", fields: Self.fields(example))
            logger.info("typed \(example)", userInfo: Self.userInfo(Self.fields(example)))
        }
        logger.warning("nested", fields: ["list": [1, 2], "object": ["id": 1]])
        logger.warning("nested", userInfo: ["list": [1, 2], "object": ["id": 1]])
        logger.error("failed", error: NSError(domain: "test", code: 7), fields: ["attempt": 2])
        logger.error("failed", error: NSError(domain: "test", code: 7), userInfo: ["attempt": 2])
        try await logger.flush()
        let records = capture.records
        #expect(records.count == 14)
        for pair in stride(from: 0, to: records.count - 1, by: 2) {
            let (typed, dictionary) = (records[pair], records[pair + 1])
            #expect(typed.message == dictionary.message)
            #expect(typed.level == dictionary.level)
            #expect(typed.userInfo == dictionary.userInfo, "\(typed.message)")
        }
        await logger.pipeline.shutdown()
    }

    @Test func aKeyGivenTwiceKeepsItsLastValue() async throws {
        let (logger, capture, folder) = try logger(journaled: true)
        defer { folder.remove() }
        logger.info("twice", fields: ["plan": "gold", "attempt": 1, "plan": "platinum"])
        try await logger.flush()
        #expect(capture.records.first?.userInfo["plan"] == .string("platinum"))
        #expect(capture.records.first?.userInfo["attempt"] == .int(1))
        await logger.pipeline.shutdown()
    }

    @Test func fieldsBelowEveryMinimumLevelAreNeverEvaluated() async throws {
        let (logger, capture, folder) = try logger(journaled: true)
        defer { folder.remove() }
        let evaluated = LockedValue(false)
        func fields() -> KeyValuePairs<String, LogValue> {
            evaluated.withLock { $0 = true }
            return ["k": 1]
        }
        logger.debug("filtered", fields: fields())
        try await logger.flush()
        #expect(!evaluated.current)
        #expect(capture.records.isEmpty)
        await logger.pipeline.shutdown()
    }
}

/// `LogValue(_:)` for typed fields of values known at run time: what `userInfo` captures for the same value.
@Suite struct LogValueInitTests {
    @Test func integersAndFloatsAreWhatUserInfoCaptures() {
        let values: [(LogValue, Any)] = [
            (LogValue(42), 42), (LogValue(Int8(-3)), Int8(-3)), (LogValue(Int64.min), Int64.min),
            (LogValue(UInt(7)), UInt(7)), (LogValue(UInt64.max), UInt64.max), (LogValue(UInt8(255)), UInt8(255)),
            (LogValue(0.25), 0.25), (LogValue(Float(1.5)), Float(1.5)), (LogValue(Double.nan), Double.nan),
        ]
        for (typed, any) in values {
            #expect(JSONWriter.encode(typed) == JSONWriter.encode(LogValue(any: any)), "\(any)")
        }
    }
}
