import ArgumentParser
import Foundation
import JustLogCore
import JustLogTools

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Log a realistic scenario at every level and check that nothing was lost.",
        discussion: """
            Example:
              justlog demo
              justlog demo --events 10000 --dir /tmp/justlog-demo
            """
    )

    @Option(name: .customLong("events"), help: "Events in the burst.")
    var events = 1000

    @Option(name: .customLong("dir"), help: "Folder for the log file (default: a new temporary folder).")
    var directory: String?

    func run() async throws {
        guard events >= 0 else { throw ValidationError("--events must be 0 or more") }
        do {
            let scenario = DemoScenario(options: .init(burst: events, folder: directory.map { URL(fileURLWithPath: $0, isDirectory: true) }))
            let report = try await scenario.run()
            TextOutput.standardOutput.write(Array(DemoScenario.summary(report).utf8))
            if !report.lostNothing { throw ExitCode(1) }
        } catch let error as ToolError {
            throw exitReporting(error)
        }
    }
}

/// Prints a ``ToolError``'s one line on standard error and returns the exit code to throw.
func exitReporting(_ error: ToolError) -> ExitCode {
    TextOutput.standardError.write(Array("justlog: \(error.message)\n".utf8))
    return ExitCode(error.exitCode)
}
