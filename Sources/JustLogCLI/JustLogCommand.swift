import ArgumentParser

/// `justlog`: the command-line tool of JustLog. Commands only parse their arguments and call the library.
@main
struct JustLogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "justlog",
        abstract: "Structured logging to console, rotating files and Logstash — the tool.",
        subcommands: [DemoCommand.self, BenchCommand.self, ReceiveCommand.self, ViewCommand.self, ShipCommand.self]
    )
}
