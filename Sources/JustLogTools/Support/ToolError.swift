/// A command-line failure: one line that says what is wrong and what to do, and the exit code.
///
/// Exit codes, the same for every command: 0 done; 1 it failed (the line says why: a file that can't be read,
/// a collector that can't be reached, events lost); 64 the command line is wrong (`EX_USAGE`, as
/// ArgumentParser's own usage errors); 130 interrupted (Ctrl-C).
public struct ToolError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var exitCode: Int32

    public init(_ message: String, exitCode: Int32 = ToolError.failure) {
        self.message = message
        self.exitCode = exitCode
    }

    /// The command line is wrong (a missing or contradictory option): exit 64, with a hint to `--help`.
    public static func usage(_ message: String) -> ToolError {
        ToolError(message, exitCode: usageFailure)
    }

    /// It failed: exit 1.
    public static let failure: Int32 = 1
    /// The command line is wrong: exit 64 (`EX_USAGE`).
    public static let usageFailure: Int32 = 64
    /// Interrupted: exit 130.
    public static let interrupted: Int32 = 130

    public var description: String { message }
}
