import Foundation
import JustLogLogstash
import JustLogTestSupport
import Testing

@Suite(.serialized, .enabled(if: Collectors.syslogNGAvailable || Collectors.required))
struct RSyslogTests {
    @Test(arguments: [false, true])
    func recordsArriveAtRSyslogOverPlainTCPAndTLS(useTLS: Bool) async throws {
        if let reason = RSyslog.unavailableReason {
            if Collectors.required {
                Issue.record("JUSTLOG_REQUIRE_COLLECTORS=1 but rsyslog can't run: \(reason)")
            } else {
                print("skipping rsyslog test: \(reason)")
            }
            return
        }
        let certificates = try await TestCertificates.make()
        let rsyslog = try await RSyslog.started(certificate: certificates.goodServer, caFile: certificates.caFile)
        defer { rsyslog.shutdown() }
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(
            port: useTLS ? rsyslog.tlsPort : rsyslog.plainPort,
            directory: directory,
            activity: activity
        ) {
            $0.useTLS = useTLS
            $0.caFile = certificates.caFile
        }
        client.start()
        let total = 10_000
        for index in 0..<total { try client.spool.append(jsonRecord(index)) }
        try await client.flush()
        await client.shutdown()
        let expected = (0..<total).map { String(decoding: jsonRecord($0), as: UTF8.self) }
        #expect(await eventually(timeout: .seconds(120)) { rsyslog.receivedLineCount() >= total })
        #expect(rsyslog.receivedLines().map { $0.hasSuffix("\r") ? String($0.dropLast()) : $0 } == expected)
    }
}
