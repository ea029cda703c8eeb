/// A command-line failure: one line that says what is wrong and what to do, and the exit code.
public struct ToolError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var exitCode: Int32

    public init(_ message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }

    public var description: String { message }
}
