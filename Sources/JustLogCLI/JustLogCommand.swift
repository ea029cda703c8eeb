import ArgumentParser

/// `justlog`: the command-line tool of JustLog. Commands only parse their arguments and call the library.
/// The version `justlog --version` prints; kept equal to the newest heading of CHANGELOG.md.
enum JustLogVersion {
    static let current = "0.1.0-dev (unreleased)"
}

@main
struct JustLogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "justlog",
        abstract: "Structured logging to console, rotating files and Logstash — the tool.",
        version: "justlog \(JustLogVersion.current)",
        subcommands: [DemoCommand.self, BenchCommand.self, ReceiveCommand.self, ViewCommand.self, ShipCommand.self]
    )
}
