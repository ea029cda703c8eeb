import Foundation
import JustLog
import JustLogCore
import JustLogLogstash
import JustLogTestSupport
import Testing

// The Logstash destination end to end: through `Logger`, its spool and its connection, to a real
// syslog-ng started by each test on 127.0.0.1 (see ../shared/PEERS.md).

/// A Logger whose only destination is Logstash on 127.0.0.1:`port`, spooling in `folder`.
func logstashLogger(
    port: Int,
    folder: TemporaryDirectory,
    tls caFile: String? = nil,
    spoolCapacity: Int = 64 << 20,
    diagnostics: DiagnosticSink = .standardError,
    change: (inout Logger.Configuration.Logstash) -> Void = { _ in }
) -> Logger {
    var logstash = Logger.Configuration.Logstash(
        host: "127.0.0.1",
        port: UInt16(port),
        sendInterval: 0.2,
        useTLS: caFile != nil,
        caFile: caFile,
        spoolFolder: folder.appending("app.log.spool"),
        spoolCapacity: spoolCapacity
    )
    change(&logstash)
    return Logger(
        configuration: .init(
            console: nil,
            logstash: logstash,
            defaultUserInfo: ["app": "delivery-test"],
            diagnostics: diagnostics
        )
    )
}

/// The flattened objects syslog-ng wrote, parsed.
func receivedObjects(_ syslog: SyslogNG) throws -> [[String: LogValue]] {
    try syslog.receivedLines().map(parsedObject)
}

/// One line syslog-ng wrote, parsed into a flattened object.
func parsedObject(_ line: String) throws -> [String: LogValue] {
    guard case .object(let object) = try JSONReader.parse(line) else {
        throw JustLogError(.malformedInput, "not an object: \(line)")
    }
    return object
}

/// The string `key` has in each object syslog-ng wrote (`[]` if a line is not a JSON object), read with Foundation's
/// parser, which is built optimized: JustLog's own, built for debugging with the tests, took a third of the CPU of
/// a 100,000-event test, and polled conditions read every line again each time.
func receivedStrings(_ key: String, _ syslog: SyslogNG) -> [String] {
    var strings: [String] = []
    for line in syslog.receivedLines() {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return [] }
        if let string = object[key] as? String { strings.append(string) }
    }
    return strings
}

/// The messages syslog-ng received, read as its file grows (see ``GrowingFile``): the tests poll them every 10 ms,
/// and parsing every line each time (250,000 in the soak, with the resends after each kill) held a thread of the
/// test pool for most of a minute.
final class ReceivedMessages {
    private let file: GrowingFile
    private(set) var messages = Set<String>()

    init(_ syslog: SyslogNG) { file = GrowingFile(syslog.receivedFile) }

    /// Whether every one of `expected` arrived, reading what was appended since the last call.
    func include(_ expected: some Collection<String>) -> Bool {
        for line in file.newLines() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                continue
            }
            if let message = object["message"] as? String { messages.insert(message) }
        }
        return messages.count >= expected.count && messages.isSuperset(of: expected)
    }
}

/// The messages of the received objects.
func receivedMessages(_ syslog: SyslogNG) -> [String] { receivedStrings("message", syslog) }

/// Resident memory of this process, in bytes (Linux `/proc/self/statm`).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

@Suite(
    .serialized,
    .enabled(
        if: Collectors.syslogNGAvailable || Collectors.required,
        "syslog-ng or openssl not installed; set JUSTLOG_REQUIRE_COLLECTORS=1 to fail instead"
    )
)
struct LogstashDeliveryTests {
    @Test(arguments: ["plain", "tls"])
    func hundredThousandEventsArriveParsedInTheDocumentedFlattenedForm(mode: String) async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "delivery")
        let logger = logstashLogger(
            port: mode == "tls" ? syslog.tlsPort : syslog.plainPort,
            folder: folder,
            tls: mode == "tls" ? certificates.caFile : nil
        ) { $0.token = "secret-token" }
        let count = 100_000
        let start = Date()
        for index in 0..<count {
            logger.info("event \(index)", userInfo: ["index": index, "order": ["id": index % 97]])
            if index % 1000 == 0 { await Task.yield() }  // long CPU-bound loop on the shared test pool
        }
        try await logger.flush()
        #expect(await eventually(timeout: .seconds(120)) { syslog.parsedLineCount() >= count })
        let elapsed = Date().timeIntervalSince(start)
        print(
            "delivery: \(count) events (\(mode)) logged and parsed by syslog-ng in \(String(format: "%.2f", elapsed)) s"
        )
        await logger.shutdown()

        let ids = Set(receivedStrings("event_id", syslog))
        #expect(ids.count == count, "every event_id arrives")
        #expect(
            syslog.parsedLines().filter { $0.hasPrefix("info\tevent ") }.count >= count,
            "syslog-ng parsed every line as JSON"
        )
        // The first event's whole object, read with JustLog's own reader as the other tests read them.
        let first = try #require(
            try syslog.receivedLines().lazy.filter { $0.contains("\"event 0\"") }.map(parsedObject)
                .first { $0["message"] == "event 0" }
        )
        for key in [
            "@timestamp", "message", "event_id", "log_type", "file", "function", "line", "app_version", "version",
            "device", "app", "index", "order.id", "token",
        ] {
            #expect(first[key] != nil, "flattened key \(key) missing")
        }
        #expect(first["log_type"] == "info")
        #expect(first["order.id"] == 0)
        #expect(first["token"] == "secret-token")
        #expect(first["userInfo"] == nil && first["metadata"] == nil, "flattened: no nesting")
    }

    @Test func collectorDownForTheWholeRunThenStartedDrainsTheSpool() async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try SyslogNG(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "down")
        let diagnostics = LineCapture()
        let logger = logstashLogger(port: syslog.plainPort, folder: folder, diagnostics: diagnostics.diagnostics)
        for index in 0..<2000 { logger.warning("while down \(index)") }
        let failure = await logger.pipeline.flush(timeout: 30).map { "\($0)" }
        #expect(failure?.contains("stay spooled") == true, "forceSend says why not: \(failure ?? "nil")")
        try await syslog.start()
        try await logger.flush()
        #expect(
            await eventually(timeout: .seconds(60)) {
                syslog.receivedLineCount() >= 2000 && Set(receivedMessages(syslog)).count >= 2000
            }
        )
        #expect(Set(receivedMessages(syslog)) == Set((0..<2000).map { "while down \($0)" }))
        await logger.shutdown()
    }

    @Test func spoolCapDropsOldestCountsAndReportsWhenDeliveryResumes() async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try SyslogNG(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "cap")
        let diagnostics = LineCapture()
        let cap = 2 << 20
        var logstash = Logger.Configuration.Logstash(
            host: "127.0.0.1",
            port: UInt16(syslog.plainPort),
            sendInterval: 0.2,
            useTLS: false,
            spoolFolder: folder.appending("cap.spool"),
            spoolCapacity: cap
        )
        logstash.minimumLevel = .verbose
        var configuration = Logger.Configuration(console: nil, logstash: logstash, diagnostics: diagnostics.diagnostics)
        configuration.pipeline = .init()
        // Small segments so that a 2 MiB cap holds several of them.
        let destination = try LogstashDestination(
            configuration: {
                var destination = LogstashDestination.Configuration(
                    client: {
                        var client = LogstashClient.Configuration(host: "127.0.0.1", port: syslog.plainPort)
                        client.useTLS = false
                        client.sendInterval = .milliseconds(200)
                        client.maxLineBytes = 64 << 10
                        client.resendWindowBytes = 256 << 10  // the cap must hold the window plus two segments
                        return client
                    }(),
                    spoolDirectory: folder.appending("cap.spool").path
                )
                destination.spool.segmentBytes = 256 << 10
                destination.spool.maxTotalBytes = cap
                destination.reportUserInfo = ["app": "cap-test"]
                return destination
            }(),
            diagnostics: diagnostics.diagnostics
        )
        configuration.logstash = nil
        configuration.extraDestinations = [.init(destination)]
        let logger = Logger(configuration: configuration)

        // ~35 MiB of events into a 2 MiB spool while the collector is away.
        let payload = String(repeating: "x", count: 1000)
        let total = 30_000
        for index in 0..<total {
            logger.info("capped \(index) \(payload)")
            if index % 1000 == 0 { await Task.yield() }
        }
        let counters = await destination.counters()
        print("spool cap: \(counters.dropped) of \(total) events dropped at a \(cap)-byte cap")
        #expect(counters.spooledBytes <= cap)
        #expect(counters.dropped > UInt64(total / 2), "oldest events dropped and counted")
        #expect(
            diagnostics.writes.filter { $0.contains("reached its cap") }.count == 1,
            "reported once: \(diagnostics.writes)"
        )

        try await syslog.start()
        try await logger.flush()
        #expect(
            await eventually(timeout: .seconds(60)) {
                receivedMessages(syslog).contains { $0.hasPrefix("JustLog dropped") }
            }
        )
        let report = try receivedObjects(syslog).first { ($0["message"]?.text ?? "").hasPrefix("JustLog dropped") }
        #expect(
            report?["dropped_events"] == .uint(UInt64(counters.dropped))
                || report?["dropped_events"] == .int(Int64(counters.dropped))
        )
        #expect(report?["app"] == "cap-test", "report events carry the logger's default userInfo")
        #expect(
            await eventually(timeout: .seconds(60)) {
                receivedMessages(syslog).contains("capped \(total - 1) \(payload)")
            },
            "the newest events survive"
        )
        await logger.shutdown()
    }

    @Test func memoryStaysFlatWhileTheCollectorIsAwayPastTheSpoolCap() async throws {
        // In a child process, so that no other test's allocations are measured.
        let folder = try TemporaryDirectory(prefix: "memory")
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let child = try ChildProcess(arguments: ["spool-cap", folder.path, "\(refusing.port)"])
        #expect(await child.waitForExit(timeout: .seconds(120)) == 0, "\(child.errorOutput)")
        let rounds = child.outputLines.compactMap { line -> (rss: Int, anonymous: Int)? in
            let parts = line.split(separator: " ")
            guard parts.count == 6, parts[2] == "rss", parts[4] == "anon", let rss = Int(parts[3]),
                let anonymous = Int(parts[5])
            else { return nil }
            return (rss, anonymous)
        }
        try #require(rounds.count == 4, "\(child.outputLines)")
        print(
            "memory: resident after 40k, 80k, 120k, 160k events with the collector away: \(rounds.map { "\($0.rss >> 20) MiB" }), of which not mapped files: \(rounds.map { "\($0.anonymous >> 20) MiB" })"
        )
        // Round 2 fills the 64 MiB spool. While the pipeline's thread is behind (dropping at the cap is slower than
        // appending) the journal passes half full and calls wait in the queue, which grows to its bound (4 MiB in
        // the child), and the destination's buffers to theirs, in whichever rounds the race puts it — up to the
        // fourth, on a loaded machine. Beyond those bounds nothing may grow: over rounds 2 to 4 (120,000 events of
        // ~1 KB) the heap grows less than 16 MiB, which a leak of 140 bytes an event would exceed on its own (with
        // the few MiB the bounded buffers add on a loaded machine, less). (The segments'
        // mapped pages, in the resident total, rise and fall by a segment as the oldest is dropped at the cap: their
        // bound is the cap, which the spool's own tests check.)
        let growth = rounds[3].anonymous - rounds[0].anonymous
        #expect(growth < 16 << 20, "the heap grew \(growth >> 20) MiB over the last 120 000 events")
        #expect(child.errorOutput.contains("reached its cap"), "the drop is reported on stderr")
    }

    @Test func childKilledFiveTimesLosesNoEventWhoseLogCallReturned() async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "killed")
        var acknowledged: [String: Int] = [:]
        for run in 0..<5 {
            let tag = "run\(run)"
            let child = try ChildProcess(arguments: ["logstash-loop", folder.path, "\(syslog.plainPort)", tag])
            // Let it log a while — a random-ish amount per run — then SIGKILL it mid-stream.
            let target = 1500 + run * 700
            #expect(
                await child.waitForAcknowledged(atLeast: target, timeout: .seconds(60)),
                "run \(run) did not log \(target) events"
            )
            await child.kill()
            acknowledged[tag] = child.lastAcknowledged
        }
        let drain = try ChildProcess(arguments: ["logstash-drain", folder.path, "\(syslog.plainPort)"])
        #expect(await drain.waitForExit(timeout: .seconds(60)) == 0, "drain: \(drain.errorOutput)")

        let expected = acknowledged.flatMap { tag, last in (0...last).map { "\(tag)-\($0)" } }
        let arrived = ReceivedMessages(syslog)
        #expect(await eventually(timeout: .seconds(60)) { arrived.include(expected) })
        let received = receivedMessages(syslog)
        let missing = Set(expected).subtracting(received)
        #expect(missing.isEmpty, "\(missing.count) acknowledged events missing, e.g. \(missing.sorted().prefix(5))")
        let duplicates = received.count - Set(received).count
        print(
            "child kills: \(expected.count) acknowledged events over 5 SIGKILLs, \(received.count) lines received, \(duplicates) duplicates"
        )
    }

    /// Production programs are not root. Until NIO's `socketOption(.tcp_nodelay)` (really SO_DEBUG, which needs
    /// CAP_NET_ADMIN) was removed, every connect of a non-root program failed with EACCES and nothing was sent.
    @Test func programRunByAnOrdinaryUserDeliversEveryEvent() async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "nonroot")
        chmod(folder.path, 0o777)  // the unprivileged child writes its spool here
        let child = try ChildProcess(
            arguments: ["logstash-count", folder.path, "\(syslog.plainPort)", "1000"],
            unprivileged: true
        )
        #expect(await child.waitForExit(timeout: .seconds(60)) == 0, "stderr: \(child.errorOutput)")
        let expected = (0..<1000).map { "count-\($0)" }
        let arrived = ReceivedMessages(syslog)
        #expect(
            await eventually(timeout: .seconds(60)) { arrived.include(expected) },
            "\(Set(expected).subtracting(receivedMessages(syslog)).count) of 1000 events missing; stderr: \(child.errorOutput)"
        )
    }

    @Test func unresolvableHostNeitherCrashesNorHangsExitNorLosesEvents() async throws {
        let folder = try TemporaryDirectory(prefix: "unresolvable")
        let child = try ChildProcess(arguments: ["unresolvable", folder.path, "500"])
        let status = await child.waitForExit(timeout: .seconds(120))
        #expect(status == 0, "exit status \(String(describing: status)); stderr: \(child.errorOutput)")
        let spool = try LogstashSpool(configuration: .init(directory: folder.appending("child.log.spool").path))
        defer { spool.close() }
        #expect(spool.counterSnapshot.queuedRecords == 500, "every event waits in the spool for the next run")
    }
}
