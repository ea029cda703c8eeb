public import Foundation
import JustLog
public import JustLogCore

/// What `justlog demo` does: logs a realistic scenario at every level — a sign-in, a slow call, an error
/// with a chain of underlying errors, a burst — through console, file and Logstash destinations, then
/// checks that every event arrived and prints a summary.
public struct DemoScenario: Sendable {
    /// How the demo runs.
    public struct Options: Sendable {
        /// Events in the burst. Default 1000.
        public var burst: Int
        /// The folder of the log file and spool. Default: a new temporary folder.
        public var folder: URL?
        /// Where the console destination and the summary go.
        public var output: TextOutput
        /// Where JustLog's own diagnostics go.
        public var diagnostics: DiagnosticSink

        public init(burst: Int = 1000, folder: URL? = nil, output: TextOutput = .standardOutput, diagnostics: DiagnosticSink = .standardError) {
            self.burst = burst
            self.folder = folder
            self.output = output
            self.diagnostics = diagnostics
        }
    }

    /// What the demo found.
    public struct Report: Sendable {
        public var loggedPerLevel: [LogLevel: Int] = [:]
        public var fileURL: URL
        public var fileBytes: Int = 0
        public var fileEvents: Int = 0
        public var missingFromFile: Int = 0
        public var elapsed: Double = 0
        public var logged: Int { loggedPerLevel.values.reduce(0, +) }
        /// Whether every event reached every destination that should have it.
        public var lostNothing: Bool { missingFromFile == 0 }
    }

    public var options: Options

    public init(options: Options) {
        self.options = options
    }

    /// Runs the scenario; throws a one-line ``ToolError`` when the folder cannot be used.
    public func run() async throws -> Report {
        let folder = options.folder ?? URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            .appendingPathComponent("justlog-demo-\(UUID().uuidString.prefix(8).lowercased())", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw ToolError("cannot use \(folder.path) for the demo's files: \(error.localizedDescription); pass --dir with a writable folder")
        }
        let fileURL = folder.appendingPathComponent("justlog-demo.log")
        try? FileManager.default.removeItem(at: fileURL)

        let logger = Logger(configuration: .init(
            console: .init(.init(output: options.output), minimumLevel: .info),
            file: .init(url: fileURL, minimumLevel: .verbose),
            defaultUserInfo: ["app": "justlog-demo", "environment": "demo", "tenant": "UK", "sessionID": .string(UUID().uuidString)],
            diagnostics: options.diagnostics
        ))
        var report = Report(fileURL: fileURL)
        let start = Date()
        func log(_ level: LogLevel, _ message: String, error: (any Error)? = nil, userInfo: [String: Any]? = nil) {
            logger.log(level, message, error: error, userInfo: userInfo)
            report.loggedPerLevel[level, default: 0] += 1
        }

        log(.verbose, "demo starting", userInfo: ["pid": ProcessInfo.processInfo.processIdentifier])
        log(.debug, "configuration loaded", userInfo: ["destinations": ["console", "file"], "burst": options.burst])
        log(.info, "user signed in", userInfo: ["user": ["id": 42, "tier": "gold"], "method": "password"])
        log(.warning, "payment service is slow", userInfo: ["latency_ms": 2350.5, "threshold_ms": 1000])
        log(.error, "checkout failed", error: DemoErrors.checkoutFailure(), userInfo: ["order_id": "o-1017", "amount": 23.4])
        for index in 0..<options.burst {
            log(.debug, "burst event \(index)", userInfo: ["index": index])
        }
        log(.info, "demo finished logging")

        if let error = logger.shutdown(timeout: 30) {
            options.diagnostics.report("flushing the demo logger: \(error)")
        }
        report.elapsed = Date().timeIntervalSince(start)

        let lines = (try? String(contentsOf: fileURL, encoding: .utf8))?.split(separator: "\n") ?? []
        report.fileEvents = lines.count
        report.fileBytes = (try? FileManager.default.attributesOfItem(atPath: fileURL.path)[.size] as? Int) ?? 0
        report.missingFromFile = max(0, report.logged - lines.count)
        return report
    }

    /// The summary table printed at the end of the demo.
    public static func summary(_ report: Report) -> String {
        var table = Table(headers: ["", "events"])
        for level in LogLevel.allCases {
            table.add(["\(level.emoji) \(level.label)", "\(report.loggedPerLevel[level] ?? 0)"])
        }
        table.add(["logged", "\(report.logged)"])
        table.add(["in the file", "\(report.fileEvents)"])
        let rate = report.elapsed > 0 ? Double(report.logged) / report.elapsed : 0
        var text = "\n" + table.text
        text += "file: \(report.fileURL.path) (\(report.fileBytes) bytes)\n"
        text += "time: \(String(format: "%.3f", report.elapsed)) s, \(Int(rate)) events/s\n"
        text += report.lostNothing ? "result: nothing lost\n" : "result: \(report.missingFromFile) event(s) missing from the file\n"
        return text
    }
}

/// The error chain of the demo: an NSError whose underlying error is a Swift error with its own cause.
enum DemoErrors {
    struct PaymentGatewayError: LocalizedError {
        let underlyingError: any Error
        var errorDescription: String? { "The payment gateway did not answer." }
        var recoverySuggestion: String? { "Retry in a few seconds." }
    }

    static func checkoutFailure() -> NSError {
        let network = URLError(.timedOut)
        let gateway = PaymentGatewayError(underlyingError: network)
        return NSError(domain: "com.just-eat.checkout", code: 1017, userInfo: [
            NSLocalizedDescriptionKey: "The order could not be placed.",
            NSLocalizedFailureReasonErrorKey: "The payment was not confirmed.",
            NSUnderlyingErrorKey: gateway,
        ])
    }
}
