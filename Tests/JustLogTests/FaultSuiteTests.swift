import Foundation
import JustLog
import JustLogCore
import JustLogTestSupport
import Testing

/// The fault suite's scenarios that no other suite covers (issue #7; RELIABILITY.md lists them all). Counts scale
/// with `JUSTLOG_FAULT_SCALE` (default 1, what CI runs; the long form is 20).
private let faultScale = max(1, Int(ProcessInfo.processInfo.environment["JUSTLOG_FAULT_SCALE"] ?? "1") ?? 1)

@Suite(.serialized) struct FaultSuiteTests {
    /// 64 threads log while the logger is reconfigured under them (the Logstash switch toggled, `setup()` called
    /// again): every file line exactly once, and each thread's lines in the order it logged them.
    @Test func sixtyFourThreadsLoggingWhileReconfiguredKeepEveryFileLineOnceAndInOrder() async throws {
        let folder = try TemporaryDirectory(prefix: "threads")
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let logger = Logger()
        logger.baseUrlForFileLogging = folder.url
        logger.logFilename = "threads.log"
        logger.enableConsoleLogging = false
        logger.logstashHost = "127.0.0.1"
        logger.logstashPort = UInt16(refusing.port)
        logger.logstashUseTLS = false
        logger.setup()
        let threads = 64
        let perThread = 500 * faultScale
        let finished = LockedValue(0)
        for thread in 0..<threads {
            Thread {
                for index in 0..<perThread {
                    logger.info("t\(thread)-\(index)", userInfo: ["thread": thread, "index": index])
                }
                finished.withLock { $0 += 1 }
            }.start()
        }
        var reconfigurations = 0
        var setupTimes: [Duration] = []
        let deadline = ContinuousClock.now + .seconds(120)
        while finished.current < threads, ContinuousClock.now < deadline {
            logger.enableLogstashLogging.toggle()
            if reconfigurations % 2 == 0 {
                let began = ContinuousClock.now
                await offThePool { logger.setup() }
                setupTimes.append(ContinuousClock.now - began)
            }
            reconfigurations += 1
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(finished.current == threads)
        // The Logstash destination's flush fails (its collector refuses connections); the flush must still complete.
        let flushError = await logger.pipeline.flush(timeout: 60) as? JustLogError
        #expect(flushError?.code != .timeout, "the flush did not complete: \(String(describing: flushError))")

        let paths =
            (1...20).map { folder.file("threads.log.\($0)") }.filter { FileManager.default.fileExists(atPath: $0) }
            .reversed()
            + [folder.file("threads.log")]
        var perThreadIndexes = [[Int]](repeating: [], count: threads)
        var lines = 0
        for path in paths {
            for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
                let message = try FileLine(parsing: line).record.message
                guard message.hasPrefix("t"), let dash = message.firstIndex(of: "-"),
                    let thread = Int(message[message.index(after: message.startIndex)..<dash]),
                    let index = Int(message[message.index(after: dash)...])
                else { continue }
                perThreadIndexes[thread].append(index)
                lines += 1
            }
        }
        print(
            "64 threads: \(lines) file lines for \(threads * perThread) events, \(reconfigurations) reconfigurations, setup() took \(setupTimes)"
        )
        for thread in 0..<threads {
            #expect(
                perThreadIndexes[thread] == Array(0..<perThread),
                "thread \(thread): \(perThreadIndexes[thread].count) lines, not each once in order"
            )
        }
        await logger.shutdown()
    }

    /// Hostile values through the whole path to a real collector: every line syslog-ng receives parses as JSON,
    /// and what was capped or cyclic says so.
    @Test(
        .enabled(
            if: Collectors.syslogNGAvailable || Collectors.required,
            "syslog-ng or openssl not installed; set JUSTLOG_REQUIRE_COLLECTORS=1 to fail instead"
        )
    )
    func hostileValuesReachTheCollectorAsValidJSONThatSaysWhatWasCut() async throws {
        guard Collectors.requireSyslogNG() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "hostile")
        let logger = logstashLogger(port: syslog.plainPort, folder: folder)
        let cyclic = NSMutableArray(array: ["start"])
        cyclic.add(cyclic)
        var deep: Any = "bottom"
        for _ in 0..<1000 { deep = [deep] }
        let manyKeys = Dictionary(uniqueKeysWithValues: (0..<100_000).map { ("key\($0)", $0) })
        let events: [(String, [String: Any])] = [
            ("non-finite", ["nan": Double.nan, "inf": Double.infinity, "minus": -Double.infinity]),
            (
                "controls \u{1B}[31mred\u{1B}[0m \u{0} \r\n forged",
                ["bidi \u{202E}txt.exe": "\u{202E}gpj.exe", "bell": "\u{7}"]
            ),
            ("nested a thousand deep", ["deep": deep]),
            ("a hundred thousand keys", ["many": manyKeys]),
            (String(repeating: "m", count: 10 << 20), ["huge": "message"]),
            ("self-containing array", ["cycle": cyclic]),
        ]
        for round in 0..<faultScale {
            for (message, userInfo) in events {
                logger.warning(message, userInfo: userInfo.merging(["round": round]) { $1 })
            }
            await Task.yield()
        }
        try await logger.flush()
        let expected = events.count * faultScale
        #expect(await eventually(timeout: .seconds(60)) { syslog.receivedLineCount() >= expected })
        let lines = syslog.receivedLines()
        var objects: [[String: LogValue]] = []
        for (number, line) in lines.enumerated() {
            guard case .object(let object)? = try? JSONReader.parse(line) else {
                Issue.record("line \(number + 1) (\(line.utf8.count) bytes) is not a JSON object: \(line.prefix(200))")
                continue
            }
            objects.append(object)
        }
        #expect(objects.count == expected)
        let text = lines.joined(separator: "\n")
        #expect(text.contains("<cycle: NSMutableArray>"))
        #expect(objects.contains { $0["message"] == "a hundred thousand keys" && $0["truncated"] != nil })
        #expect(objects.contains { $0["message"] == "nested a thousand deep" && $0["truncated"] != nil })
        #expect(!text.contains("\u{1B}"), "no raw escape character reaches the collector unescaped")
        await logger.shutdown()
    }
}
