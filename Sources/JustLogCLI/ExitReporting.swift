import ArgumentParser
import JustLogCore
import JustLogTools

/// Prints a ``ToolError``'s one line on standard error and returns the exit code to throw: every command
/// fails with one line that says what is wrong and what to do, never a stack trace.
func exitReporting(_ error: ToolError) -> ExitCode {
    let hint = error.exitCode == ToolError.usageFailure ? " (add --help for usage)" : ""
    TextOutput.standardError.write(Array("justlog: \(error.message)\(hint)\n".utf8))
    return ExitCode(error.exitCode)
}
