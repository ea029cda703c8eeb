/// A command-line failure: one line that says what is wrong and what to do, and the exit code.
///
/// Exit codes, the same for every command: 0 done; 1 it failed (the line says why: a file that can't be read,
/// a collector that can't be reached, events lost); 64 the command line is wrong (`EX_USAGE`, as
/// ArgumentParser's own usage errors); 130 interrupted (Ctrl-C).
package struct ToolError: Error, CustomStringConvertible, Sendable {
    package var message: String
    package var exitCode: Int32

    package init(_ message: String, exitCode: Int32 = ToolError.failure) {
        self.message = message
        self.exitCode = exitCode
    }

    /// The command line is wrong (a missing or contradictory option): exit 64, with a hint to `--help`.
    package static func usage(_ message: String) -> ToolError {
        ToolError(message, exitCode: usageFailure)
    }

    /// It failed: exit 1.
    package static let failure: Int32 = 1
    /// The command line is wrong: exit 64 (`EX_USAGE`).
    package static let usageFailure: Int32 = 64
    /// Interrupted: exit 130.
    package static let interrupted: Int32 = 130

    package var description: String { message }
}
