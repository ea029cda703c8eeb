import Foundation
import JustLog
import JustLogCore
import JustLogTestSupport
import Logging
import ServiceLifecycle
import Testing

@Suite struct LoggerServiceTests {
    @Test func gracefulShutdownFlushesEverythingAndClosesTheLogger() async throws {
        let folder = try TemporaryDirectory(prefix: "service")
        let url = folder.appending("service.log")
        let logger = JustLog.Logger(configuration: .init(console: nil, file: .init(url: url)))
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: LoggerService(logger: logger))],
                gracefulShutdownSignals: [],
                logger: Logging.Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            )
        )
        let running = Task { try await group.run() }
        for index in 0..<5000 { logger.info("before shutdown \(index)") }
        await group.triggerGracefulShutdown()
        try await running.value

        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 5000, "every event queued before the graceful shutdown was written")
        logger.info("after shutdown")
        #expect(
            logger.pipeline.currentStatistics.dropped == 1,
            "the logger is closed: later events are counted, not written"
        )
    }
}
