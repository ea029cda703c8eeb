import ArgumentParser
import Foundation
import JustLogTools

struct ReceiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract: "Receive Logstash json_lines or Beats (TCP or TLS) and print the events, for local development.",
        discussion: """
            Speaks json_lines (Logstash's tcp input) unless --protocol beats: then Lumberjack v2 (Logstash's beats input), acknowledging each event only once it is printed or written to --out.

            Listens on 127.0.0.1 only unless --host says otherwise. Events go to standard output, one readable line each; status lines and invalid lines ("connection N line M: reason") go to standard error. Ctrl-C prints how many events arrived and exits 0.

            Examples:
              justlog receive --port 5000
              justlog receive --port 5052 --tls-cert server.pem --tls-key server.key
              justlog receive --port 5000 --out received.jsonl
              justlog receive --protocol beats --port 5044 --out received.jsonl
            """
    )

    @Option(name: .customLong("protocol"), help: ArgumentHelp("json_lines or beats.", valueName: "protocol"))
    var wireProtocol = "json_lines"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 5000

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(
        name: .customLong("tls-cert"),
        help: ArgumentHelp("Serve TLS with this PEM certificate.", valueName: "file")
    )
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"))
    var tlsKey: String?

    @Option(
        help: ArgumentHelp("Append each raw line to this file (created 0600) instead of printing.", valueName: "file")
    )
    var out: String?

    @Flag(help: "Print each event as one readable, colored line instead of its raw JSON line.")
    var pretty = false

    func validate() throws {
        guard ReceiveTool.Options.WireProtocol(rawValue: wireProtocol.replacingOccurrences(of: "-", with: "_")) != nil
        else {
            throw ValidationError("--protocol \(wireProtocol): give json_lines or beats")
        }
    }

    func run() async throws {
        var settings = ReceiveTool.Options(
            host: host,
            port: port,
            tlsCertificateFile: tlsCertificate,
            tlsKeyFile: tlsKey,
            outFile: out,
            pretty: pretty
        )
        settings.wireProtocol =
            ReceiveTool.Options.WireProtocol(rawValue: wireProtocol.replacingOccurrences(of: "-", with: "_"))
            ?? .jsonLines
        let options = settings
        do {
            _ = try await runCancellingOnSignals { try await ReceiveTool(options: options).run() }
        } catch let error as ToolError {
            throw exitReporting(error)
        }
    }
}
