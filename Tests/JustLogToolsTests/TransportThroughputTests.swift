import Foundation
import JustLogCore
import JustLogLogstash
import JustLogReceivers
import JustLogTestSupport
import Testing

/// Throughput over loopback per transport, in events/s: a spool holding N events is drained by a
/// `LogstashClient` into an in-process receiver (json_lines, or Beats compressed and uncompressed, plain TCP
/// and TLS), timed from `start()` until every `event_id` arrived. Opt-in (it prints figures, asserts only
/// that everything arrived):
///
///     JUSTLOG_THROUGHPUT=1 swift test --filter TransportThroughputTests
///
/// A debug build (the default) measures mostly unoptimized code; for release figures (RELIABILITY.md):
///
///     JUSTLOG_THROUGHPUT=1 swift test -c release -Xswiftc -enable-testing --scratch-path .build-release --filter TransportThroughputTests
@Suite(
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["JUSTLOG_THROUGHPUT"] == "1",
        "set JUSTLOG_THROUGHPUT=1 to measure"
    )
)
struct TransportThroughputTests {
    static let total = Int(ProcessInfo.processInfo.environment["JUSTLOG_THROUGHPUT_EVENTS"] ?? "") ?? 200_000

    @Test(arguments: ["json_lines", "beats", "beats-uncompressed"], [false, true])
    func eventsPerSecondOverLoopback(transport: String, tls: Bool) async throws {
        let certificates = tls ? try await TestCertificates.make() : nil
        let serverTLS = certificates.map {
            JSONLinesReceiver.TLS(certificateFile: $0.goodServer.certificate, keyFile: $0.goodServer.key)
        }
        let tally = EventIDTally()
        let jsonLines =
            transport == "json_lines"
            ? JSONLinesReceiver(configuration: .init(tls: serverTLS), handler: tally.record) : nil
        let beats =
            transport == "json_lines" ? nil : BeatsReceiver(configuration: .init(tls: serverTLS), handler: tally.record)
        let port: Int
        if let jsonLines { port = try await jsonLines.start() } else { port = try await beats!.start() }
        let folder = try TemporaryDirectory(prefix: "throughput")
        var configuration = LogstashClient.Configuration(host: "127.0.0.1", port: port)
        configuration.useTLS = tls
        configuration.caFile = certificates?.caFile
        configuration.sendInterval = .milliseconds(100)
        switch transport {
        case "beats": configuration.transport = .beats
        case "beats-uncompressed": configuration.transport = .beats(.init(compressionLevel: 0))
        default: break
        }
        let spool = try LogstashSpool(configuration: .init(directory: folder.path, maxTotalBytes: 256 << 20))
        let payload = String(repeating: "p", count: 100)
        for index in 0..<Self.total {
            try spool.append(
                Array(
                    #"{"@timestamp":"2026-11-23T10:00:00.000Z","log_type":"info","message":"request \#(index) served","app":"bench","event_id":"t\#(index)","padding":"\#(payload)"}"#
                        .utf8
                )
            )
            if index % 5000 == 0 { await Task.yield() }
        }
        let client = try LogstashClient(configuration: configuration, spool: spool)
        let start = ContinuousClock.now
        client.start()
        client.recordsAppended(Self.total)
        let arrived = await eventually(timeout: .seconds(300)) { tally.snapshot.uniqueEventIDs >= Self.total }
        let elapsed = ContinuousClock.now - start
        await client.shutdown()
        await jsonLines?.stop()
        await beats?.stop()
        #expect(arrived)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(
            "throughput: \(transport) \(tls ? "TLS" : "plain"): \(Self.total) events of ~230 bytes in \(String(format: "%.2f", seconds)) s = \(Int(Double(Self.total) / seconds)) events/s"
        )
    }
}
