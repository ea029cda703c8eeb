import Foundation
import JustLogTestSupport
import Testing

@testable import JustLogCore

/// The fast lane: a plain call's journal record written straight from its values must be the record the full
/// capture would have journaled, and anything that is not plain must take the full capture.
@Suite struct CallRecordTests {
    static let prefix: UInt64 = 0x0bad_cafe_f00d_0001
    static let callSite = CallSite(file: "Tests/CallRecordTests.swift", function: "call()", line: 42)
    static let timestamp = LogTimestamp(nanosecondsSinceEpoch: 1_700_000_000_123_456_789)

    /// What the fast lane journals for the call, decoded; `nil` when it declines it.
    private func fastLane(
        _ message: String,
        _ userInfo: [String: Any]?,
        limits: CaptureLimits = CaptureLimits()
    ) throws -> JournalEntry? {
        try JournalCodec.decodedFastLaneRecord { buffer in
            JournalCodec.encodeCall(
                level: .warning,
                message: message,
                userInfo: userInfo,
                callSite: Self.callSite,
                timestamp: Self.timestamp,
                eventIDPrefix: Self.prefix,
                limits: limits,
                into: buffer
            )
        }
    }

    /// What the full capture journals for the same call, decoded.
    private func fullCapture(
        _ message: String,
        _ userInfo: [String: Any]?,
        limits: CaptureLimits = CaptureLimits()
    ) throws -> JournalEntry {
        var event = LogEvent(
            level: .warning,
            message: message,
            capturing: userInfo,
            limits: limits,
            callSite: Self.callSite,
            timestamp: Self.timestamp
        )
        let bytes = JournalCodec.record(of: &event, eventIDPrefix: Self.prefix, errorLimits: limits)
        return try bytes.withUnsafeBytes { try JournalCodec.decode($0) }.0
    }

    private func expectSame(
        _ fast: JournalEntry?,
        _ full: JournalEntry,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let fast else {
            Issue.record("the fast lane declined a plain call", sourceLocation: sourceLocation)
            return
        }
        #expect(fast.sequence == full.sequence, sourceLocation: sourceLocation)
        #expect(fast.eventIDPrefix == full.eventIDPrefix, sourceLocation: sourceLocation)
        #expect(fast.event.level == full.event.level, sourceLocation: sourceLocation)
        #expect(fast.event.message == full.event.message, sourceLocation: sourceLocation)
        #expect(fast.event.userInfo == full.event.userInfo, sourceLocation: sourceLocation)
        #expect(fast.event.metadata == full.event.metadata, sourceLocation: sourceLocation)
        #expect(fast.event.truncations == full.event.truncations, sourceLocation: sourceLocation)
        #expect(fast.event.callSite == full.event.callSite, sourceLocation: sourceLocation)
        #expect(fast.event.timestamp == full.event.timestamp, sourceLocation: sourceLocation)
        #expect(fast.event.error == nil && full.event.error == nil, sourceLocation: sourceLocation)
    }

    /// Plain `userInfo`s (`[String: Any]` is not `Sendable`: the tests take an index).
    static func plainUserInfo(_ index: Int) -> [String: Any] {
        [
            [:],
            ["userID": 42, "plan": "gold", "attempt": 1],
            ["empty": "", "unicode": "naïve ✓ 🎉", "newline": "a\nb\"c\\", "zero": 0, "min": Int.min, "max": Int.max],
            [
                "half": 0.5, "negativeZero": -0.0, "nan": Double.nan, "infinity": Double.infinity,
                "minus": -Double.infinity,
            ],
            ["yes": true, "no": false, "": "empty key"],
        ][index]
    }

    @Test(arguments: 0..<5)
    func aPlainCallIsJournaledAsTheFullCaptureJournalsIt(example: Int) throws {
        let userInfo = Self.plainUserInfo(example)
        expectSame(try fastLane("user signed in", userInfo), try fullCapture("user signed in", userInfo))
    }

    @Test func aCallWithoutUserInfoIsPlain() throws {
        expectSame(try fastLane("", nil), try fullCapture("", nil))
        expectSame(try fastLane("just a message", [:]), try fullCapture("just a message", [:]))
    }

    @Test func aRecordLargerThanTheStackBufferIsWrittenOnTheHeap() throws {
        let message = String(repeating: "long message ✓ ", count: 200)
        let userInfo: [String: Any] = ["text": String(repeating: "x", count: 3_000), "count": 7]
        #expect(message.utf8.count > JournalCodec.callRecordStackBytes)
        expectSame(try fastLane(message, userInfo), try fullCapture(message, userInfo))
    }

    @Test func aHeapStringValueIsReadWithoutTakingItFromItsDictionary() throws {
        // The fast lane reads a string straight out of the `Any` that holds it: a missing retain would free the
        // dictionary's string while it is still held (and crash, or decode garbage, in a later round).
        let text = String(repeating: "not a small string ✓ ", count: 4)
        let userInfo: [String: Any] = ["text": text, "other": String(text.reversed()), "count": 3]
        let full = try fullCapture("m", userInfo)
        for _ in 0..<500 {
            expectSame(try fastLane("m", userInfo), full)
        }
        #expect(userInfo["text"] as? String == text)
        #expect(userInfo["other"] as? String == String(text.reversed()))
    }

    @Test func aUserInfoOfManyEntriesIsJournaledAsTheFullCaptureJournalsIt() throws {
        // More buckets than one bitmap word of the dictionary's storage holds (DictionaryEntries).
        var userInfo: [String: Any] = [:]
        for index in 0..<100 { userInfo["key \(index)"] = index % 2 == 0 ? index : "value \(index) ✓" }
        let limits = CaptureLimits(maximumKeys: 100, maximumBytes: 1 << 20)
        expectSame(try fastLane("m", userInfo, limits: limits), try fullCapture("m", userInfo, limits: limits))
    }

    @Test func aNegativeByteLimitTakesTheFullCaptureWithoutATrap() throws {
        // The budget is charged with wrapping arithmetic: a limit below zero must decline, not wrap round.
        // (`init` clamps it; the property is public and can be set below zero after.)
        let userInfo: [String: Any] = ["k": "v", "n": 1]
        for limit in [Int.min, -1] {
            var limits = CaptureLimits()
            limits.maximumBytes = limit
            #expect(try fastLane("m", userInfo, limits: limits) == nil)
            expectSame(try fastLane("m", [:], limits: limits), try fullCapture("m", [:]))
        }
    }

    /// Values ``ValueCapture`` captures and the fast lane leaves to it.
    static func notPlain(_ what: String) -> Any {
        switch what {
        case "a sensitive value": Sensitive("secret")
        case "a nested array": [1, 2, 3]
        case "a nested object": ["id": 1]
        case "an optional": Optional("x") as Any
        case "a Foundation number": NSNumber(value: 3)
        case "a Foundation string": NSString(string: "x")
        case "a narrower integer": Int32(3)
        case "an unsigned integer": UInt(3)
        case "a float": Float(1.5)
        case "a substring": "abc".dropFirst()
        case "a date": Date(timeIntervalSince1970: 0)
        case "a LogValue": LogValue.int(3)
        default: NSError(domain: "d", code: 1)
        }
    }

    @Test(arguments: [
        "a sensitive value", "a nested array", "a nested object", "an optional", "a Foundation number",
        "a Foundation string", "a narrower integer", "an unsigned integer", "a float", "a substring", "a date",
        "a LogValue", "an error",
    ])
    func anythingButPlainValuesTakesTheFullCapture(_ what: String) throws {
        let userInfo: [String: Any] = ["plain": 1, "value": Self.notPlain(what)]
        #expect(try fastLane("m", userInfo) == nil, "\(what) is ValueCapture's to capture")
    }

    @Test func theFastLaneStopsExactlyWhereTheLimitsWouldCut() throws {
        // Keys at their length + 4, strings at theirs + 2, other scalars at 8: "k" + "vvvv" costs 5 + 6 = 11.
        let userInfo: [String: Any] = ["k": "vvvv", "n": 1]
        let exact = CaptureLimits(maximumBytes: 11 + 5 + 8)
        expectSame(try fastLane("m", userInfo, limits: exact), try fullCapture("m", userInfo, limits: exact))
        let short = CaptureLimits(maximumBytes: 11 + 5 + 8 - 1)
        #expect(try fastLane("m", userInfo, limits: short) == nil)
        // The full capture decides: here it keeps both (a scalar may overshoot the budget) …
        #expect(try fullCapture("m", userInfo, limits: short).event.userInfo.count == 2)
        // … and here it cuts the string, and says so.
        let tiny = CaptureLimits(maximumBytes: 12)
        #expect(try fastLane("m", userInfo, limits: tiny) == nil)
        #expect(try !fullCapture("m", userInfo, limits: tiny).event.truncations.isEmpty)

        let keys = CaptureLimits(maximumKeys: 2)
        expectSame(try fastLane("m", userInfo, limits: keys), try fullCapture("m", userInfo, limits: keys))
        let oneKey = CaptureLimits(maximumKeys: 1)
        #expect(try fastLane("m", userInfo, limits: oneKey) == nil)
    }

    // MARK: - Through a pipeline

    /// Plain calls (the fast lane) and calls that need the full capture (an error, a nested or sensitive value),
    /// from several threads: each destination gets every event once, in each thread's order, with the
    /// sequence numbers in log order.
    @Test func plainAndFullCallsFromSeveralThreadsKeepTheirOrder() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let capture = CapturingDestination()
        let journal = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        let logger = StructuredLogger(
            configuration: .init(destinations: [.init(capture)], diagnostics: DiagnosticSink { _ in }, journal: journal)
        )
        let threads = 4
        let perThread = 1_500
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    for index in 0..<perThread {
                        switch index % 4 {
                        case 0: logger.info("t\(thread) e\(index)", userInfo: ["thread": thread, "index": index])
                        case 1: logger.warning("t\(thread) e\(index)", error: NSError(domain: "test", code: index))
                        case 2: logger.info("t\(thread) e\(index)", userInfo: ["nested": ["index": index]])
                        default: logger.debug("t\(thread) e\(index)")
                        }
                        if index % 64 == 0 { await Task.yield() }
                    }
                }
            }
        }
        try await logger.flush()
        let records = capture.records
        #expect(records.count == threads * perThread)
        for thread in 0..<threads {
            let mine = records.filter { $0.message.hasPrefix("t\(thread) ") }.map(\.message)
            #expect(mine == (0..<perThread).map { "t\(thread) e\($0)" })
        }
        let sequences = records.compactMap { EventIDGenerator.components(of: $0.eventID)?.sequence }
        #expect(sequences == (0..<UInt64(threads * perThread)).map { $0 })
        let plain = try #require(records.first { $0.message == "t0 e0" })
        #expect(plain.userInfo["index"] == .int(0))
        #expect(plain.userInfo["thread"] == .int(0))
        #expect(logger.pipeline.currentStatistics.delivered == UInt64(threads * perThread))
        await logger.pipeline.shutdown()
        // Everything was acknowledged: a restart on the folder recovers nothing.
        let next = CapturingDestination()
        let restarted = LogPipeline(
            setup: .init(
                routes: [.init(next)],
                journal: try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
            ),
            diagnostics: DiagnosticSink { _ in }
        )
        await restarted.shutdown()
        #expect(next.records.isEmpty)
    }
}

extension JournalCodec {
    /// The record `encode` writes through the fast lane's buffers (``withRecord(encodedBy:_:)``), decoded — every
    /// byte of it; `nil` when `encode` declines the call (and then nothing is handed on). For the fast-lane tests.
    static func decodedFastLaneRecord(_ encode: (UnsafeMutableRawBufferPointer) -> Int?) throws -> JournalEntry? {
        var bytes: [UInt8]?
        let taken = withRecord(encodedBy: encode) { record in
            bytes = Array(record)
            return true
        }
        guard taken, let bytes else {
            #expect(bytes == nil, "a declined call hands nothing on")
            return nil
        }
        let (entry, consumed) = try bytes.withUnsafeBytes { try decode($0) }
        #expect(consumed == bytes.count)
        return entry
    }
}
