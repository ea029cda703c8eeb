import Foundation
import JustLogCore
import JustLogLogstash
import JustLogReceivers
import JustLogTestSupport
import MetricsTestKit
import Testing

@Suite struct LogstashMetricsTests {
    /// The counters move as the client writes, not when a poller wakes: with an hour between sends, only the flush
    /// sends, and the metrics follow it (a poller on the send interval, as before, left them at zero for an hour —
    /// and a poller on the test runner's two-thread pool could lag a whole minute behind a busy run).
    @Test func countersReachSwiftMetricsAsTheEventsAreWritten() async throws {
        let metrics = TestMetrics()
        let tally = EventIDTally()
        let receiver = JSONLinesReceiver(configuration: .init(), handler: tally.record)
        let port = try await receiver.start()
        let directory = try TemporaryDirectory(prefix: "metrics")
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: port)
        client.useTLS = false
        client.sendInterval = .seconds(3600)
        let destination = try LogstashDestination(
            configuration: .init(client: client, spoolDirectory: directory.file("spool")),
            metrics: metrics
        )
        let logger = StructuredLogger(configuration: .init(destinations: [.init(destination)]))
        for index in 0..<50 { logger.info("metered \(index)") }
        try await logger.flush()
        #expect(await tally.waitUntil(uniqueEventIDs: 50, timeout: .seconds(60)))
        #expect(try metrics.expectCounter("justlog_logstash_spooled_total").totalValue == 50)
        #expect(
            await eventually(timeout: .seconds(60)) {
                ((try? metrics.expectCounter("justlog_logstash_sent_total").totalValue) ?? 0) == 50
            }
        )
        // json_lines proves delivery only past the resend window or by a clean close: the gauge follows the spool.
        let queued = await destination.counters().queued
        #expect(queued > 0)
        #expect(try metrics.expectGauge("justlog_logstash_queued").lastValue == Double(queued))
        #expect(try metrics.expectCounter("justlog_logstash_resent_total").totalValue == 0)
        await logger.pipeline.shutdown()
        #expect(try metrics.expectGauge("justlog_logstash_queued").lastValue == 0)
        await receiver.stop()
    }
}
