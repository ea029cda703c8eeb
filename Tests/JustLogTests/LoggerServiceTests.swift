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
        let group = serviceGroup([LoggerService(logger: logger)])
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

    /// The documented order — the logger's service first, so that it shuts down last (a `ServiceGroup` shuts its
    /// services down in reverse order) — keeps what another service logs while it shuts down. The example had the
    /// logger last: it closed first, and the server's shutdown logs were dropped (review, helper-62).
    @Test func whatAServiceLogsAsItShutsDownIsWrittenWhenTheLoggersServiceComesFirst() async throws {
        let folder = try TemporaryDirectory(prefix: "service-order")
        let url = folder.appending("service.log")
        let logger = JustLog.Logger(configuration: .init(console: nil, file: .init(url: url)))
        let group = serviceGroup([LoggerService(logger: logger), Draining(logger: logger)])
        let running = Task { try await group.run() }
        logger.info("serving")
        await group.triggerGracefulShutdown()
        try await running.value
        let messages = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
            .map { try FileLine(parsing: $0).record.message }
        #expect(messages == ["serving", "drained"])
        #expect(logger.pipeline.currentStatistics.dropped == 0)
    }
}

/// A group of `services`, started and stopped by the test alone (no signals), its own log silent.
private func serviceGroup(_ services: [any Service]) -> ServiceGroup {
    ServiceGroup(
        configuration: .init(
            services: services.map { .init(service: $0) },
            gracefulShutdownSignals: [],
            logger: Logging.Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
    )
}

/// A service that logs once it is told to shut down, as a server draining its connections does.
private struct Draining: Service {
    let logger: JustLog.Logger

    func run() async throws {
        try? await gracefulShutdown()
        logger.info("drained")
    }
}
