import Foundation
import JustLogCore
import JustLogLogstash
import JustLogReceivers
import JustLogTestSupport
import MetricsTestKit
import Testing

@Suite struct LogstashMetricsTests {
    @Test func countersReachSwiftMetrics() async throws {
        let metrics = TestMetrics()
        let tally = EventIDTally()
        let receiver = JSONLinesReceiver(configuration: .init(), handler: tally.record)
        let port = try await receiver.start()
        let directory = try TemporaryDirectory(prefix: "metrics")
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: port)
        client.useTLS = false
        client.sendInterval = .milliseconds(100)
        let destination = try LogstashDestination(
            configuration: .init(client: client, spoolDirectory: directory.file("spool")),
            metrics: metrics
        )
        let logger = StructuredLogger(configuration: .init(destinations: [.init(destination)]))
        for index in 0..<50 { logger.info("metered \(index)") }
        try await logger.flush()
        #expect(await tally.waitUntil(uniqueEventIDs: 50, timeout: .seconds(60)))
        #expect(try metrics.expectCounter("justlog_logstash_spooled_total").totalValue == 50)
        // The sender's counters are polled every sendInterval.
        #expect(
            await eventually(timeout: .seconds(60)) {
                ((try? metrics.expectCounter("justlog_logstash_sent_total").totalValue) ?? 0) >= 50
            }
        )
        #expect(
            await eventually(timeout: .seconds(60)) {
                (try? metrics.expectGauge("justlog_logstash_queued").lastValue) != nil
            }
        )
        await logger.pipeline.shutdown()
        await receiver.stop()
    }
}
