import Foundation
import JustLogLogstash
import JustLogTestSupport
import Testing

/// A TLS client to syslog-ng's TLS port.
private func tlsClient(
    _ syslog: SyslogNG,
    _ directory: TemporaryDirectory,
    _ activity: ActivityLog,
    change: (inout LogstashClient.Configuration) -> Void
) throws -> LogstashClient {
    try makeClient(port: syslog.tlsPort, directory: directory, activity: activity) { configuration in
        configuration.useTLS = true
        change(&configuration)
    }
}

@Suite(
    .serialized,
    .enabled(
        if: Collectors.syslogNGAvailable || Collectors.required,
        "syslog-ng or openssl not installed; set JUSTLOG_REQUIRE_COLLECTORS=1 to fail instead"
    )
)
struct SyslogNGTests {
    @Test func tlsWithTheTestCAIsAcceptedAndSyslogNGParsesTheLines() async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try tlsClient(syslog, directory, activity) { $0.caFile = certificates.caFile }
        client.start()
        for index in 0..<100 { try client.spool.append(jsonRecord(index)) }
        try await client.flush()
        await client.shutdown()
        #expect(await eventually { syslog.parsedLineCount() >= 100 })
        #expect(syslog.receivedLines() == (0..<100).map { String(decoding: jsonRecord($0), as: UTF8.self) })
        #expect(syslog.parsedLines().first == "info\tm0")
        #expect(activity.contains("TLS handshake done"))
    }

    @Test(arguments: ["selfsigned", "wronghost", "expired", "system-roots"])
    func badCertificatesAreRefusedByDefault(kind: String) async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let served: TestCertificates.Pair =
            switch kind {
            case "selfsigned": certificates.selfSigned
            case "wronghost": certificates.wrongHost
            case "expired": certificates.expired
            default: certificates.goodServer
            }
        let syslog = try await SyslogNG.started(certificate: served)
        defer { syslog.shutdown() }
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try tlsClient(syslog, directory, activity) { configuration in
            // "system-roots": a good certificate from a CA the system does not trust.
            if kind != "system-roots" { configuration.caFile = certificates.caFile }
        }
        client.start()
        try client.spool.append(jsonRecord(1))
        #expect(await activity.wait(for: "was refused"))
        await #expect(throws: LogstashError.self) { try await client.flush() }
        await client.shutdown()
        #expect(syslog.receivedLines().isEmpty)
        #expect(client.spool.counterSnapshot.queuedRecords == 1)
        print("[\(kind)] " + (activity.lines.first { $0.contains("refused") } ?? ""))
    }

    @Test func allowUntrustedServerAcceptsASelfSignedCertificateOverTLSAndWarns() async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.selfSigned)
        defer { syslog.shutdown() }
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try tlsClient(syslog, directory, activity) { $0.allowUntrustedServer = true }
        client.start()
        try client.spool.append(jsonRecord(1))
        try await client.flush()
        await client.shutdown()
        #expect(await eventually { syslog.receivedLineCount() == 1 })
        #expect(activity.lines.filter { $0.hasPrefix("WARNING") && $0.contains("NOT verified") }.count == 1)
        #expect(activity.contains("TLS handshake done"))
    }

    /// Pinned keys accept a match and refuse a mismatch — after the certificate's verification, and with it off
    /// (`allowUntrustedServer`, a self-signed collector) instead of it: there they were ignored, and any
    /// certificate accepted.
    @Test(arguments: [false, true], [true, false])
    func pinnedPublicKeysAcceptAMatchAndRefuseAMismatch(allowUntrusted: Bool, matching: Bool) async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let served = allowUntrusted ? certificates.selfSigned : certificates.goodServer
        let other = allowUntrusted ? certificates.goodServer : certificates.selfSigned
        let syslog = try await SyslogNG.started(certificate: served)
        defer { syslog.shutdown() }
        let pin = try certificates.spkiSHA256(of: matching ? served.certificate : other.certificate)
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try tlsClient(syslog, directory, activity) {
            if allowUntrusted { $0.allowUntrustedServer = true } else { $0.caFile = certificates.caFile }
            $0.pinnedSPKISHA256 = [pin]
        }
        client.start()
        try client.spool.append(jsonRecord(1))
        if matching {
            try await client.flush()
            #expect(await eventually { syslog.receivedLineCount() == 1 })
        } else {
            #expect(await activity.wait(for: "pin mismatch"))
            await #expect(throws: LogstashError.self) { try await client.flush() }
            #expect(syslog.receivedLines().isEmpty)
        }
        await client.shutdown()
        if allowUntrusted {
            #expect(activity.lines.contains { $0.hasPrefix("WARNING") && $0.contains("only against the pinned") })
        }
    }

    @Test(arguments: [false, true])
    func hundredThousandRecordsAllArriveAndAreParsed(useTLS: Bool) async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(
            port: useTLS ? syslog.tlsPort : syslog.plainPort,
            directory: directory,
            activity: activity
        ) {
            $0.useTLS = useTLS
            $0.caFile = certificates.caFile
        }
        client.start()
        let total = 100_000
        let clock = ContinuousClock()
        let start = clock.now
        for index in 0..<total {
            try client.spool.append(jsonRecord(index))
            client.recordsAppended()
        }
        try await client.flush()
        await client.shutdown()
        #expect(await eventually { syslog.parsedLineCount() >= total })
        print("100k records \(useTLS ? "TLS" : "plain"): \(clock.now - start) until all parsed by syslog-ng")
        let received = syslog.receivedLines()
        #expect(received.count == total)
        #expect(Set(received).count == total)
        #expect(syslog.parsedLines().count == total)
    }

    @Test func everyRecordArrivesAtLeastOnceWhileSyslogNGIsKilledAndRestartedFiveTimes() async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(port: syslog.plainPort, directory: directory, activity: activity) {
            $0.sendInterval = .milliseconds(50)
            $0.backoffMinimum = .milliseconds(20)
            $0.backoffMaximum = .milliseconds(200)
            $0.maxBatchRecords = 200
        }
        client.start()
        let total = 100_000
        let chunk = total / 6
        var next = 0
        for round in 0..<6 {
            let end = round == 5 ? total : next + chunk
            for index in next..<end {
                try client.spool.append(jsonRecord(index))
                client.recordsAppended()
            }
            next = end
            if round < 5 {
                // Let some of it flow, then kill syslog-ng mid-stream and bring it back on the same ports.
                let before = syslog.receivedLineCount()
                _ = await eventually(timeout: .seconds(60)) { syslog.receivedLineCount() > before + 1000 }
                try await syslog.restart()
            }
        }
        let expected = jsonLines(0..<total)
        // Read as the file grows: each poll takes only the lines that arrived since the last.
        let arrivedFile = GrowingFile(syslog.receivedFile)
        var arrived = Set<String>()
        let allArrived = await eventually {
            arrived.formUnion(arrivedFile.newLines())
            return arrived.count >= expected.count && arrived.isSuperset(of: expected)
        }
        _ = try? await client.flush()
        await client.shutdown()
        let received = syslog.receivedLines()
        let missing = expected.subtracting(received)
        #expect(allArrived)
        #expect(missing.isEmpty, "missing \(missing.count) records, e.g. \(missing.prefix(3))")
        let counters = await client.counters()
        print(
            "kill/restart x5: received \(received.count) lines for \(total) records, \(received.count - Set(received).count) duplicates; resent \(counters.resent), connects \(counters.connects), connection errors \(counters.connectionErrors)"
        )
    }

    @Test func theSpoolDrainsWhenSyslogNGStartsAfterTheClient() async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        syslog.kill(signal: SIGKILL)
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(port: syslog.plainPort, directory: directory, activity: activity)
        client.start()
        for index in 0..<1000 { try client.spool.append(jsonRecord(index)) }
        #expect(await activity.wait(for: "reconnecting in"))
        try await syslog.start()
        #expect(await eventually { syslog.receivedLineCount() >= 1000 })
        await client.shutdown()
        #expect(Set(syslog.receivedLines()).count == 1000)
    }
}
