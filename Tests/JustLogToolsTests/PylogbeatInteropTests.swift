import Foundation
import JustLogReceivers
import JustLogTestSupport
import Testing

// Not in .ci/run's unprivileged list: pylogbeat is installed for root (under /root/.pyenv here), out of reach of
// uid 65534.

/// Our receiver against an independent Beats client: pylogbeat (PyPI), which sends windows of zlib-compressed
/// JSON frames and raises unless the ACK covers the whole window.
@Suite(
    .serialized,
    .enabled(
        if: Collectors.pylogbeatAvailable || Collectors.required,
        "pylogbeat not installed (pip install pylogbeat); set JUSTLOG_REQUIRE_COLLECTORS=1 to fail instead"
    )
)
struct PylogbeatInteropTests {
    @Test(arguments: [false, true])
    func pylogbeatSendsThroughOurReceiverAndEveryEventArrives(tls: Bool) async throws {
        guard Collectors.requirePylogbeat() else { return }
        let certificates = tls ? try await TestCertificates.make() : nil
        let tally = EventIDTally()
        let receiver = BeatsReceiver(
            configuration: .init(
                tls: certificates.map { .init(certificateFile: $0.goodServer.certificate, keyFile: $0.goodServer.key) }
            ),
            handler: tally.record
        )
        let port = try await receiver.start()
        let windows = 20
        let perWindow = 500
        let script = """
            import sys
            from pylogbeat import PyLogBeatClient
            tls = sys.argv[2] == "tls"
            with PyLogBeatClient("127.0.0.1", int(sys.argv[1]), ssl_enable=tls, ssl_verify=tls, ca_certs=(sys.argv[3] if tls else None), timeout=30) as client:
                for w in range(\(windows)):
                    client.send([{"message": "py %d" % (w * \(perWindow) + i), "event_id": "py%d" % (w * \(perWindow) + i), "log_type": "info"} for i in range(\(perWindow))])
            print("sent")
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, "\(port)", tls ? "tls" : "plain", certificates?.caFile ?? ""]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let exited = await eventually(timeout: .seconds(60)) { !process.isRunning }
        if !exited { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        await receiver.stop()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "pylogbeat failed: \(stderr)")
        #expect(tally.snapshot.uniqueEventIDs == windows * perWindow)
        #expect(tally.snapshot.duplicates == 0 && tally.snapshot.invalid == 0)
        #expect(receiver.counters.windows == windows)
        #expect(receiver.counters.acknowledged == windows * perWindow)
    }
}
