import ArgumentParser
import JustLogTools

struct ShipCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ship",
        abstract: "Send log files written by the file destination to a Logstash collector, resumably.",
        discussion: """
            Each line is sent in the flattened form with its own event_id and @timestamp, through a disk spool (default ~/.cache/justlog/ship/<first file>-<hash>, one per set of files and collector). TLS with the system's CAs by default. The spool folder keeps checkpoints.json: run the same command again after an interruption and it continues where it stopped. Ctrl-C stops reading, sends what it can, saves the checkpoints and exits 130.

            Examples:
              justlog ship app.log.2 app.log.1 app.log --host logstash.example.com --port 5052
              justlog ship app.log --host 10.0.0.5 --port 5000 --plain
              justlog ship app.log --host logs.internal --port 5052 --ca-file private-ca.pem --spool /var/tmp/ship
            """
    )

    @Argument(help: ArgumentHelp("Log files, oldest first.", valueName: "file"))
    var files: [String] = []

    @Option(help: "The collector's host name or address.")
    var host: String?

    @Option(help: "The collector's json_lines TCP port.")
    var port: Int?

    @Flag(help: "Plain TCP instead of TLS.")
    var plain = false

    @Option(
        name: .customLong("ca-file"),
        help: ArgumentHelp("Trust the CA certificates in this PEM file instead of the system's.", valueName: "file")
    )
    var caFile: String?

    @Flag(
        name: .customLong("allow-untrusted"),
        help: "TLS without verifying the server certificate (anyone on the path can read the logs)."
    )
    var allowUntrusted = false

    @Option(help: ArgumentHelp("The spool folder (also holds the checkpoints).", valueName: "folder"))
    var spool: String?

    func run() async throws {
        do {
            guard !files.isEmpty else {
                throw ToolError.usage("no log file given: name one or more files, such as app.log")
            }
            guard let host, let port else { throw ToolError.usage("pass the collector with --host and --port") }
            if [plain, caFile != nil, allowUntrusted].filter({ $0 }).count > 1 {
                throw ToolError.usage("choose one of --plain, --ca-file and --allow-untrusted")
            }
            let options = ShipTool.Options(
                files: files,
                host: host,
                port: port,
                useTLS: !plain,
                caFile: caFile,
                allowUntrustedServer: allowUntrusted,
                spoolDirectory: spool
            )
            _ = try await runCancellingOnSignals { try await ShipTool(options: options).run() }
        } catch let error as ToolError {
            throw exitReporting(error)
        }
    }
}
