import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

/// One exit-code convention for every command (issue #10): 0 done, 1 failed, 64 the command line is wrong
/// (ArgumentParser's own usage errors and ours alike), each with one line on stderr.
@Suite struct ExitCodeTests {
    /// Runs the built `justlog` with `arguments`; returns its status and standard error.
    func justlog(_ arguments: [String]) async throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = try justlogProgram()
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let reader = errors.fileHandleForReading
        let data = await offThePool { reader.readDataToEndOfFile() }
        #expect(await eventually(timeout: .seconds(120)) { !process.isRunning })
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(arguments: [
        ["view"],  // our own check: no file
        ["view", "app.log", "--level", "loud"],  // our own check: a bad value
        ["ship", "app.log"],  // our own check: no collector
        ["ship", "a.log", "--host", "h", "--port", "1", "--plain", "--allow-untrusted"],
        ["receive", "--out", "x", "--pretty"],
        ["demo", "--events", "-1"],  // ArgumentParser validation
        ["view", "--bogus"],  // ArgumentParser parsing
    ])
    func aWrongCommandLineExits64WithOneLineAndAHint(arguments: [String]) async throws {
        let (status, stderr) = try await justlog(arguments)
        #expect(status == 64, "\(arguments): \(stderr)")
        let lines = stderr.split(separator: "\n")
        #expect(
            lines.count == 1 && stderr.hasPrefix("justlog: ") && stderr.contains("--help"),
            "\(arguments): \(stderr)"
        )
    }

    @Test func aFailureExits1WithOneLine() async throws {
        let (status, stderr) = try await justlog(["view", "/nonexistent/app.log"])
        #expect(status == 1, "\(stderr)")
        #expect(stderr.split(separator: "\n").count == 1 && stderr.hasPrefix("justlog: "), "\(stderr)")
    }
}
