import Foundation
import JustLogCore
import JustLogLogstash
import JustLogReceivers
import JustLogTestSupport
import Testing

@testable import JustLogTools

/// Fails loudly when collectors are required but missing.
private func requireCollectors() -> Bool {
    if !Collectors.syslogNGAvailable {
        Issue.record("JUSTLOG_REQUIRE_COLLECTORS=1 but syslog-ng (/usr/sbin/syslog-ng) or openssl is not installed")
        return false
    }
    return true
}

/// Log files written by a real FileDestination: `count` events, rotated past `maximumFileSize`; returns the
/// files oldest first and every line written, in order.
private func writeLogFiles(
    _ folder: TemporaryDirectory,
    count: Int,
    maximumFileSize: Int
) throws -> (files: [String], lines: [String]) {
    let url = folder.appending("app.log")
    let file = try LogFiles.destination(url, maximumFileSize: maximumFileSize, retained: 50)
    LogFiles.write(
        (0..<count).map { index in
            LogFiles.record(
                LogLevel.allCases[index % 5],
                "event \(index)",
                userInfo: ["index": .int(Int64(index)), "user": ["id": 42]]
            )
        },
        to: file
    )
    file.shutdown()
    let rotated = (1...50).map { "\(url.path).\($0)" }.filter { FileManager.default.fileExists(atPath: $0) }
    let files = rotated.reversed() + [url.path]
    let lines = try files.flatMap {
        try String(contentsOfFile: $0, encoding: .utf8).split(separator: "\n").map(String.init)
    }
    return (files, lines)
}

/// The ship options for tests: output captured, quick progress.
private func shipOptions(
    _ files: [String],
    port: Int,
    spool: String,
    errors: LineCapture = LineCapture()
) -> ShipTool.Options {
    ShipTool.Options(
        files: files,
        host: "127.0.0.1",
        port: port,
        useTLS: false,
        spoolDirectory: spool,
        connectTimeout: .seconds(5),
        stallTimeout: .seconds(10),
        progress: LineCapture().output,
        output: LineCapture().output,
        errors: errors.output
    )
}

private func eventIDs(_ lines: [String]) -> [String] {
    lines.compactMap { line in
        guard case .object(let object)? = try? JSONReader.parse(line), case .string(let id)? = object["event_id"] else {
            return nil
        }
        return id
    }
}

@Suite(
    .serialized,
    .enabled(
        if: Collectors.syslogNGAvailable || Collectors.required,
        "syslog-ng or openssl not installed; set JUSTLOG_REQUIRE_COLLECTORS=1 to fail instead"
    )
)
struct ShipToolTests {
    @Test(arguments: [false, true])
    func shipsRotatedFilesSoEveryLineArrivesOnceInTheFlattenedForm(tls: Bool) async throws {
        guard requireCollectors() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "ship")
        let (files, lines) = try writeLogFiles(folder, count: 1000, maximumFileSize: 200_000)
        #expect(files.count == 2)

        var options = shipOptions(files, port: tls ? syslog.tlsPort : syslog.plainPort, spool: folder.file("spool"))
        options.useTLS = tls
        options.caFile = tls ? certificates.caFile : nil
        let summary = try await ShipTool(options: options).run()
        #expect(summary.progress.eventsSpooled == 1000)
        #expect(summary.leftInSpool == 0)

        #expect(await eventually(timeout: .seconds(60)) { syslog.receivedLineCount() >= 1000 })
        let received = syslog.receivedLines()
        #expect(received.count == 1000)
        // Exactly the flattened form of each file line, in order, with the event's own id and time.
        let expected = try lines.map {
            String(decoding: FlattenedFormat.encode(try FileLine(parsing: Substring($0)).record), as: UTF8.self)
        }
        #expect(received == expected)
        guard case .object(let first)? = try? JSONReader.parse(received[0]),
            case .object(let line)? = try? JSONReader.parse(String(lines[0][lines[0].firstIndex(of: "{")!...])),
            case .object(let metadata)? = line["metadata"]
        else {
            Issue.record("not JSON objects")
            return
        }
        #expect(first["@timestamp"] == metadata["timestamp"])
        #expect(first["event_id"] == metadata["event_id"])
        #expect(first["message"] == "event 0")
        #expect(first["log_type"] == "verbose")
        #expect(first["user.id"] == 42)
        #expect(first["metadata"] == nil && first["userInfo"] == nil)
        #expect(Set(eventIDs(received)).count == 1000)
        #expect(await eventually { syslog.parsedLineCount() == 1000 })
        #expect(syslog.parsedLines().first == "verbose\tevent 0")
    }

    @Test func anInterruptedShipContinuesOnRerunAndEveryLineArrivesExactlyOnce() async throws {
        guard requireCollectors() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.goodServer)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "ship-resume")
        let (files, lines) = try writeLogFiles(folder, count: 6000, maximumFileSize: 600_000)
        let spool = folder.file("spool")

        // First run: cancelled (as Ctrl-C does) once 1000 events are spooled.
        let task = LockedValue<Task<ShipTool.Summary, any Error>?>(nil)
        var options = shipOptions(files, port: syslog.plainPort, spool: spool)
        options.onChunk = { progress in
            if progress.eventsSpooled >= 1000 { task.withLock { $0?.cancel() } }
        }
        let tool = ShipTool(options: options)
        let first = Task { try await tool.run() }
        task.withLock { $0 = first }
        await #expect {
            _ = try await first.value
        } throws: { error in
            guard let error = error as? ToolError else { return false }
            return error.exitCode == 130 && error.message.hasPrefix("interrupted:")
                && error.message.contains("run the same command again")
        }
        let checkpoint = try String(contentsOfFile: spool + "/checkpoints.json", encoding: .utf8)
        #expect(checkpoint.contains("\"offset\""))
        let afterFirst = syslog.receivedLines().count
        #expect(afterFirst < 6000)

        // Second run: continues from the checkpoint.
        let summary = try await ShipTool(options: shipOptions(files, port: syslog.plainPort, spool: spool)).run()
        #expect(summary.resumedBytes > 0)
        #expect(summary.leftInSpool == 0)
        #expect(await eventually(timeout: .seconds(60)) { syslog.receivedLineCount() >= 6000 })
        let received = syslog.receivedLines()
        let ids = eventIDs(received)
        #expect(received.count == 6000, "first run delivered \(afterFirst)")
        #expect(Set(ids).count == 6000)
        #expect(
            Set(ids)
                == Set(eventIDs(try lines.map { String(decoding: try ShipToolTests.flattened($0), as: UTF8.self) }))
        )
    }

    /// The spool folder's lock waits a moment for a holder that lets it go — a ship finishing, or a process another
    /// thread was starting, which holds the descriptor from `fork` to `exec` (the rerun of
    /// `anInterruptedShipContinuesOnRerun…` found the lock held, under load in CI) — and refuses one that keeps it.
    @Test func theSpoolFolderLockWaitsAMomentForAHolderThatLetsGoAndRefusesOneThatDoesNot() async throws {
        let folder = try TemporaryDirectory(prefix: "ship-lock")
        let directory = folder.file("spool")
        try #require(mkdir(directory, 0o700) == 0)
        // Another holder of the lock, which lets go 200 ms later.
        let holder = open(directory + "/ship.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(holder >= 0 && flock(holder, LOCK_EX) == 0)
        let (waited, refusal) = await offThePool { () -> (Duration?, String?) in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { close(holder) }
            let start = ContinuousClock.now
            guard let lock = try? SpoolFolderLock(directory: directory) else { return (nil, nil) }
            let waited = ContinuousClock.now - start
            // This one keeps it: the next is refused once its patience is over.
            defer { lock.release() }
            do {
                _ = try SpoolFolderLock(directory: directory, patience: .milliseconds(100))
                return (waited, nil)
            } catch {
                return (waited, (error as? ToolError)?.message)
            }
        }
        let duration = try #require(waited, "the lock was refused while its holder let go")
        #expect(duration >= .milliseconds(150), "it waited for the holder")
        #expect(refusal?.contains("another justlog ship is using \(directory)") == true, "\(refusal ?? "taken")")
    }

    @Test func anUnreachableCollectorIsOneClearErrorWithinSeconds() async throws {
        let folder = try TemporaryDirectory(prefix: "ship-unreachable")
        let (files, _) = try writeLogFiles(folder, count: 50, maximumFileSize: 1 << 20)
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let port = refusing.port
        let start = ContinuousClock.now
        // On a thread of its own, as `justlog ship` has its process: the time bound is the tool's, not that of a
        // shared pool that other tests' blocking waits hold up (18 s once in a loaded CI run; well under 1 s alone).
        await #expect {
            try await withTaskExecutorPreference(OwnThreadExecutor.shared) {
                _ = try await ShipTool(options: shipOptions(files, port: port, spool: folder.file("spool"))).run()
            }
        } throws: { error in
            guard let error = error as? ToolError else { return false }
            return error.exitCode == 1 && !error.message.contains("\n")
                && error.message.hasPrefix(
                    "can't connect to 127.0.0.1:\(port) (connection refused): check --host and --port"
                )
                && error.message.contains("50 event(s) stay in")
        }
        #expect(ContinuousClock.now - start < .seconds(15))
    }

    @Test func aRefusedCertificateIsOneClearError() async throws {
        guard requireCollectors() else { return }
        let certificates = try await TestCertificates.make()
        let syslog = try await SyslogNG.started(certificate: certificates.selfSigned)
        defer { syslog.shutdown() }
        let folder = try TemporaryDirectory(prefix: "ship-cert")
        let (files, _) = try writeLogFiles(folder, count: 10, maximumFileSize: 1 << 20)
        var options = shipOptions(files, port: syslog.tlsPort, spool: folder.file("spool"))
        options.useTLS = true
        options.caFile = certificates.caFile
        await #expect {
            _ = try await ShipTool(options: options).run()
        } throws: { error in
            guard let error = error as? ToolError else { return false }
            return !error.message.contains("\n")
                && error.message.hasPrefix("the TLS certificate of 127.0.0.1:\(syslog.tlsPort) was refused")
                && error.message.contains("--ca-file")
        }
        #expect(syslog.receivedLines().isEmpty)
    }

    static func flattened(_ line: String) throws -> [UInt8] {
        FlattenedFormat.encode(try FileLine(parsing: Substring(line)).record)
    }
}

@Suite struct ShipToolOptionTests {
    @Test func malformedLinesAreReportedWithFileAndLineAndSkipped() async throws {
        let folder = try TemporaryDirectory(prefix: "ship-malformed")
        let (files, _) = try writeLogFiles(folder, count: 3, maximumFileSize: 1 << 20)
        var text = try String(contentsOfFile: files[0], encoding: .utf8)
        text += "garbage\n"
        try text.write(toFile: files[0], atomically: true, encoding: .utf8)
        let tally = EventIDTally()
        let receiver = JSONLinesReceiver(configuration: .init(), handler: tally.record)
        let port = try await receiver.start()
        defer { Task { await receiver.stop() } }
        let errors = LineCapture()
        let summary = try await ShipTool(
            options: shipOptions(files, port: port, spool: folder.file("spool"), errors: errors)
        ).run()
        #expect(summary.progress.skipped == 1)
        #expect(errors.lines == ["\(files[0]):4: no JSON object on the line, skipped"])
        #expect(await tally.waitUntil(uniqueEventIDs: 3, timeout: .seconds(60)))
        await receiver.stop()
    }

    /// Issue #10: `ship` exited 0 on a file that is not a log, after one error line per input line.
    @Test func aFileWithNoLogLineShipsTheRestThenFailsAndListsTwentyProblems() async throws {
        let folder = try TemporaryDirectory(prefix: "ship-notalog")
        let (files, _) = try writeLogFiles(folder, count: 3, maximumFileSize: 1 << 20)
        let other = folder.file("notes.txt")
        try (0..<100).map { "line \($0) of something else" }.joined(separator: "\n").write(
            toFile: other,
            atomically: true,
            encoding: .utf8
        )
        let tally = EventIDTally()
        let receiver = JSONLinesReceiver(configuration: .init(), handler: tally.record)
        let port = try await receiver.start()
        defer { Task { await receiver.stop() } }
        let errors = LineCapture()
        await #expect {
            _ = try await ShipTool(
                options: shipOptions(files + [other], port: port, spool: folder.file("spool"), errors: errors)
            ).run()
        } throws: { error in
            (error as? ToolError)?.message
                == "\(other) has no log line: give files written by JustLog's file destination"
        }
        #expect(errors.lines.count == 21)
        #expect(errors.lines.last == "… and 80 more line(s) skipped")
        #expect(await tally.waitUntil(uniqueEventIDs: 3, timeout: .seconds(60)), "the log file's events are shipped")
        await receiver.stop()
    }

    /// Issue #10: `ship` to a collector that accepts and stops reading never ended (a blocked write never fails)
    /// while its bar said 100 %.
    @Test func aCollectorThatStopsReadingFailsAfterTheStallTimeoutWithTheCountLeft() async throws {
        let folder = try TemporaryDirectory(prefix: "ship-stalled")
        let (files, lines) = try writeLogFiles(folder, count: 20_000, maximumFileSize: 64 << 20)
        let silent = try SilentPort()
        var options = shipOptions(files, port: silent.port, spool: folder.file("spool"))
        options.stallTimeout = .seconds(2)
        // Only the stall watch may end it: the client's own write timeout (30 s) would end it too, with another
        // message, and did in a CI run whose test pool was so busy that the watch's 20 ms polls stopped for 28 s.
        options.writeTimeout = .seconds(3600)
        await #expect {
            _ = try await ShipTool(options: options).run()
        } throws: { error in
            let message = (error as? ToolError)?.message ?? "\(error)"
            return message.contains("accepted the connection but stopped reading") && message.contains("stay in")
        }
        print("stalled collector: \(lines.count) lines to ship")
        withExtendedLifetime(silent) {}
    }

    @Test func badOptionsAreOneLineErrors() async throws {
        let folder = try TemporaryDirectory(prefix: "ship-options")
        let cases: [(ShipTool.Options, String)] = [
            (.init(files: [], host: "h", port: 1), "no log file given"),
            (.init(files: ["x"], host: "", port: 1), "pass --host and --port"),
            (.init(files: ["x"], host: "h", port: 0), "--port 0 is not a TCP port"),
            (
                .init(files: ["x"], host: "h", port: 1, caFile: "/nonexistent.pem"),
                "--ca-file /nonexistent.pem: no such readable file"
            ),
            (.init(files: [folder.file("missing.log")], host: "h", port: 1), "missing.log: No such file or directory"),
        ]
        for (options, expected) in cases {
            await #expect {
                _ = try await ShipTool(options: options).run()
            } throws: { error in
                guard let error = error as? ToolError else { return false }
                return error.message.contains(expected) && !error.message.contains("\n")
            }
        }
    }
}

/// `checkpoints.json` (``ShipCheckpoints``) as a user may leave it. No collector: the error comes before a connect.
@Suite struct ShipCheckpointFileTests {
    /// A checkpoint file edited by hand to a negative offset for the very file being shipped trapped `ship` (the
    /// file's head was read into an array of that many bytes; review, helper-48), and so did a line number near
    /// `Int.max` with the file's true head (counting on from it; helper-50): each is one clear error now, as a file
    /// that is not JSON is.
    @Test(arguments: [
        #""offset": -5, "line": 0, "head": """#,
        #""offset": 0, "line": -1, "head": """#,
        #""offset": 5, "line": 9223372036854775807, "head": "\#(ShipCheckpointFileTests.headOfTheLog)""#,
    ])
    func aCheckpointFileWithAnImpossiblePositionIsOneClearErrorNotATrap(_ position: String) async throws {
        let folder = try TemporaryDirectory(prefix: "ship-checkpoint")
        let log = folder.file("app.log")
        try Data("line\nmore\n".utf8).write(to: URL(fileURLWithPath: log))
        var info = stat()
        try #require(stat(log, &info) == 0)
        let spool = folder.file("spool")
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        let checkpoints = """
            {"version": 1, "files": [{"path": "\(log)", "device": \(info.st_dev), "inode": \(info.st_ino), \(position)}]}
            """
        try Data(checkpoints.utf8).write(to: URL(fileURLWithPath: spool + "/checkpoints.json"))
        var options = ShipTool.Options(files: [log], host: "127.0.0.1", port: 1)
        options.spoolDirectory = spool
        await #expect {
            _ = try await ShipTool(options: options).run()
        } throws: { error in
            guard let error = error as? ToolError else { return false }
            return error.message.contains("is not a checkpoint file written by justlog ship")
        }
    }

    /// The head a checkpoint at offset 5 holds: `"line\n"`, hashed as `ship` hashes it.
    static let headOfTheLog = String(ShipCheckpoints.fnv1a64("line\n".utf8), radix: 16)
}

/// Issue #10: `ship` created `<file>.ship-spool/` next to any input (a read-only or shared folder).
@Suite struct ShipSpoolLocationTests {
    @Test func theDefaultSpoolIsInTheCacheFolderOnePerInputSetAndCollector() {
        let cache = URL(fileURLWithPath: "/home/ann/.cache/justlog")
        func folder(_ files: [String], port: Int = 5000) -> String {
            ShipTool.Options(files: files, host: "logs.example.com", port: port).defaultSpoolDirectory(cache: cache)
        }
        let first = folder(["/var/log/app/app.log.1", "/var/log/app/app.log"])
        #expect(first.hasPrefix("/home/ann/.cache/justlog/ship/app.log.1-"), "\(first)")
        #expect(!first.hasPrefix("/var/log"))
        #expect(
            first == folder(["/var/log/app/app.log.1", "/var/log/app/app.log"]),
            "a rerun finds the same spool (and its checkpoints)"
        )
        #expect(
            first != folder(["/var/log/app/app.log.1", "/var/log/app/app.log"], port: 5001),
            "another collector, another spool"
        )
        #expect(first != folder(["/srv/other/app.log.1", "/var/log/app/app.log"]), "other files, another spool")
    }
}
