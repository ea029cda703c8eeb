import Foundation
import JustLogCore
import JustLogLogging
import JustLogTestSupport
import Logging
import Testing

@Suite struct JustLogLogHandlerTests {
    func make(
        _ capture: CapturingDestination,
        label: String = "com.example.billing",
        provider: Logging.Logger.MetadataProvider? = nil
    ) -> (Logging.Logger, LogPipeline) {
        let pipeline = LogPipeline(routes: [.init(capture)], builder: Fixtures.builder(defaults: ["app": "billing"]))
        var handler = JustLogLogHandler(label: label, pipeline: pipeline, logLevel: .trace, metadataProvider: provider)
        handler[metadataKey: "handler"] = "h"
        return (Logging.Logger(label: label, factory: { _ in handler }), pipeline)
    }

    @Test func routesLevelMessageMetadataSourceAndCallSite() throws {
        let capture = CapturingDestination()
        let (log, pipeline) = make(capture, provider: .init { ["request-id": "r-1"] })
        log.notice(
            "charged",
            metadata: [
                "amount": "12.50", "items": ["a", "b"], "card": ["brand": "visa"], "count": .stringConvertible(3),
            ]
        )
        #expect(pipeline.flush(timeout: 60) == nil)
        let record = try #require(capture.records.first)
        #expect(record.level == .info)
        #expect(record.message == "charged")
        #expect(record.userInfo["amount"] == "12.50")
        #expect(record.userInfo["items"] == ["a", "b"])
        #expect(record.userInfo["card"] == ["brand": "visa"])
        #expect(record.userInfo["count"] == "3")
        #expect(record.userInfo["handler"] == "h")
        #expect(record.userInfo["request-id"] == "r-1")
        #expect(record.userInfo["app"] == "billing", "defaultUserInfo applies to swift-log events too")
        #expect(record.userInfo["swift_log_level"] == "notice")
        #expect(record.metadata["logger"] == "com.example.billing")
        #expect(record.metadata["source"] == "JustLogLoggingTests")
        #expect(record.metadata["file"] == "JustLogLogHandlerTests.swift")
        #expect(record.metadata["function"] == "routesLevelMessageMetadataSourceAndCallSite()")
    }

    /// swift-log metadata is held to the pipeline's capture limits, as a facade call's `userInfo` is: it escaped
    /// them (review, helper-62) — a huge string was kept whole, many keys all kept, and no `truncated` note said so.
    @Test func metadataIsHeldToTheCaptureLimits() throws {
        let capture = CapturingDestination()
        let pipeline = LogPipeline(
            setup: .init(
                routes: [.init(capture)],
                captureLimits: CaptureLimits(maximumDepth: 2, maximumKeys: 10, maximumBytes: 4096)
            )
        )
        let log = Logging.Logger(label: "limits") { JustLogLogHandler(label: $0, pipeline: pipeline, logLevel: .trace) }
        let many = Logging.Logger.Metadata(uniqueKeysWithValues: (0..<50).map { ("key\($0)", .string("v")) })
        log.info("many keys", metadata: many)
        log.info("a big string", metadata: ["blob": .string(String(repeating: "a", count: 100_000))])
        log.info("deep", metadata: ["a": ["b": ["c": ["d": "deep"]]]])
        #expect(pipeline.flush(timeout: 60) == nil)
        let records = capture.records
        try #require(records.count == 3)
        #expect(records[0].userInfo.keys.filter { $0.hasPrefix("key") }.count <= 10)
        #expect(records[0].userInfo[UserInfoKey.truncated] != nil, "\(records[0].userInfo.keys.sorted())")
        guard case .string(let blob)? = records[1].userInfo["blob"] else {
            Issue.record("no blob: \(records[1].userInfo)")
            return
        }
        #expect(blob.utf8.count < 5000 && blob.hasSuffix("…[truncated]"), "\(blob.utf8.count) bytes")
        #expect(records[1].userInfo[UserInfoKey.truncated] != nil)
        #expect(
            records[2].userInfo["a"] == ["b": ["c": "<nested deeper than 2: Dictionary<String, LogValue>>"]],
            "\(records[2].userInfo)"
        )
    }

    /// Flat metadata within the limits is kept as it is (no copy); at and around the byte limit, and past the key
    /// limit, it keeps exactly what the full capture of the same values keeps, and says the same cuts.
    @Test func flatMetadataIsKeptExactlyAsTheFullCaptureKeepsIt() {
        let limits = CaptureLimits(maximumKeys: 4, maximumBytes: 64)
        for length in 0..<60 {
            for count in 1...5 {
                let fields = Dictionary(
                    uniqueKeysWithValues: (0..<count).map {
                        ("k\($0)", LogValue.string(String(repeating: "v", count: length)))
                    }
                )
                var flat = ValueCapture(limits: limits)
                var full = ValueCapture(limits: limits)
                let kept = flat.fields(logValues: fields)
                let captured = full.fields(fields.mapValues { $0 as Any })
                #expect(kept == captured, "\(count) members of \(length) bytes")
                #expect(flat.truncations == full.truncations, "\(count) members of \(length) bytes")
            }
        }
    }

    /// `swift_log_level` is added after the capture limits, which could cut it (review, helper-64).
    @Test func swiftLogLevelIsKeptWhateverTheLimitsCut() throws {
        let capture = CapturingDestination()
        let pipeline = LogPipeline(setup: .init(routes: [.init(capture)], captureLimits: CaptureLimits(maximumKeys: 2)))
        let log = Logging.Logger(label: "level") { JustLogLogHandler(label: $0, pipeline: pipeline, logLevel: .trace) }
        log.notice("x", metadata: ["a": "1", "b": "2", "c": "3"])
        #expect(pipeline.flush(timeout: 60) == nil)
        let record = try #require(capture.records.first)
        #expect(record.userInfo["swift_log_level"] == "notice", "\(record.userInfo)")
    }

    /// A metadata key `swift_log_level` is kept, renamed, as any key a record's own field takes: it was overwritten.
    @Test func aMetadataKeyNamedSwiftLogLevelIsKeptRenamed() throws {
        let capture = CapturingDestination()
        let (log, pipeline) = make(capture)
        log.notice("x", metadata: ["swift_log_level": "mine"])
        #expect(pipeline.flush(timeout: 60) == nil)
        let record = try #require(capture.records.first)
        #expect(record.userInfo["swift_log_level"] == "notice")
        #expect(record.userInfo["swift_log_level_userInfo"] == "mine")
    }

    /// A maximum depth past what the journal reads back is the deepest it reads (review, helper-63: deeper events
    /// were lost at a full queue's spill and at recovery).
    @Test func aMaximumDepthStaysWithinWhatTheJournalReadsBack() {
        #expect(CaptureLimits(maximumDepth: 10_000).maximumDepth == CaptureLimits.deepestNesting)
        var limits = CaptureLimits()
        limits.maximumDepth = 300
        #expect(limits.maximumDepth == CaptureLimits.deepestNesting)
    }

    @Test(arguments: [
        (Logging.Logger.Level.trace, LogLevel.verbose), (.debug, .debug), (.info, .info), (.notice, .info),
        (.warning, .warning), (.error, .error), (.critical, .error),
    ])
    func mapsEverySwiftLogLevel(swiftLog: Logging.Logger.Level, justLog: LogLevel) {
        #expect(JustLogLogHandler.level(swiftLog) == justLog)
    }

    @Test func metadataAndLevelHaveValueSemantics() {
        let pipeline = LogPipeline(routes: [.init(CapturingDestination())])
        var first = JustLogLogHandler(label: "a", pipeline: pipeline)
        var second = first
        second.logLevel = .error
        second[metadataKey: "k"] = "v"
        #expect(first.logLevel == .info)
        #expect(first[metadataKey: "k"] == nil)
        first.metadata["other"] = "x"
        #expect(second.metadata["other"] == nil)
    }

    @Test func errorsFromSwiftLogAreReportedAsAChain() throws {
        let capture = CapturingDestination()
        let (log, pipeline) = make(capture)
        struct Wrapped: Error { let underlyingError: any Error }
        log.error("failed", error: Wrapped(underlyingError: CocoaError(.fileNoSuchFile)))
        #expect(pipeline.flush(timeout: 60) == nil)
        let record = try #require(capture.records.first)
        guard case .array(let chain)? = record.userInfo["errors"] else {
            Issue.record("no errors array")
            return
        }
        #expect(chain.count == 2)
        #expect(record.userInfo["error_domain"] == .string(String(reflecting: Wrapped.self)))
    }
}
