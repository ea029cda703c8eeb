import Foundation
import JustLogLogstash
import JustLogReceivers
import JustLogTestSupport
import Testing

/// Issue #10: a TLS/plain mismatch — the likeliest first mistake — said "can't connect (End of file)" or "run the
/// same command again". Both directions are now named, against the project's own json_lines receiver.
@Suite(.enabled(if: TestCertificates.opensslPath != nil, "openssl is not installed"))
struct TransportMismatchTests {
    private func flushError(useTLS: Bool, receiver tls: JSONLinesReceiver.TLS?, caFile: String?) async throws -> String
    {
        let receiver = JSONLinesReceiver(configuration: .init(tls: tls)) { _ in }
        let port = try await receiver.start()
        let directory = try TemporaryDirectory(prefix: "mismatch")
        var configuration = LogstashClient.Configuration(host: "127.0.0.1", port: port)
        configuration.useTLS = useTLS
        configuration.caFile = caFile
        configuration.connectTimeout = .seconds(2)
        configuration.sendInterval = .milliseconds(50)
        let client = try LogstashClient(
            configuration: configuration,
            spool: LogstashSpool(configuration: .init(directory: directory.path))
        )
        client.start()
        try client.spool.append(Array(#"{"message":"hello","event_id":"1"}"#.utf8))
        client.recordsAppended()
        // What a user sees: the flush's error, or — a plain json_lines write "succeeds" before the collector's
        // answer arrives — the connection error the client keeps for a final message (`justlog ship` prints it).
        var message = "no error"
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            do {
                try await client.flush()
            } catch {
                message = "\(error)"
                break
            }
            if let last = await client.counters().lastConnectionError {
                message = last
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        await client.shutdown()
        await receiver.stop()
        return message
    }

    @Test func aPlainClientAgainstATLSCollectorIsToldToTurnTLSOn() async throws {
        let certificates = try TestCertificates()
        let tls = JSONLinesReceiver.TLS(
            certificateFile: certificates.goodServer.certificate,
            keyFile: certificates.goodServer.key
        )
        let message = try await flushError(useTLS: false, receiver: tls, caFile: nil)
        #expect(message.contains("it expects TLS on this port"), "\(message)")
    }

    @Test func aTLSClientAgainstAPlainCollectorIsToldItMaySpeakPlainTCP() async throws {
        let certificates = try TestCertificates()
        let message = try await flushError(useTLS: true, receiver: nil, caFile: certificates.caFile)
        #expect(message.contains("may speak plain TCP on this port"), "\(message)")
    }
}
