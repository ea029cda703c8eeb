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
