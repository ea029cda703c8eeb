import Foundation

/// A syslog-ng started in the foreground for one test, with the configuration of PEERS.md: a plain and
/// a TLS `json_lines` listener on free 127.0.0.1 ports, raw lines to `received.jsonl` and JSON-parsed
/// `log_type<TAB>message` to `parsed.tsv`. Stopped by PID in ``shutdown()`` (and in `deinit`).
public final class SyslogNG: @unchecked Sendable {
    /// The syslog-ng binary, if installed.
    public static var executable: String? {
        ["/usr/sbin/syslog-ng", "/usr/bin/syslog-ng"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    public let directory: TemporaryDirectory
    public let plainPort: Int
    public let tlsPort: Int
    /// Both ports, held for the collector's whole life: it binds them with `SO_REUSEADDR`, and while it is down
    /// (killed, not yet started) no other test's server can be given them.
    private let heldPorts: [RefusingPort]
    private let serverCertificate: TestCertificates.Pair
    private let daemon: CollectorProcess

    /// A syslog-ng started with ``init(certificate:)`` and ``start()``: returns once both ports accept
    /// connections (or throws after 60 s).
    public static func started(certificate: TestCertificates.Pair) async throws -> SyslogNG {
        let syslog = try SyslogNG(certificate: certificate)
        try await syslog.start()
        return syslog
    }

    /// Writes the configuration for a syslog-ng serving `certificate` on the TLS port, not started yet (a
    /// collector that is down at first): ``start()`` starts it.
    public init(certificate: TestCertificates.Pair) throws {
        guard Self.executable != nil else {
            throw ProcessRunner.Failure(description: "syslog-ng is not installed (/usr/sbin/syslog-ng)")
        }
        directory = try TemporaryDirectory(prefix: "syslog-ng")
        heldPorts = try RefusingPort.make(count: 2)
        plainPort = heldPorts[0].port
        tlsPort = heldPorts[1].port
        serverCertificate = certificate
        let dir = directory.path
        // syslog-ng 3.38 often lingers on SIGTERM while it has client connections; its files are flushed per line.
        daemon = CollectorProcess(
            name: "syslog-ng",
            executable: Self.executable!,
            arguments: [
                "-F", "-e", "-f", "\(dir)/syslog-ng.conf", "-p", "\(dir)/syslog-ng.pid", "-c", "\(dir)/syslog-ng.ctl",
                "-R", "\(dir)/syslog-ng.persist",
            ],
            ports: [plainPort, tlsPort],
            logPath: directory.file("syslog-ng.log"),
            termGrace: .seconds(1)
        )
        try writeConfiguration()
    }

    deinit { shutdown() }

    public var receivedFile: String { directory.file("received.jsonl") }
    public var parsedFile: String { directory.file("parsed.tsv") }

    private func writeConfiguration() throws {
        let dir = directory.path
        let config = """
            @version: 3.38
            options { log-msg-size(1048576); stats-freq(0); keep-hostname(yes); chain-hostnames(no); create-dirs(yes); };
            source s_plain { network(ip("127.0.0.1") port(\(plainPort)) transport("tcp") flags(no-parse)
              max-connections(100) log-iw-size(100000) log-fetch-limit(1000)); };
            source s_tls { network(ip("127.0.0.1") port(\(tlsPort)) transport("tls") flags(no-parse)
              max-connections(100) log-iw-size(100000) log-fetch-limit(1000)
              tls(key-file("\(serverCertificate.key)") cert-file("\(serverCertificate.certificate)") peer-verify(optional-untrusted))); };
            destination d_raw { file("\(dir)/received.jsonl" template("${MSG}\\n") flush-lines(1) perm(0644)); };
            parser p_json { json-parser(prefix(".json.")); };
            destination d_parsed { file("\(dir)/parsed.tsv" template("${.json.log_type}\\t${.json.message}\\n") perm(0644)); };
            log { source(s_plain); source(s_tls); destination(d_raw); flags(flow-control); };
            log { source(s_plain); source(s_tls); parser(p_json); destination(d_parsed); flags(flow-control); };

            """
        try config.write(toFile: "\(dir)/syslog-ng.conf", atomically: true, encoding: .utf8)
    }

    /// Starts syslog-ng (again) on the same ports and waits until both accept, on a thread of its own (see
    /// ``CollectorProcess/startOffThePool()``).
    public func start() async throws { try await daemon.startOffThePool() }

    /// Sends `signal` to syslog-ng and, for a fatal one, waits until it is gone.
    public func kill(signal: Int32 = 9) { daemon.kill(signal: signal) }

    /// Kills syslog-ng (SIGKILL) and starts it again on the same ports.
    public func restart() async throws { try await daemon.restartOffThePool() }

    /// Stops syslog-ng by PID (SIGTERM, then SIGKILL after 1 s). Safe to call twice.
    public func shutdown() { daemon.shutdown() }

    /// Lines written to `received.jsonl` (each exactly as sent).
    public func receivedLines() -> [String] { lines(ofFileAt: receivedFile) }
    /// Lines of `parsed.tsv` (`log_type<TAB>message`), proving syslog-ng parsed the JSON.
    public func parsedLines() -> [String] { lines(ofFileAt: parsedFile) }
    /// How many whole lines `received.jsonl` has: cheap to poll (see ``completeLineCount(ofFileAt:)``).
    public func receivedLineCount() -> Int { completeLineCount(ofFileAt: receivedFile) }
    /// How many whole lines `parsed.tsv` has.
    public func parsedLineCount() -> Int { completeLineCount(ofFileAt: parsedFile) }
}
