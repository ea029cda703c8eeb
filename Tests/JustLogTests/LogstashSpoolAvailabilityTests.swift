import Foundation
import JustLog
import JustLogCore
import JustLogLogstash
import JustLogReceivers
import JustLogTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// The Logstash destination when its spool folder is missing, on a full disk or past a file-size limit:
// it is never silently absent, forceSend says why events are not delivered, and they are delivered once
// the spool works again. The collector is a real `JSONLinesReceiver` on 127.0.0.1.

/// A loopback `json_lines` collector that keeps every message it receives.
final class MessageCollector: Sendable {
    private let messages = LockedValue<[String]>([])
    let receiver: JSONLinesReceiver
    let port: Int

    init() async throws {
        let messages = self.messages
        receiver = JSONLinesReceiver(configuration: .init()) { line in
            if case .success(.object(let object)) = line.parsed, case .string(let message)? = object["message"] {
                messages.withLock { $0.append(message) }
            }
        }
        port = try await receiver.start()
    }

    var received: [String] { messages.current }

    /// Whether every one of `expected` arrived (duplicates allowed: delivery is at least once).
    func waitFor(_ expected: [String], timeout: Duration = .seconds(60)) async -> Bool {
        await eventually(timeout: timeout) { Set(received).isSuperset(of: expected) }
    }

    func stop() async { await receiver.stop() }
}

/// Fills the file system holding `path` with one file until writes fail (a full disk).
/// Space freed after a round (a deleted file's pages go once its last mapping does) is filled by the next: it
/// returns once the file system says no block is free, or after 200 rounds. (A CI run's child found room for a
/// 64 KiB segment after one round.)
private func fill(_ path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    defer { close(fd) }
    let chunk = [UInt8](repeating: 0x42, count: 64 << 10)
    for _ in 0..<200 {
        for _ in 0..<100_000 {
            if write(fd, chunk, chunk.count) <= 0 { break }
        }
        var byte: UInt8 = 0x42
        for _ in 0..<100_000 {
            if write(fd, &byte, 1) != 1 { break }
        }
        let folder = (path as NSString).deletingLastPathComponent
        let free = (try? FileManager.default.attributesOfFileSystem(forPath: folder))?[.systemFreeSize] as? NSNumber
        if free?.intValue == 0 { return }
        usleep(20_000)
    }
}

private func isRoot() -> Bool { getuid() == 0 }

/// Mounts a tmpfs of `size` at `path` (a new folder), runs `body`, and unmounts it whatever happens.
private func withTmpfs(size: String, at path: String, _ body: () async throws -> Void) async throws {
    let disk = try TmpfsMount(at: path, size: size)
    let outcome: Result<Void, any Error>
    do {
        try await body()
        outcome = .success(())
    } catch {
        outcome = .failure(error)
    }
    disk.unmount()
    try outcome.get()
}

@Suite struct LogstashSpoolAvailabilityTests {
    @Test func aSpoolFolderWhoseParentsAreMissingIsCreatedAndEveryEventDelivered() async throws {
        let collector = try await MessageCollector()
        let folder = try TemporaryDirectory(prefix: "spool-parents")
        let spool = folder.appending("not/yet/there/app.log.spool")
        let diagnostics = LineCapture()
        let logger = Logger(
            configuration: .init(
                console: nil,
                logstash: .init(
                    host: "127.0.0.1",
                    port: UInt16(collector.port),
                    sendInterval: 0.2,
                    useTLS: false,
                    spoolFolder: spool
                ),
                diagnostics: diagnostics.diagnostics
            )
        )
        let expected = (0..<1000).map { "parents-\($0)" }
        for message in expected { logger.info(message) }
        try await logger.flush()
        #expect(
            await collector.waitFor(expected),
            "\(Set(expected).subtracting(collector.received).count) of 1000 events missing"
        )
        #expect(!diagnostics.text.contains("no Logstash logging"), "\(diagnostics.writes)")
        for created in ["not", "not/yet", "not/yet/there", "not/yet/there/app.log.spool"] {
            var info = stat()
            #expect(stat(folder.file(created), &info) == 0 && info.st_mode & 0o777 == 0o700, "\(created) is owner-only")
        }
        await logger.shutdown()
        await collector.stop()
    }

    @Test func theDocumentedSetupWithFileLoggingOffAndNoLogFolderDeliversEveryEvent() async throws {
        let collector = try await MessageCollector()
        let folder = try TemporaryDirectory(prefix: "spool-no-log-folder")
        chmod(folder.path, 0o777)  // the unprivileged child creates its folders here
        let child = try ChildProcess(
            arguments: ["spool-missing-folder", folder.file("cache/program"), "\(collector.port)", "1000"],
            unprivileged: true
        )
        #expect(await child.waitForExit(timeout: .seconds(120)) == 0, "\(child.errorOutput)")
        #expect(child.outputLines == ["forceSend: ok"], "\(child.outputLines) \(child.errorOutput)")
        let expected = (0..<1000).map { "spool-\($0)" }
        #expect(
            await collector.waitFor(expected),
            "\(Set(expected).subtracting(collector.received).count) of 1000 events missing"
        )
        await collector.stop()
    }

    @Test(
        .enabled(
            if: isRoot(),
            "mounting a tmpfs needs root; spoolPastAFileSizeLimitFailsClearlyThenDelivers covers the same path as any user"
        )
    )
    func aFullDiskFailsForceSendClearlyAndEveryEventArrivesOnceSpaceReturns() async throws {
        let collector = try await MessageCollector()
        let folder = try TemporaryDirectory(prefix: "spool-full-disk")
        let mountPoint = folder.file("tmpfs")
        try await withTmpfs(size: "6m", at: mountPoint) {
            try await fullDiskScenario(collector: collector, mountPoint: mountPoint)
        }
        await collector.stop()
    }

    private func fullDiskScenario(collector: MessageCollector, mountPoint: String) async throws {
        let blocker = mountPoint + "/blocker"
        fill(blocker)

        let diagnostics = LineCapture()
        let logger = Logger(
            configuration: .init(
                console: nil,
                logstash: .init(
                    host: "127.0.0.1",
                    port: UInt16(collector.port),
                    sendInterval: 0.2,
                    useTLS: false,
                    spoolFolder: URL(fileURLWithPath: mountPoint + "/app/app.log.spool")
                ),
                diagnostics: diagnostics.diagnostics
            )
        )
        let expected = (0..<500).map { "full-\($0)" }
        for message in expected { logger.info(message) }
        let failure = await logger.pipeline.flush(timeout: 30).map { "\($0)" }
        #expect(failure?.contains("No space left on device") == true, "forceSend says why: \(failure ?? "nil")")
        #expect(failure?.contains("500 event(s) are waiting in memory") == true, "\(failure ?? "nil")")
        #expect(diagnostics.text.contains("No space left on device"), "\(diagnostics.writes)")

        unlink(blocker)
        var result: String? = "not tried"
        for _ in 0..<120 where result != nil {
            result = await logger.pipeline.flush(timeout: 30).map { "\($0)" }
            if result != nil { try await Task.sleep(for: .milliseconds(250)) }
        }
        #expect(result == nil, "forceSend once space returned: \(result ?? "ok")")
        #expect(
            await collector.waitFor(expected),
            "\(Set(expected).subtracting(collector.received).count) of 500 events missing"
        )
        await logger.shutdown()
    }

    /// A spool folder copied without its holes filled (`cp`, `rsync -S`, a backup restored), opened on a full disk:
    /// the newest segment's free tail has no blocks, and the first record copied into it raised `SIGBUS`, killing
    /// the program. Its blocks are now reserved when the spool opens; when they can't be, the spool says why.
    @Test(.enabled(if: isRoot(), "mounting a tmpfs needs root"))
    func aSparseSegmentOnAFullDiskIsAnErrorNotACrash() async throws {
        let folder = try TemporaryDirectory(prefix: "spool-sparse")
        let mountPoint = folder.file("tmpfs")
        try await withTmpfs(size: "1m", at: mountPoint) {
            let directory = mountPoint + "/spool"
            do {
                let spool = try Spool(
                    configuration: .init(directory: directory, segmentBytes: 64 << 10, maxRecordBytes: 1024)
                )
                for index in 0..<10 { try spool.append(Array("before the copy \(index)".utf8)) }
                spool.close()
            }
            // The newest segment, as a sparse copy keeps it: its first page, then a hole to its size.
            let segment = try #require(
                try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".seg") }.max()
            )
            let path = directory + "/" + segment
            let data = try #require(FileManager.default.contents(atPath: path))
            unlink(path)
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            _ = data.prefix(4096).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            ftruncate(fd, off_t(data.count))
            close(fd)
            fill(mountPoint + "/blocker")

            let child = try ChildProcess(arguments: ["spool-append", directory, "2000"])
            let status = await child.waitForExit(timeout: .seconds(120))
            #expect(status == 1, "exit status \(String(describing: status)) (7: SIGBUS); stderr: \(child.errorOutput)")
            #expect(child.errorOutput.contains("No space left on device"), "stderr: \(child.errorOutput)")
            #expect(child.errorOutput.contains("which has holes"), "refused at open: \(child.errorOutput)")

            // Once there is room the spool opens, with the records it held, and takes more.
            unlink(mountPoint + "/blocker")
            let again = try ChildProcess(arguments: ["spool-append", directory, "100"])
            #expect(await again.waitForExit(timeout: .seconds(120)) == 0, "stderr: \(again.errorOutput)")
            let spool = try Spool(
                configuration: .init(directory: directory, segmentBytes: 64 << 10, maxRecordBytes: 1024)
            )
            defer { spool.close() }
            let batch = spool.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 1000)
            let records = batch.bytes.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
            #expect(records.count == 110)
            #expect(Array(records.prefix(10)) == (0..<10).map { "before the copy \($0)" })
        }
    }

    /// Review (helper-40): the pipeline acknowledged its journal once the Logstash destination's `write` returned,
    /// though a destination whose spool can't be used only holds the events in memory: killed then, the program lost
    /// them, and nothing counted it. The journal now keeps them until they are in the spool.
    @Test func eventsHeldInMemoryWhileTheSpoolIsUnusableArriveAfterSIGKILLAndRestart() async throws {
        let collector = try await MessageCollector()
        let folder = try TemporaryDirectory(prefix: "spool-held-kill")
        // The test holds the child's spool folder (a real lock): its Logstash destination holds the events in memory.
        var holder: LogstashSpool? = try LogstashSpool(configuration: .init(directory: folder.file("child.log.spool")))
        let count = 2_000
        let child = try ChildProcess(arguments: ["spool-held-kill", folder.path, "\(collector.port)", "\(count)"])
        #expect(
            await eventually(timeout: .seconds(120)) { child.outputLines.contains("written") },
            "stderr: \(child.errorOutput)"
        )
        #expect(child.errorOutput.contains("in use by another"), "stderr: \(child.errorOutput)")
        await child.kill()
        holder?.close()
        holder = nil
        #expect(collector.received.isEmpty, "nothing could be spooled, so nothing was sent")

        let restart = try ChildProcess(arguments: ["spool-held-recover", folder.path, "\(collector.port)"])
        #expect(await restart.waitForExit(timeout: .seconds(120)) == 0, "stderr: \(restart.errorOutput)")
        let expected = (0..<count).map { "held-\($0)" }
        #expect(
            await collector.waitFor(expected),
            "\(Set(expected).subtracting(collector.received).count) of \(count) events missing"
        )
        // The file had them all before the kill: the recovery gives it none again.
        let fileMessages = try String(contentsOfFile: folder.file("child.log"), encoding: .utf8)
            .split(separator: "\n").map { try FileLine(parsing: $0).record.message }
        #expect(fileMessages.filter { $0.hasPrefix("held-") } == expected)
        await collector.stop()
    }

    @Test func spoolPastAFileSizeLimitFailsClearlyThenDelivers() async throws {
        let collector = try await MessageCollector()
        let folder = try TemporaryDirectory(prefix: "spool-fsize")
        chmod(folder.path, 0o777)  // the unprivileged child writes its spool here
        let child = try ChildProcess(
            arguments: ["spool-file-size-limit", folder.path, "\(collector.port)", "300"],
            unprivileged: true
        )
        let status = await child.waitForExit(timeout: .seconds(120))
        #expect(status == 0, "exit status \(String(describing: status)) (killed by SIGXFSZ?): \(child.errorOutput)")
        let lines = child.outputLines
        try #require(lines.count == 2, "\(lines) \(child.errorOutput)")
        #expect(
            lines[0].contains("File too large") && lines[0].contains("300 event(s) are waiting in memory"),
            "\(lines[0])"
        )
        #expect(lines[1] == "after raising the limit: ok", "\(lines[1])")
        let expected = (0..<300).map { "spool-\($0)" }
        #expect(
            await collector.waitFor(expected),
            "\(Set(expected).subtracting(collector.received).count) of 300 events missing"
        )
        await collector.stop()
    }

    @Test func logstashSettingsThatCantWorkMakeForceSendFailWithTheReason() async throws {
        let folder = try TemporaryDirectory(prefix: "spool-bad-settings")
        let diagnostics = LineCapture()
        let logger = Logger(
            configuration: .init(
                console: nil,
                logstash: .init(
                    host: "127.0.0.1",
                    port: 9,
                    useTLS: false,
                    spoolFolder: folder.appending("app.log.spool"),
                    spoolCapacity: 1 << 20
                ),
                diagnostics: diagnostics.diagnostics
            )
        )
        logger.info("goes nowhere")
        let failure = await logger.pipeline.flush(timeout: 30).map { "\($0)" }
        #expect(failure?.contains("raise the spool capacity") == true, "forceSend says why: \(failure ?? "nil")")
        #expect(failure?.contains("1 event(s) for Logstash were dropped") == true, "\(failure ?? "nil")")
        #expect(diagnostics.text.contains("no Logstash logging"), "\(diagnostics.writes)")
        await logger.shutdown()
    }
}
