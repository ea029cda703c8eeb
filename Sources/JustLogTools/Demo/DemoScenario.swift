package import Foundation
import JustLog
package import JustLogCore
import JustLogLogstash
import JustLogReceivers

/// What `justlog demo` does: logs a realistic scenario at every level — a sign-in, a slow call, an error
/// with a chain of underlying errors, a burst — through the console, file and Logstash destinations, then
/// checks that every event reached the file and the collector, and prints a summary.
///
/// With no collector given, the demo starts an embedded `json_lines` receiver on a free loopback port, so the
/// whole path — spool, connection, collector — runs on one machine and can be checked event by event.
package struct DemoScenario: Sendable {
    /// How the demo runs.
    package struct Options: Sendable {
        /// Events in the burst. Default 1000.
        package var burst: Int
        /// The folder of the log file and spool. Default: a new temporary folder.
        package var folder: URL?
        /// An external collector; `nil` (the default) starts the embedded receiver.
        package var collector: Collector?
        /// Where the console destination, socket activity and the summary go.
        package var output: TextOutput
        /// Where JustLog's own diagnostics go.
        package var diagnostics: DiagnosticSink

        package init(
            burst: Int = 1000,
            folder: URL? = nil,
            collector: Collector? = nil,
            output: TextOutput = .standardOutput,
            diagnostics: DiagnosticSink = .standardError
        ) {
            self.burst = burst
            self.folder = folder
            self.collector = collector
            self.output = output
            self.diagnostics = diagnostics
        }
    }

    /// An external collector to send to.
    package struct Collector: Sendable {
        package var host: String
        package var port: Int
        package var useTLS: Bool
        package var caFile: String?
        package var allowUntrustedServer: Bool

        package init(
            host: String,
            port: Int,
            useTLS: Bool = true,
            caFile: String? = nil,
            allowUntrustedServer: Bool = false
        ) {
            self.host = host
            self.port = port
            self.useTLS = useTLS
            self.caFile = caFile
            self.allowUntrustedServer = allowUntrustedServer
        }
    }

    /// What the demo found.
    package struct Report: Sendable {
        package var loggedPerLevel: [LogLevel: Int] = [:]
        package var fileURL: URL
        package var fileBytes = 0
        /// Files the log file rotated into during the run (counted in ``fileEvents`` and ``fileBytes``).
        package var rotatedFiles = 0
        package var fileEvents = 0
        package var missingFromFile = 0
        /// `host:port` of the collector, and whether it was the embedded one.
        package var collector = ""
        package var embeddedCollector = true
        /// Distinct events the embedded receiver got, lines it got twice (resends), events of the file it
        /// did not get. `nil` for an external collector (which the demo cannot look into).
        package var received: Int?
        package var duplicates: Int?
        package var missingFromCollector: Int?
        /// Why the final `forceSend` failed, if it did.
        package var sendError: String?
        package var elapsed = 0.0
        package var logged: Int { loggedPerLevel.values.reduce(0, +) }
        /// Whether every event reached every destination that should have it.
        package var lostNothing: Bool { missingFromFile == 0 && (missingFromCollector ?? 0) == 0 && sendError == nil }
    }

    package var options: Options

    package init(options: Options) {
        self.options = options
    }

    /// Rotated files kept by the demo's file destination (at 10 MiB each, about 20 million events).
    static let retainedFiles = 1000

    /// `file`, preceded by the files it rotated into (`file.N` … `file.1`), oldest first: those that exist.
    static func fileAndRotations(_ file: URL) -> [URL] {
        let rotated = (1...retainedFiles).lazy.map { URL(fileURLWithPath: file.path + ".\($0)") }
            .prefix { FileManager.default.fileExists(atPath: $0.path) }
        return rotated.reversed() + [file]
    }

    /// Runs the scenario; throws a one-line ``ToolError`` when the folder cannot be used or the embedded
    /// receiver cannot start.
    package func run() async throws -> Report {
        let folder =
            options.folder
            ?? URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            .appendingPathComponent("justlog-demo-\(UUID().uuidString.prefix(8).lowercased())", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw ToolError(
                "cannot use \(folder.path) for the demo's files: \(error.localizedDescription); pass --dir with a writable folder"
            )
        }
        let fileURL = folder.appendingPathComponent("justlog-demo.log")
        // The file and every rotation an earlier demo in this folder left: they were counted as this run's, and a
        // second run reported events lost that it never logged (review, helper-72).
        // And its journal and spool, whose events an interrupted demo left: recovered, they were counted too.
        let earlier = [
            fileURL, URL(fileURLWithPath: fileURL.path + ".journal"), URL(fileURLWithPath: fileURL.path + ".spool"),
        ]
        for url in earlier + (1...Self.retainedFiles).map({ URL(fileURLWithPath: fileURL.path + ".\($0)") }) {
            try? FileManager.default.removeItem(at: url)
        }

        // The collector: embedded on loopback unless one was given.
        let tally = EventIDTally()
        var receiver: JSONLinesReceiver?
        let collector: Collector
        if let given = options.collector {
            collector = given
        } else {
            let embedded = JSONLinesReceiver(configuration: .init(host: "127.0.0.1", port: 0), handler: tally.record)
            let port: Int
            do {
                port = try await embedded.start()
            } catch {
                throw ToolError(
                    "cannot start the embedded receiver on 127.0.0.1: \(error); pass --host and --port of a collector instead"
                )
            }
            receiver = embedded
            collector = Collector(host: "127.0.0.1", port: port, useTLS: false)
        }
        var report = Report(fileURL: fileURL)
        report.collector = "\(collector.host):\(collector.port)"
        report.embeddedCollector = receiver != nil

        let console = options.output
        var logstash = Logger.Configuration.Logstash(
            host: collector.host,
            port: UInt16(clamping: collector.port),
            sendInterval: 0.5,
            useTLS: collector.useTLS,
            allowUntrustedServer: collector.allowUntrustedServer,
            caFile: collector.caFile,
            spoolFolder: folder.appendingPathComponent("justlog-demo.log.spool", isDirectory: true)
        )
        logstash.logActivity = true
        logstash.activityOutput = console
        let logger = Logger(
            configuration: .init(
                console: .init(.init(output: console), minimumLevel: .info),
                // 10 MiB files, and enough kept that a large --events run never loses its first lines to retention.
                file: .init(
                    FileDestination.Configuration(url: fileURL, retainedFileCount: Self.retainedFiles),
                    minimumLevel: .verbose
                ),
                logstash: logstash,
                defaultUserInfo: [
                    "app": "justlog-demo", "environment": "demo", "tenant": "UK",
                    "sessionID": .string(UUID().uuidString),
                ],
                diagnostics: options.diagnostics
            )
        )

        let start = Date()
        // Passes the scenario's own call site through, as a wrapper around a logger should.
        func log(
            _ level: LogLevel,
            _ message: String,
            error: (any Error)? = nil,
            userInfo: [String: Any]? = nil,
            file: String = #fileID,
            function: String = #function,
            line: UInt = #line
        ) {
            logger.log(level, message, error: error, userInfo: userInfo, file: file, function: function, line: line)
            report.loggedPerLevel[level, default: 0] += 1
        }
        log(.verbose, "demo starting", userInfo: ["pid": ProcessInfo.processInfo.processIdentifier])
        log(
            .debug,
            "configuration loaded",
            userInfo: ["destinations": ["console", "file", "logstash"], "burst": options.burst]
        )
        log(.info, "user signed in", userInfo: ["user": ["id": 42, "tier": "gold"], "method": "password"])
        log(.warning, "payment service is slow", userInfo: ["latency_ms": 2350.5, "threshold_ms": 1000])
        log(
            .error,
            "checkout failed",
            error: DemoErrors.checkoutFailure(),
            userInfo: ["order_id": "o-1017", "amount": 23.4]
        )
        for index in 0..<options.burst {
            log(.debug, "burst event \(index)", userInfo: ["index": index])
        }
        log(.info, "demo finished logging")

        do {
            try await logger.flush()
        } catch {
            report.sendError = "\(error)"
        }
        if receiver != nil {
            _ = await tally.waitUntil(uniqueEventIDs: report.logged, timeout: .seconds(30))
        }
        await logger.shutdown(timeout: 10)
        report.elapsed = Date().timeIntervalSince(start)
        await receiver?.stop()

        // The spool was only a way to the collector: don't leave megabytes of it in the temporary folder.
        if options.folder == nil, report.sendError == nil {
            try? FileManager.default.removeItem(
                at: folder.appendingPathComponent("justlog-demo.log.spool", isDirectory: true)
            )
        }

        // Check the file — with the files it rotated into — and the collector against it, event by event.
        let files = Self.fileAndRotations(fileURL)
        let lines = files.flatMap { (try? String(contentsOf: $0, encoding: .utf8))?.split(separator: "\n") ?? [] }
        report.fileEvents = lines.count
        report.fileBytes = files.reduce(0) {
            $0 + ((try? FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? Int) ?? 0)
        }
        report.rotatedFiles = files.count - 1
        report.missingFromFile = max(0, report.logged - lines.count)
        if receiver != nil {
            let fileIDs = Set(lines.compactMap { try? FileLine(parsing: $0).record.eventID })
            let snapshot = tally.snapshot
            report.received = snapshot.uniqueEventIDs
            report.duplicates = snapshot.duplicates
            report.missingFromCollector =
                fileIDs.subtracting(tally.eventIDs).count + max(0, report.logged - fileIDs.count)
        }
        return report
    }

    /// The summary table printed at the end of the demo.
    package static func summary(_ report: Report) -> String {
        var table = Table(headers: ["", "events"])
        for level in LogLevel.allCases {
            table.add(["\(level.emoji) \(level.label)", "\(report.loggedPerLevel[level] ?? 0)"])
        }
        table.add(["logged", "\(report.logged)"])
        table.add(["in the file", "\(report.fileEvents)"])
        if let received = report.received {
            table.add(["at the collector", "\(received)"])
            table.add(["  resent twice", "\(report.duplicates ?? 0)"])
        }
        let rate = report.elapsed > 0 ? Double(report.logged) / report.elapsed : 0
        var text = "\n" + table.text
        let rotated =
            report.rotatedFiles > 0
            ? ", with \(report.rotatedFiles) rotated file\(report.rotatedFiles == 1 ? "" : "s") .1…" : ""
        text += "file:      \(report.fileURL.path) (\(report.fileBytes) bytes\(rotated))\n"
        text +=
            "collector: \(report.collector) (\(report.embeddedCollector ? "embedded json_lines receiver" : "external; the demo cannot count what it received"))\n"
        text += "time:      \(String(format: "%.3f", report.elapsed)) s, \(Int(rate)) events/s\n"
        if let sendError = report.sendError { text += "sending:   \(sendError)\n" }
        if report.lostNothing {
            text += "result:    nothing lost\n"
        } else {
            var problems: [String] = []
            if report.missingFromFile > 0 {
                problems.append("\(report.missingFromFile) event(s) missing from the file")
            }
            if let missing = report.missingFromCollector, missing > 0 {
                problems.append("\(missing) event(s) missing at the collector")
            }
            if report.sendError != nil {
                problems.append("events were not handed to the collector (they stay in the spool)")
            }
            text += "result:    LOST: " + problems.joined(separator: "; ") + "\n"
        }
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
        return NSError(
            domain: "com.just-eat.checkout",
            code: 1017,
            userInfo: [
                NSLocalizedDescriptionKey: "The order could not be placed.",
                NSLocalizedFailureReasonErrorKey: "The payment was not confirmed.",
                NSUnderlyingErrorKey: gateway,
            ]
        )
    }
}
