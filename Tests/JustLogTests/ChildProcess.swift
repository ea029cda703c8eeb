import Foundation
import JustLogCore
import JustLogTestSupport

/// A running `JustLogTestChild`, its stdout read line by line in the background (each line is the index
/// of an event whose log call returned), stopped on `deinit` if still running.
final class ChildProcess: @unchecked Sendable {
    private let process = Process()
    private let state = LockedValue(State())
    private let errors = Pipe()

    struct State {
        var last = -1
        var lines: [String] = []
        var buffer = Data()
        var stderr = Data()
        /// End of file seen on stdout and stderr: every line the child wrote has been read.
        var openPipes = 2
    }

    /// - Parameter unprivileged: run the child as user and group 65534 (nobody) when the tests run as root, as
    ///   a production program is not root (needs `setpriv`, util-linux); as another user it runs as that user.
    init(arguments: [String], unprivileged: Bool = false) throws {
        if unprivileged && geteuid() == 0 {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments =
                ["--reuid=65534", "--regid=65534", "--clear-groups", try childProgram().path] + arguments
        } else {
            process.executableURL = try childProgram()
            process.arguments = arguments
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let state = self.state
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                state.withLock { $0.openPipes -= 1 }
                return
            }
            state.withLock { state in
                state.buffer.append(data)
                while let newline = state.buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: state.buffer[state.buffer.startIndex..<newline], as: UTF8.self)
                    state.buffer.removeSubrange(state.buffer.startIndex...newline)
                    if let index = Int(line) { state.last = max(state.last, index) } else { state.lines.append(line) }
                }
            }
        }
        errors.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                state.withLock { $0.openPipes -= 1 }
                return
            }
            state.withLock { $0.stderr.append(data) }
        }
        try process.run()
    }

    deinit {
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// The highest event index the child reported as logged (its log call had returned).
    var lastAcknowledged: Int { state.current.last }
    var errorOutput: String { String(decoding: state.current.stderr, as: UTF8.self) }
    /// Lines of stdout that are not event indexes.
    var outputLines: [String] { state.current.lines }

    /// Waits (without blocking a thread of the test runner's small pool) until the child reported `count`.
    func waitForAcknowledged(atLeast count: Int, timeout: Duration) async -> Bool {
        await eventually(timeout: timeout) { lastAcknowledged >= count || !process.isRunning }
            && lastAcknowledged >= count
    }

    /// Sends `signal` (SIGCONT, SIGSTOP) to the child.
    func send(_ signal: Int32) {
        Foundation.kill(process.processIdentifier, signal)
    }

    /// Whether the child is stopped (by SIGSTOP): its state in `/proc/PID/stat` is `T`.
    var isStopped: Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return false }
        // "PID (name) STATE …": the state follows the name's closing parenthesis and a space.
        return stat[end...].dropFirst(2).first == "T"
    }

    /// SIGKILL, then wait for the process to be gone.
    func kill() async {
        Foundation.kill(process.processIdentifier, SIGKILL)
        _ = await eventually(timeout: .seconds(60)) { !process.isRunning }
        process.waitUntilExit()
        // Lines already in the pipe were written after a log call returned: read them to the end.
        await readToEnd()
    }

    /// Waits until both pipes reached end of file (the child and anything it started are gone).
    private func readToEnd() async {
        _ = await eventually(timeout: .seconds(60)) { state.current.openPipes == 0 }
    }

    /// The exit status, or `nil` (and the child killed) if it did not exit within `timeout`.
    func waitForExit(timeout: Duration) async -> Int32? {
        guard await eventually(timeout: timeout, { !process.isRunning }) else {
            await kill()
            return nil
        }
        process.waitUntilExit()
        await readToEnd()
        return process.terminationStatus
    }
}
