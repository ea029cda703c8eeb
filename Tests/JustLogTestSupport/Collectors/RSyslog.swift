import Foundation

/// An rsyslog started in the foreground for one test, with the configuration of PEERS.md (plain and TLS
/// `json_lines` inputs on free 127.0.0.1 ports, raw lines to `received.jsonl`). rsyslog conflicts with
/// syslog-ng in dpkg, so it is unpacked, not installed: from `JUSTLOG_RSYSLOG_ROOT` if set and not empty (a folder where
/// the `rsyslog` and `rsyslog-gnutls` debs were extracted), else with `apt-get download` + `dpkg-deb -x`
/// into a cache folder under the temporary folder. ``unavailableReason`` says why it can't run here.
public final class RSyslog: @unchecked Sendable {
    public let directory: TemporaryDirectory
    public let plainPort: Int
    public let tlsPort: Int
    /// Both ports, held for the collector's whole life: it binds them with `SO_REUSEADDR`, and while it is down
    /// (killed, not yet started) no other test's server can be given them.
    private let heldPorts: [RefusingPort]
    private let root: String
    private let daemon: CollectorProcess

    /// The extracted package root, unpacking it on first use; `nil` (see ``unavailableReason``) if that fails.
    public static let packageRoot: Result<String, ProcessRunner.Failure> = {
        let environment = ProcessInfo.processInfo.environment
        // An empty value is no value: it would make the root the working directory's "".
        let given = environment["JUSTLOG_RSYSLOG_ROOT"].flatMap { $0.isEmpty ? nil : $0 }
        let root = given ?? NSTemporaryDirectory() + "/justlog-rsyslog-root"
        let daemon = root + "/usr/sbin/rsyslogd"
        if !FileManager.default.isExecutableFile(atPath: daemon) {
            do {
                try FileManager.default.createDirectory(atPath: root + ".debs", withIntermediateDirectories: true)
                try ProcessRunner.run(
                    "/usr/bin/apt-get",
                    ["download", "rsyslog", "rsyslog-gnutls"],
                    in: root + ".debs"
                )
                for deb in try FileManager.default.contentsOfDirectory(atPath: root + ".debs")
                where deb.hasSuffix(".deb") {
                    try ProcessRunner.run("/usr/bin/dpkg-deb", ["-x", root + ".debs/" + deb, root])
                }
            } catch {
                return .failure(ProcessRunner.Failure(description: "can't unpack rsyslog: \(error)"))
            }
        }
        do {
            try ProcessRunner.run(daemon, ["-v"])
        } catch {
            return .failure(
                ProcessRunner.Failure(
                    description: "rsyslogd can't run (missing libestr0/libfastjson4/liblognorm5?): \(error)"
                )
            )
        }
        return .success(root)
    }()

    /// `nil` if rsyslog can run here, else why not.
    public static var unavailableReason: String? {
        if case .failure(let failure) = packageRoot { return failure.description }
        return nil
    }

    /// An rsyslog started with ``init(certificate:caFile:)`` and ``start()``: returns once both ports accept.
    public static func started(certificate: TestCertificates.Pair, caFile: String) async throws -> RSyslog {
        let rsyslog = try RSyslog(certificate: certificate, caFile: caFile)
        try await rsyslog.start()
        return rsyslog
    }

    /// Writes the configuration for an rsyslog serving `certificate` (signed by `caFile`) on the TLS port, not
    /// started yet: ``start()`` starts it.
    public init(certificate: TestCertificates.Pair, caFile: String) throws {
        root = try Self.packageRoot.get()
        directory = try TemporaryDirectory(prefix: "rsyslog")
        heldPorts = try RefusingPort.make(count: 2)
        plainPort = heldPorts[0].port
        tlsPort = heldPorts[1].port
        let dir = directory.path
        try FileManager.default.createDirectory(atPath: dir + "/work", withIntermediateDirectories: true)
        let config = """
            global(workDirectory="\(dir)/work" maxMessageSize="1m" parser.escapeControlCharactersOnReceive="off"
              defaultNetstreamDriverCAFile="\(caFile)" defaultNetstreamDriverCertFile="\(certificate.certificate)"
              defaultNetstreamDriverKeyFile="\(certificate.key)")
            main_queue(queue.workerThreads="1")
            module(load="imtcp" maxSessions="200")
            input(type="imtcp" address="127.0.0.1" port="\(plainPort)" ruleset="json" supportOctetCountedFraming="off")
            input(type="imtcp" address="127.0.0.1" port="\(tlsPort)" ruleset="json" supportOctetCountedFraming="off"
                  streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon" gnutlsPriorityString="NORMAL")
            template(name="raw" type="string" string="%rawmsg%\\n")
            ruleset(name="json") { action(type="omfile" file="\(dir)/received.jsonl" template="raw") }

            """
        try config.write(toFile: dir + "/rsyslog.conf", atomically: true, encoding: .utf8)
        daemon = CollectorProcess(
            name: "rsyslogd",
            executable: root + "/usr/sbin/rsyslogd",
            arguments: [
                "-n", "-f", dir + "/rsyslog.conf", "-i", dir + "/rsyslog.pid", "-M",
                root + "/usr/lib/x86_64-linux-gnu/rsyslog",
            ],
            ports: [plainPort, tlsPort],
            logPath: directory.file("rsyslog.log"),
            termGrace: .seconds(2)
        )
    }

    deinit { shutdown() }

    /// Starts rsyslogd (again) on the same ports and waits until both accept, on a thread of its own (see
    /// ``CollectorProcess/startOffThePool()``).
    public func start() async throws { try await daemon.startOffThePool() }

    /// Sends `signal` (default SIGKILL) and, for SIGKILL/SIGTERM, waits until rsyslogd is gone.
    public func kill(signal: Int32 = 9) { daemon.kill(signal: signal) }

    /// Kills rsyslogd and starts it again on the same ports.
    public func restart() async throws { try await daemon.restartOffThePool() }

    /// Stops rsyslogd by PID (SIGTERM, SIGKILL after 2 s). Safe to call twice.
    public func shutdown() { daemon.shutdown() }

    /// How many whole lines `received.jsonl` has: cheap to poll (see ``completeLineCount(ofFileAt:)``).
    public func receivedLineCount() -> Int { completeLineCount(ofFileAt: directory.file("received.jsonl")) }

    /// Lines of `received.jsonl`, each as sent (rsyslog keeps a trailing `\r`).
    public func receivedLines() -> [String] { lines(ofFileAt: directory.file("received.jsonl")) }
}
