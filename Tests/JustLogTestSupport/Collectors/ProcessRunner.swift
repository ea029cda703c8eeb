import Foundation

/// Runs a command to completion and returns its combined output; throws if it exits non-zero.
public enum ProcessRunner {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], in directory: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: output, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw Failure(
                description:
                    "\(executable) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(text)"
            )
        }
        return text
    }
}
