import ArgumentParser
import Foundation
import JustLogCore
import JustLogTools

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract:
            "Log a realistic scenario at every level through console, file and Logstash, and check nothing was lost.",
        discussion: """
            With no --host, the demo starts an embedded json_lines receiver on a free loopback port, so the whole
            path runs on this machine and every event is checked at the collector.

            Examples:
              justlog demo
              justlog demo --events 10000 --dir /tmp/justlog-demo
              justlog demo --host 127.0.0.1 --port 5000 --plain
              justlog demo --host logs.example.com --port 5052 --ca-file ca.pem
            """
    )

    @Option(name: .customLong("events"), help: "Events in the burst.")
    var events = 1000

    @Option(name: .customLong("dir"), help: "Folder for the log file and spool (default: a new temporary folder).")
    var directory: String?

    @Option(help: "A collector's host (default: the embedded receiver).")
    var host: String?

    @Option(help: "The collector's port (with --host).")
    var port: Int?

    @Flag(help: "Plain TCP instead of TLS (with --host).")
    var plain = false

    @Option(name: .customLong("ca-file"), help: "A PEM bundle of CA certificates to trust (with --host).")
    var caFile: String?

    @Flag(name: .customLong("allow-untrusted"), help: "TLS without certificate verification (with --host).")
    var allowUntrusted = false

    func validate() throws {
        guard events >= 0 else { throw ValidationError("--events must be 0 or more") }
        if host != nil, port == nil {
            throw ValidationError("--host needs --port, for example --host 127.0.0.1 --port 5000")
        }
        if host == nil, port != nil || plain || caFile != nil || allowUntrusted {
            throw ValidationError("--port, --plain, --ca-file and --allow-untrusted go with --host")
        }
        if let port, !(1...65535).contains(port) { throw ValidationError("--port must be between 1 and 65535") }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("cannot read the CA file \(caFile); give the path of a PEM bundle")
        }
    }

    func run() async throws {
        do {
            let collector = host.map {
                DemoScenario.Collector(
                    host: $0,
                    port: port ?? 0,
                    useTLS: !plain,
                    caFile: caFile,
                    allowUntrustedServer: allowUntrusted
                )
            }
            let scenario = DemoScenario(
                options: .init(
                    burst: events,
                    folder: directory.map { URL(fileURLWithPath: $0, isDirectory: true) },
                    collector: collector
                )
            )
            let report = try await scenario.run()
            TextOutput.standardOutput.write(Array(DemoScenario.summary(report).utf8))
            if !report.lostNothing { throw ExitCode(1) }
        } catch let error as ToolError {
            throw exitReporting(error)
        }
    }
}
