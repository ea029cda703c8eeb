import Foundation
import JustLog
import JustLogCore
import JustLogLogging
import JustLogTestSupport
import Logging
import Synchronization
import Testing

/// One front door: `Logger` is a thin shell over one `StructuredLogger` whose pipeline keeps its identity across
/// `setup()`, so the swift-log handler bootstrapped for `Logger.shared` follows it; private values never leave
/// the caller's thread in clear.
@Suite struct FrontDoorTests {
    /// In a child process (swift-log can be bootstrapped once per process): swift-log bootstrapped for
    /// `Logger.shared` before its first `setup()`, four threads logging through both front ends, `setup()` called
    /// three more times with new settings meanwhile.
    @Test func everyEventOfBothFrontEndsReachesTheFileOnceInOrderAcrossRepeatedSetup() async throws {
        let folder = try TemporaryDirectory(prefix: "front-doors")
        defer { folder.remove() }
        let threads = 4
        let events = 5_000
        let child = try ChildProcess(arguments: ["front-doors", folder.path, "\(threads)", "\(events)"])
        let status = await child.waitForExit(timeout: .seconds(120))
        #expect(status == 0, "child: \(child.errorOutput)")
        #expect(child.outputLines.last == "done")

        let lines = try String(contentsOf: folder.appending("child.log"), encoding: .utf8).split(separator: "\n")
        let records = try lines.map { try FileLine(parsing: $0).record }
        let early = records.map(\.message).filter { $0.hasPrefix("early-") }
        #expect(
            early == (0..<50).map { "early-\($0)" },
            "events logged before the first setup() are delivered, in order"
        )
        var order = ThreadOrder(threads: threads)
        var phases = Set<LogValue>()
        for record in records where record.message.hasPrefix("t") {
            guard let (_, index) = order.take(record.message) else { continue }
            let front: LogValue = index % 2 == 0 ? "facade" : "swift-log"
            #expect(record.userInfo["front"] == front)
            if index % 2 == 1 {
                #expect(record.metadata["logger"] == "front-door", "swift-log events keep their label")
            }
            if let phase = record.userInfo["phase"] { phases.insert(phase) }
        }
        #expect(order.next == [Int](repeating: events, count: threads), "every event exactly once")
        #expect(Set(records.map(\.eventID)).count == records.count, "event_id stays unique across setup()")
        #expect(phases.contains(0) && phases.contains(3), "each setup() applied its defaultUserInfo: \(phases)")
    }

    /// `flush()` has no synchronous twin, so it waits and throws at the top level of main.swift too (Swift types
    /// top-level code as synchronous, and would pick a synchronous overload there).
    @Test func flushAtTheTopLevelOfMainWaitsAndThrows() async throws {
        let folder = try TemporaryDirectory(prefix: "top-level")
        defer { folder.remove() }
        let child = try ChildProcess(arguments: ["flush-top-level", folder.path, "-"])
        let status = await child.waitForExit(timeout: .seconds(60))
        #expect(status == 3, "flush() must throw before setup(): \(child.outputLines) \(child.errorOutput)")
        #expect(child.errorOutput.contains("not set up"))
    }

    @Test func theSharedLoggersPipelineIsTheSameObjectBeforeAndAfterSetup() {
        let logger = JustLog.Logger()
        let before = logger.pipeline
        #expect(before.isAwaitingSetup)
        logger.enableConsoleLogging = false
        logger.enableFileLogging = false
        logger.setup()
        #expect(logger.pipeline === before)
        #expect(!logger.pipeline.isAwaitingSetup)
        logger.shutdown()
    }
}

/// A private value in `userInfo` and a swift-log value marked sensitive, end to end: neither is in the file nor in
/// the bytes the collector (syslog-ng) received.
@Suite(
    .serialized,
    .enabled(
        if: Collectors.syslogNGAvailable || Collectors.required,
        "syslog-ng or openssl not installed; set JUSTLOG_REQUIRE_COLLECTORS=1 to fail instead"
    )
)
struct PrivateValueDeliveryTests {
    @Test(arguments: ["redacted", "hashed"])
    func privateValuesNeverReachTheFileOrTheCollectorInClear(policy: String) async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "privacy")
        defer { folder.remove() }
        let privacy: PrivacyPolicy = policy == "redacted" ? .redacted : .hashed(key: Array("test key".utf8))
        let logstash = JustLog.Logger.Configuration.Logstash(
            host: "127.0.0.1",
            port: UInt16(syslog.plainPort),
            sendInterval: 0.2,
            useTLS: false,
            spoolFolder: folder.appending("app.log.spool")
        )
        let logger = JustLog.Logger(
            configuration: .init(
                console: nil,
                file: .init(url: folder.appending("app.log")),
                logstash: logstash,
                privacy: privacy
            )
        )
        let swiftLog = Logging.Logger(label: "privacy") { JustLogLogHandler(label: $0, pipeline: logger.pipeline) }
        logger.info("signed in", userInfo: ["email": Sensitive("ann.secret@example.com"), "plan": "gold"])
        swiftLog.info(
            "charged",
            metadata: ["card": "\("4111-SECRET-1111", sensitivity: .sensitive)", "amount": "12.50"]
        )
        try await logger.flush()
        #expect(await eventually(timeout: .seconds(60)) { syslog.receivedLineCount() >= 2 })
        await logger.shutdown()

        let file = try String(contentsOf: folder.appending("app.log"), encoding: .utf8)
        let collected = try String(contentsOfFile: syslog.receivedFile, encoding: .utf8)
        for (place, text) in [("file", file), ("collector", collected)] {
            #expect(
                !text.contains("ann.secret") && !text.contains("SECRET"),
                "\(place) holds a private value in clear:\n\(text)"
            )
            #expect(text.contains("gold") && text.contains("12.50"), "\(place) keeps the other values")
            let marker = policy == "redacted" ? "\"<private>\"" : "\"<private:"
            #expect(text.components(separatedBy: marker).count - 1 >= 2, "\(place): both private values are marked")
        }
        // The spool (Logstash's crash-safe copy on disk) never held them in clear either.
        let spool = try FileManager.default.contentsOfDirectory(atPath: folder.appending("app.log.spool").path)
        for name in spool {
            let bytes =
                (try? Data(contentsOf: folder.appending("app.log.spool").appendingPathComponent(name))) ?? Data()
            #expect(
                bytes.range(of: Data("SECRET".utf8)) == nil && bytes.range(of: Data("ann.secret".utf8)) == nil,
                "spool file \(name)"
            )
        }
    }
}

/// Issue #10: the property-style API could not set rotation (10 MiB and 5 files, fixed) nor what
/// `Logger(configuration:)` offers.
@Suite struct SharedInstanceSettingsTests {
    @Test func rotationLevelsAndOwnDestinationsAreSettableOnTheSharedStyleLogger() async throws {
        let folder = try TemporaryDirectory(prefix: "settings")
        defer { folder.remove() }
        let capture = CapturingDestination()
        let logger = JustLog.Logger()
        logger.baseUrlForFileLogging = folder.url
        logger.logFilename = "app.log"
        logger.enableConsoleLogging = false
        logger.logFileMaximumSize = 2_000
        logger.logFileRetainedCount = 2
        logger.fileMinimumLevel = .info
        logger.additionalDestinations = [.init(capture, minimumLevel: .warning)]
        logger.setup()
        for index in 0..<100 {
            logger.debug("debug \(index)")
            logger.info("info \(index) with some padding to fill the 2 kB files quickly")
        }
        logger.warning("last")
        #expect(await logger.pipeline.flush(timeout: 30) == nil)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("app.log") }
            .sorted()
        // The journal's folder sits next to the log file, and rotation leaves it alone.
        #expect(
            files == ["app.log", "app.log.1", "app.log.2", "app.log.journal"],
            "rotated at 2 kB, two kept: \(files)"
        )
        let current = try String(contentsOf: folder.appending("app.log"), encoding: .utf8)
        #expect(!current.contains("debug "), "the file takes info and above")
        #expect(capture.messages == ["last"], "the own destination takes warning and above")
        await logger.shutdown()
    }
}

/// Review (helper-33): `Logger.additionalDestinations` were shut down by every `setup()` and then installed again by
/// it, so that a destination given once (a `LogstashDestination`, whose spool its shutdown closes) lost everything
/// it was sent after the second `setup()`.
@Suite struct AdditionalDestinationsTests {
    /// Counts its shutdowns, and what it is given after one (which a destination that owns a file or a socket loses).
    final class ShutdownCountingDestination: LogDestination {
        struct State {
            var shutdowns = 0
            var messages: [String] = []
            var writtenAfterShutdown: [String] = []
        }
        private let state = Mutex(State())
        var delivery: DestinationDelivery { .background }
        func write(_ batch: LogBatch) {
            state.withLock { state in
                if state.shutdowns > 0 {
                    state.writtenAfterShutdown += batch.records.map(\.message)
                } else {
                    state.messages += batch.records.map(\.message)
                }
            }
        }
        func shutdown() { state.withLock { $0.shutdowns += 1 } }
        var current: State { state.withLock { $0 } }
    }

    private func quietLogger(in folder: TemporaryDirectory) -> JustLog.Logger {
        let logger = JustLog.Logger()
        logger.baseUrlForFileLogging = folder.url
        logger.logFilename = "app.log"
        logger.enableConsoleLogging = false
        logger.enableLogstashLogging = false
        return logger
    }

    @Test func anOwnDestinationStaysOpenAcrossRepeatedSetup() async throws {
        let folder = try TemporaryDirectory(prefix: "own-destinations")
        defer { folder.remove() }
        let own = ShutdownCountingDestination()
        let logger = quietLogger(in: folder)
        logger.additionalDestinations = [.init(own)]
        logger.setup()
        logger.info("first")
        logger.setup()
        logger.info("second")
        logger.fileMinimumLevel = .warning
        logger.setup()
        logger.info("third")
        #expect(await logger.pipeline.flush(timeout: 30) == nil)
        #expect(own.current.shutdowns == 0, "setup() shut down a destination it then installed again")
        #expect(own.current.messages == ["first", "second", "third"])
        #expect(own.current.writtenAfterShutdown.isEmpty)
        await logger.shutdown()
        #expect(own.current.shutdowns == 1, "the logger's shutdown shuts it down, once")
    }

    /// `LogDestination.shutdown()` is called once; an instance routed twice was shut down twice (review, helper-36).
    @Test func anOwnDestinationGivenTwiceIsShutDownOnce() async throws {
        let folder = try TemporaryDirectory(prefix: "own-destinations")
        defer { folder.remove() }
        let own = ShutdownCountingDestination()
        let logger = quietLogger(in: folder)
        logger.additionalDestinations = [.init(own), .init(own, minimumLevel: .error)]
        logger.setup()
        logger.additionalDestinations = []
        logger.setup()
        #expect(own.current.shutdowns == 1, "removed: shut down once by the setup")
        await logger.shutdown()
        #expect(own.current.shutdowns == 1)
    }

    @Test func anOwnDestinationRemovedFromTheSettingsIsShutDownByTheNextSetup() async throws {
        let folder = try TemporaryDirectory(prefix: "own-destinations")
        defer { folder.remove() }
        let kept = ShutdownCountingDestination()
        let removed = ShutdownCountingDestination()
        let logger = quietLogger(in: folder)
        logger.additionalDestinations = [.init(kept), .init(removed)]
        logger.setup()
        logger.info("first")
        logger.additionalDestinations = [.init(kept)]
        logger.setup()
        logger.info("second")
        #expect(await logger.pipeline.flush(timeout: 30) == nil)
        #expect(removed.current.shutdowns == 1 && removed.current.messages == ["first"])
        #expect(kept.current.shutdowns == 0 && kept.current.messages == ["first", "second"])
        await logger.shutdown()
        #expect(removed.current.shutdowns == 1 && kept.current.shutdowns == 1)
    }
}
