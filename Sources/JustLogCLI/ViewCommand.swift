import ArgumentParser
import JustLogCore
import JustLogTools

struct ViewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "view",
        abstract: "Read log files written by the file destination: filter, search, follow.",
        discussion: """
            Files are read in the order given: name rotated files oldest first. A line that can't be read back is reported on standard error as FILE:LINE: reason, and reading goes on. With -f the last file is followed like tail -F, through rotations, until Ctrl-C.

            Examples:
              justlog view app.log
              justlog view app.log.2 app.log.1 app.log --level warning --grep payment
              justlog view app.log --since 10m -f
              justlog view app.log --since "2024-05-01 12:00:00" --json | jq .userInfo
            """
    )

    @Argument(help: ArgumentHelp("Log files, oldest first.", valueName: "file"))
    var files: [String] = []

    @Option(help: "Show only this level and above: verbose, debug, info, warning or error.")
    var level: String?

    @Option(help: "Show only events whose message or userInfo values contain this text (ignoring case).")
    var grep: String?

    @Option(
        help: ArgumentHelp(
            "Show only events since a time: 2024-05-01T12:00:00Z, \"2024-05-01 12:00:00\" (local), or 10m, 2h, 1d ago.",
            valueName: "time"
        )
    )
    var since: String?

    @Flag(
        name: [.customShort("f"), .customLong("follow")],
        help: "Keep following the last file as it grows and rotates (Ctrl-C to stop)."
    )
    var follow = false

    @Flag(help: "Print each event's aggregated JSON, one per line, for piping.")
    var json = false

    func run() async throws {
        do {
            guard !files.isEmpty else {
                throw ToolError.usage("no log file given: name one or more files, such as app.log")
            }
            var minimumLevel = LogLevel.verbose
            if let level {
                guard let parsed = LogLevel(name: level) else {
                    throw ToolError.usage(
                        "--level \(level) is not a level: give verbose, debug, info, warning or error"
                    )
                }
                minimumLevel = parsed
            }
            let options = ViewTool.Options(
                files: files,
                minimumLevel: minimumLevel,
                grep: grep,
                since: try since.map { try ViewTool.parseSince($0) },
                follow: follow,
                json: json
            )
            _ = try await runCancellingOnSignals { try await ViewTool(options: options).run() }
        } catch let error as ToolError {
            throw exitReporting(error)
        }
    }
}
