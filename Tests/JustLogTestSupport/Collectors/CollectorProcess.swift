import Foundation
import JustLogCore

/// A collector daemon that a test runs in the foreground on fixed loopback ports: started and polled until
/// every port accepts, killed (to simulate a crash) or stopped by PID, restarted on the same ports. Its
/// output goes to a log file, quoted when it fails to start.
final class CollectorProcess: @unchecked Sendable {
    let name: String
    let executable: String
    let arguments: [String]
    let ports: [Int]
    let logPath: String
    /// How long a SIGTERM may take before SIGKILL.
    let termGrace: Duration
    private let lock = NSLock()
    private var process: Process?

    init(name: String, executable: String, arguments: [String], ports: [Int], logPath: String, termGrace: Duration) {
        self.name = name
        self.executable = executable
        self.arguments = arguments
        self.ports = ports
        self.logPath = logPath
        self.termGrace = termGrace
    }

    deinit { shutdown() }

    /// Starts the daemon and waits (at most 60 s: a loaded machine may take long) until every port accepts connections.
    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let log = FileHandle(forWritingAtPath: logPath)
        log?.seekToEndOfFile()
        process.standardOutput = log
        process.standardError = log
        // The slot taken before the daemon runs: two starts at once can't both pass.
        let running = lock.withLock { () -> Process? in
            // (Not launched yet — another start's — counts as running.)
            if let running = self.process, running.processIdentifier == 0 || running.isRunning { return running }
            self.process = process
            return nil
        }
        if let running {
            throw ProcessRunner.Failure(description: "\(name) is already running (PID \(running.processIdentifier))")
        }
        do {
            try process.run()
        } catch {
            lock.withLock { if self.process === process { self.process = nil } }
            throw error
        }
        // A daemon that exits (a bind error, a bad configuration) ends the wait at once.
        let ready =
            FreePort.poll(timeout: .seconds(60)) { !process.isRunning || ports.allSatisfy(FreePort.isAccepting) }
            && process.isRunning
        guard ready else {
            shutdown()
            let output = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw ProcessRunner.Failure(
                description:
                    "\(name) did not start accepting on \(ports.map(String.init).joined(separator: "/")): \(output)"
            )
        }
    }

    /// ``start()`` on a thread of its own: its wait polls with sleeps, which on the test pool (two threads here)
    /// would hold one of them for as long as the daemon takes to start.
    func startOffThePool() async throws {
        try await offThePool { Result { try self.start() } }.get()
    }

    /// Kills the daemon (SIGKILL, waiting until it is gone) and starts it again on the same ports, both on threads
    /// of their own (see ``startOffThePool()``).
    func restartOffThePool() async throws {
        await offThePool { self.kill(signal: SIGKILL) }
        try await startOffThePool()
    }

    /// Sends `signal` and, for SIGKILL or SIGTERM, waits until the process is gone.
    func kill(signal: Int32) {
        guard let process = lock.withLock({ self.process }) else { return }
        Foundation.kill(process.processIdentifier, signal)
        if signal == SIGKILL || signal == SIGTERM {
            process.waitUntilExit()
            lock.withLock { self.process = nil }
        }
    }

    /// Stops the daemon by PID: SIGTERM at once, then SIGKILL after ``termGrace``. Safe to call twice.
    ///
    /// Returns once SIGTERM is sent: the wait for the daemon to go runs on a thread of its own (see ``Reaper``).
    /// Tests call this in a `defer`, which can't await, on the test pool (two threads here): waiting there held one
    /// of them for up to ``termGrace`` per collector, and the other suites' tasks waited behind it.
    func shutdown() {
        guard
            let process = lock.withLock({ () -> Process? in
                defer { self.process = nil }
                return self.process
            }), process.isRunning
        else { return }
        Foundation.kill(process.processIdentifier, SIGTERM)
        Reaper.shared.reap(process, grace: termGrace)
    }
}

/// Waits for stopped collector daemons on threads of their own: SIGKILL for one still running after its grace,
/// then the wait for its exit. The test process waits for every one at exit (at most ``exitPatience``), so no
/// daemon outlives the tests.
final class Reaper: @unchecked Sendable {
    static let shared = Reaper()

    /// How long the process's exit waits for daemons still being stopped.
    static let exitPatience: Duration = .seconds(15)

    private let condition = NSCondition()
    private var pending = 0  // under `condition`

    private init() {
        atexit { Reaper.shared.waitForAll() }
    }

    /// Sends SIGKILL to `process` if it is still running after `grace`, and waits for it to exit; returns at once.
    func reap(_ process: Process, grace: Duration) {
        condition.withLock { pending += 1 }
        let thread = Thread { [self] in
            if !FreePort.poll(timeout: grace, { !process.isRunning }) {
                Foundation.kill(process.processIdentifier, SIGKILL)
            }
            process.waitUntilExit()
            condition.withLock {
                pending -= 1
                condition.broadcast()
            }
        }
        thread.name = "collector reaper"
        thread.start()
    }

    private func waitForAll() {
        let deadline = Date(timeIntervalSinceNow: Double(Self.exitPatience.components.seconds))
        condition.withLock {
            while pending > 0, condition.wait(until: deadline) {}
        }
    }
}
