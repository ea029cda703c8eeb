// swift-format-ignore-file
// (the README's and SPEC's snippets, verbatim: ReadmeSnippetTests compares them line by line)
import Foundation
import JustLog
import JustLogCore
import JustLogLogstash
import JustLogTestSupport
import Testing

// The documented snippet of SPEC §1, verbatim, inside a function so the test can run it against a
// temporary folder. `someSessionID` and `someError` are the snippet's free names.
func runDocumentedSnippet(someSessionID: String, someError: NSError) {
    let logger = Logger.shared

    // file destination
    logger.logFilename = "justeat-demo.log"

    // logstash destination
    logger.logstashHost = "my.logstash.endpoint.com"
    logger.logstashPort = 3515
    logger.logstashTimeout = 5
    logger.logLogstashSocketActivity = true

    // default info
    logger.defaultUserInfo = ["app": "my iOS App",
                              "environment": "production",
                              "tenant": "UK",
                              "sessionID": someSessionID]
    logger.setup()

    Logger.shared.verbose("not so important")
    Logger.shared.debug("something to debug")
    Logger.shared.info("a nice information", userInfo: ["some key": "some extra info"])
    Logger.shared.warning("oh no, that won't be good", userInfo: ["some key": "some extra info"])
    Logger.shared.error("ouch, an error did occur!", error: someError, userInfo: ["some key": "some extra info"])

    logger.enableConsoleLogging = false
    logger.enableFileLogging = false
    logger.enableLogstashLogging = false

    Logger.shared.forceSend()
    Logger.shared.forceSend { error in /* all queued logs were handed to the collector, or error says why not */ }
    logger.logzioToken = "<token>"   // adds "token" to every remote event (logz.io listener: TLS, port 5052)
}

@Suite(.serialized) struct DocumentedAPITests {
    @Test func documentedSnippetWritesTheDocumentedFileLines() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        Logger.shared.baseUrlForFileLogging = folder.url
        Logger.shared.allowUntrustedServer = false
        #expect(Logger.shared.logstashUseTLS, "TLS is the default")
        #expect(!Logger.shared.allowUntrustedServer)

        let error = NSError(domain: "com.just-eat.test", code: 1234, userInfo: [
            NSLocalizedDescriptionKey: "description",
            NSLocalizedFailureReasonErrorKey: "error value",
            NSLocalizedRecoverySuggestionErrorKey: "recovery suggestion",
        ])
        runDocumentedSnippet(someSessionID: "session-42", someError: error)
        // my.logstash.endpoint.com does not resolve here: the flush says so, and the events stay spooled.
        let flushError = Logger.shared.pipeline.flush(timeout: 10).map { "\($0)" } ?? ""
        #expect(flushError.contains("my.logstash.endpoint.com") && flushError.contains("spooled"), "\(flushError)")
        #expect(FileManager.default.fileExists(atPath: folder.appending("justeat-demo.log.spool").path))
        defer {
            Logger.shared.shutdown(timeout: 1)
            Logger.shared.enableConsoleLogging = true
            Logger.shared.enableFileLogging = true
            Logger.shared.enableLogstashLogging = true
        }

        let url = folder.appending("justeat-demo.log")
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 5)
        let expected: [(String, String, String)] = [
            ("📣", "VERBOSE", "not so important"), ("📝", "DEBUG", "something to debug"),
            ("ℹ️", "INFO", "a nice information"), ("⚠️", "WARNING", "oh no, that won't be good"),
            ("☠️", "ERROR", "ouch, an error did occur!"),
        ]
        let linePattern = #/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  (\S+) ([A-Z]+): (\{.*\})$/#
        for (line, (emoji, label, message)) in zip(lines, expected) {
            let match = try #require(try linePattern.wholeMatch(in: String(line)), "not the documented line: \(line)")
            #expect(String(match.1) == emoji)
            #expect(String(match.2) == label)
            #expect(String(match.3).hasPrefix(#"{"message":"\#(message)","metadata":{"#))
            let record = try FileLine(parsing: line).record
            #expect(record.userInfo["app"] == "my iOS App")
            #expect(record.userInfo["sessionID"] == "session-42")
            #expect(record.userInfo["log_type"] == .string(label.lowercased()))
            #expect(record.metadata["file"] == "DocumentedAPITests.swift")
            #expect(record.metadata["function"] == "runDocumentedSnippet(someSessionID:someError:)")
            for key in ["line", "app_version", "version", "device", "timestamp", "event_id"] {
                #expect(record.metadata[key] != nil, "metadata.\(key) missing")
            }
        }
        let errorRecord = try FileLine(parsing: lines[4]).record
        #expect(errorRecord.userInfo["error_domain"] == "com.just-eat.test")
        #expect(errorRecord.userInfo["error_code"] == 1234)
        #expect(errorRecord.userInfo["NSLocalizedRecoverySuggestion"] == "recovery suggestion")
        #expect(errorRecord.userInfo["some key"] == "some extra info")

        // Logging after the documented toggles reaches no destination.
        Logger.shared.info("after the toggles")
        _ = Logger.shared.pipeline.flush(timeout: 10)
        #expect(try String(contentsOf: url, encoding: .utf8).split(separator: "\n").count == 5)
    }

    @Test func loggingBeforeSetupIsDeliveredAtSetupAndSetupTwiceIsSafe() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let logger = Logger()
        logger.baseUrlForFileLogging = folder.url
        logger.logFilename = "early.log"
        logger.enableConsoleLogging = false
        logger.info("logged before setup")
        logger.setup()
        logger.info("logged after setup")
        logger.setup()
        logger.info("logged after the second setup")
        #expect(logger.pipeline.flush(timeout: 10) == nil)
        let messages = try String(contentsOf: folder.appending("early.log"), encoding: .utf8)
            .split(separator: "\n").map { try FileLine(parsing: $0).record.message }
        #expect(messages == ["logged before setup", "logged after setup", "logged after the second setup"])
        logger.shutdown()
    }

    /// `privacy` applies from the moment it is set: to calls held for the first `setup()` (they were captured with
    /// the default, in clear in a debug build — as tests are — though `privacy` was `.redacted`: review, helper-62),
    /// and to calls after a `setup()` (it waited for the next one).
    @Test func privacyAppliesToCallsFromTheMomentItIsSetBeforeAndAfterSetup() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let logger = Logger()
        logger.baseUrlForFileLogging = folder.url
        logger.logFilename = "private.log"
        logger.enableConsoleLogging = false
        logger.privacy = .redacted
        logger.info("before setup", userInfo: ["email": Sensitive("ann@example.com")])
        logger.setup()
        logger.privacy = .revealed
        logger.info("revealed", userInfo: ["email": Sensitive("bob@example.com")])
        logger.privacy = .redacted
        logger.info("after setup", userInfo: ["email": Sensitive("eve@example.com")])
        #expect(logger.pipeline.flush(timeout: 10) == nil)
        let records = try String(contentsOf: folder.appending("private.log"), encoding: .utf8)
            .split(separator: "\n").map { try FileLine(parsing: $0).record }
        #expect(records.map(\.message) == ["before setup", "revealed", "after setup"])
        #expect(records.map { $0.userInfo["email"] } == ["<private>", "bob@example.com", "<private>"])
        logger.shutdown()
    }

    /// A destination switched off when `setup()` ran is not built; turning the switch on then changes nothing
    /// until the next `setup()` — and says so (it was silent, and `forceSend` succeeded with nothing sent: review,
    /// helper-62). The next `setup()` builds it.
    @Test func turningOnADestinationThatSetupLeftOutSaysItTakesASetup() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let diagnostics = LockedValue<[String]>([])
        let logger = Logger()
        logger.diagnostics = DiagnosticSink { line in diagnostics.withLock { $0.append(line) } }
        logger.baseUrlForFileLogging = folder.url
        logger.logFilename = "switched.log"
        logger.enableConsoleLogging = false
        logger.enableFileLogging = false
        logger.setup()
        logger.info("nowhere")
        logger.enableFileLogging = true
        #expect(
            diagnostics.current.contains { $0.contains("enableFileLogging = true") && $0.contains("call setup() again") },
            "\(diagnostics.current)"
        )
        logger.enableConsoleLogging = false
        #expect(!diagnostics.current.contains { $0.contains("enableConsoleLogging") }, "turning off says nothing")
        logger.setup()
        logger.info("in the file")
        #expect(logger.pipeline.flush(timeout: 10) == nil)
        let messages = try String(contentsOf: folder.appending("switched.log"), encoding: .utf8)
            .split(separator: "\n").map { try FileLine(parsing: $0).record.message }
        #expect(messages == ["in the file"])
        logger.shutdown()
    }

    /// A `privacy` set while a `setup()` waits for the old destinations holds after it: the setup installed what it
    /// had read before, and calls were captured with the old policy, `privacy` reading the new (review, helper-64).
    @Test func privacySetWhileASetupWaitsHoldsAfterIt() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let logger = Logger()
        logger.baseUrlForFileLogging = folder.url
        logger.logFilename = "race.log"
        logger.enableConsoleLogging = false
        logger.privacy = .revealed
        let blocking = BlockingDestination()
        logger.additionalDestinations = [.init(blocking)]
        logger.setup()
        logger.info("blocks the pipeline's thread")
        let second = Task.detached { logger.setup() }
        // The setup reads the settings, then waits for the old destinations, stuck in a write.
        try await Task.sleep(for: .milliseconds(300))
        logger.privacy = .redacted
        blocking.release()
        await second.value
        logger.info("after", userInfo: ["email": Sensitive("ann@example.com")])
        #expect(await logger.pipeline.flush(timeout: 10) == nil)
        let records = try String(contentsOf: folder.appending("race.log"), encoding: .utf8)
            .split(separator: "\n").map { try FileLine(parsing: $0).record }
        #expect(records.last?.message == "after")
        #expect(records.last?.userInfo["email"] == "<private>", "\(records.last?.userInfo ?? [:])")
        await logger.shutdown()
    }

    /// A logger made from a `Configuration` keeps it through a `setup()` (which applies the property-style settings
    /// it does not use: it replaced the configuration with the defaults — review, helper-62), and its switches say
    /// when they can't start a destination its configuration left out, on its configuration's diagnostics.
    @Test func aLoggerMadeFromAConfigurationKeepsItThroughSetupAndSaysWhatItCannotStart() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let diagnostics = LockedValue<[String]>([])
        let logger = Logger(
            configuration: .init(
                console: nil,
                file: .init(url: folder.appending("configured.log")),
                diagnostics: DiagnosticSink { line in diagnostics.withLock { $0.append(line) } }
            )
        )
        logger.setup()
        logger.info("still configured")
        logger.enableConsoleLogging = true
        #expect(logger.pipeline.flush(timeout: 10) == nil)
        let messages = try String(contentsOf: folder.appending("configured.log"), encoding: .utf8)
            .split(separator: "\n").map { try FileLine(parsing: $0).record.message }
        #expect(messages == ["still configured"])
        #expect(diagnostics.current.contains { $0.contains("setup() applies the property-style settings") })
        #expect(diagnostics.current.contains { $0.contains("enableConsoleLogging = true") }, "\(diagnostics.current)")
        logger.shutdown()
    }

    @Test func forceSendBeforeSetupSaysWhy() {
        let logger = Logger()
        logger.info("waiting")
        let message = LockedValue<String?>(nil)
        logger.forceSend { error in message.withLock { $0 = error.map { "\($0)" } } }
        #expect(message.current?.contains("call setup() first") == true)
    }

    @Test func injectableLoggerNeedsNoSingleton() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let capture = CapturingDestination()
        let logger = Logger(configuration: .init(
            console: nil,
            file: .init(url: folder.appending("injected.log"), minimumLevel: .info),
            extraDestinations: [.init(capture, minimumLevel: .warning)],
            defaultUserInfo: ["app": "billing"]
        ))
        logger.debug("not in the file")
        logger.info("in the file")
        logger.warning("everywhere", userInfo: ["app": "overridden"])
        try await logger.flush()
        let messages = try String(contentsOf: folder.appending("injected.log"), encoding: .utf8)
            .split(separator: "\n").map { try FileLine(parsing: $0).record.message }
        #expect(messages == ["in the file", "everywhere"])
        #expect(capture.records.map(\.message) == ["everywhere"])
        #expect(capture.records.first?.userInfo["app"] == "overridden")
        await logger.shutdown()
    }

    /// An empty or relative `HOME` put the default folder under the folder the program was started in (review,
    /// helper-69); like a relative `XDG_CACHE_HOME`, it is not used.
    @Test(arguments: ["", "relative/home"])
    func aDefaultLogFolderIsNeverRelative(home: String) {
        #if os(Linux)
        let folder = LogFolder.defaultFolder(programName: "demo", environment: ["HOME": home])
        #expect(folder.path.hasPrefix("/"), "\(folder.path)")
        #expect(!folder.path.hasPrefix(FileManager.default.currentDirectoryPath + "/"), "\(folder.path)")
        #expect(folder.path.hasSuffix("/.cache/demo"), "\(folder.path)")
        #endif
    }

    @Test func defaultLogFolderFollowsXDGOnLinux() {
        #if os(Linux)
        let folder = LogFolder.defaultFolder(programName: "demo")
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            #expect(folder.path == xdg + "/demo")
        } else {
            #expect(folder.path.hasSuffix("/.cache/demo"))
        }
        #endif
    }
}

@Suite struct SetupTwiceTests {
    @Test func setupTwiceWithLogstashKeepsSpoolingToTheSameFolder() async throws {
        // The second setup must close the first one's spool before opening it again (one spool per folder).
        let folder = try TemporaryDirectory(prefix: "setup-twice")
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let logger = Logger()
        logger.baseUrlForFileLogging = folder.url
        logger.logFilename = "twice.log"
        logger.enableConsoleLogging = false
        logger.logstashHost = "127.0.0.1"
        logger.logstashPort = UInt16(refusing.port)
        logger.logstashUseTLS = false
        logger.setup()
        logger.info("first setup")
        logger.setup()
        logger.info("second setup")
        await logger.shutdown(timeout: 10)
        let spool = try LogstashSpool(configuration: .init(directory: folder.appending("twice.log.spool").path))
        defer { spool.close() }
        #expect(spool.counterSnapshot.queuedRecords == 2, "both events are in the spool, neither overwritten")
        let lines = try String(contentsOf: folder.appending("twice.log"), encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
    }
}

/// SPEC §1's `forceSend` lines inside an async function (SwiftUI's `.task`, a server's handler, an `async` `main`):
/// they must compile there unchanged too. They did not while `Logger` had an `async` twin of `forceSend()` — Swift
/// picks the async overload in async code, and asked for `try await` (review, helper-62). Compiling is the check.
func documentedForceSendInAsyncCode() async {
    Logger.shared.forceSend()
    Logger.shared.forceSend { error in /* all queued logs were handed to the collector, or error says why not */ }
}
