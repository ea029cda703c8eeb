import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A log path in `folder` that is a link to `/dev/full`, where every write fails with `ENOSPC` (tests that use it
/// are enabled only ``ifThereIsADevFull``: elsewhere they are skipped, not passed without running).
private func fullDiskLog(in folder: TemporaryDirectory) throws -> URL {
    let url = folder.appending("full.log")
    try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/full")
    return url
}

/// The files in `folder` that this process holds open though they were deleted (from `/proc/self/fd`, Linux).
private func deletedFilesHeldOpen(in folder: TemporaryDirectory) -> [String] {
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    let targets = descriptors.compactMap {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")
    }
    // (The links name resolved paths: the folder's, resolved, to compare with.)
    let resolvedFolder = URL(fileURLWithPath: folder.path).resolvingSymlinksInPath().path + "/"
    return targets.filter { $0.hasPrefix(resolvedFolder) && $0.hasSuffix("(deleted)") }
}

private let hasProcFD = FileManager.default.fileExists(atPath: "/proc/self/fd")
private let ifThereIsADevFull = ConditionTrait.enabled(
    if: FileManager.default.fileExists(atPath: "/dev/full"),
    "writes to /dev/full"
)

@Suite struct FileDestinationTests {
    func records(_ count: Int, from start: Int = 0, padding: Int = 0) -> [LogRecord] {
        let builder = Fixtures.builder()
        return (start..<start + count).map { index in
            builder.record(
                for: Fixtures.event(.info, "event \(index) " + String(repeating: "p", count: padding)),
                sequence: UInt64(index)
            )
        }
    }

    func messages(in url: URL) throws -> [String] {
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map {
            try FileLine(parsing: $0).record.message
        }
    }

    /// A file left with a torn last line (a program killed mid-write) and rotated away by logrotate between the open
    /// and the journal's recovery (both at boot): the torn line's cut measured the new, empty file and truncated the
    /// open, rotated one to nothing (review, helper-66). It is left as it is; the new file is written.
    @Test func aTornFileRotatedAwayBeforeRecoveryIsNotCutToTheNewFilesLength() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("app.log")
        let file = try FileDestination(configuration: .init(url: url))
        file.write(LogBatch(records: records(3)))
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("2016-12-24 12:31:38.475 torn".utf8))
        try handle.close()
        file.shutdown()

        let reopened = try FileDestination(configuration: .init(url: url))
        let rotated = folder.appending("app.log.1")
        #expect(rename(url.path, rotated.path) == 0)
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        let before = try Data(contentsOf: rotated)
        _ = reopened.journalRecovery()
        #expect(try Data(contentsOf: rotated) == before, "the rotated file is left as it was")
        // The next line goes to the open file or, once the writer notices the rotation, to the new one: either way
        // on a line of its own, after everything the rotated file held.
        reopened.write(LogBatch(records: records(1, from: 3)))
        reopened.shutdown()
        let rotatedText = try String(contentsOf: rotated, encoding: .utf8)
        #expect(rotatedText.hasPrefix(String(decoding: before, as: UTF8.self)))
        let lines = (rotatedText + (try String(contentsOf: url, encoding: .utf8))).split(separator: "\n")
        #expect(lines.compactMap { try? FileLine(parsing: $0).record.message } == (0...3).map { "event \($0) " })
    }

    @Test func rotatesAtSizeLimitKeepsRetentionAndLosesNothingAcrossRotation() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("app.log")
        let limit = 64 * 1024
        let file = try FileDestination(configuration: .init(url: url, maximumFileSize: limit, retainedFileCount: 3))
        // ~600 bytes a line: about 100 lines a file, written in uneven batches.
        var written = 0
        for batchSize in [1, 7, 50, 133, 250, 9, 400] {
            file.write(LogBatch(records: records(batchSize, from: written, padding: 200)))
            written += batchSize
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["app.log", "app.log.1", "app.log.2", "app.log.3"])
        for name in names {
            let size = try FileManager.default.attributesOfItem(atPath: folder.appending(name).path)[.size] as! Int
            #expect(size <= limit, "\(name) is \(size) bytes, over the \(limit)-byte limit")
        }
        // The newest files hold a contiguous, in-order tail of the events: no event lost or repeated at a rotation.
        let kept = try ["app.log.3", "app.log.2", "app.log.1", "app.log"].flatMap {
            try messages(in: folder.appending($0))
        }
        let indexes = kept.map { Int($0.split(separator: " ")[1])! }
        #expect(indexes == Array((written - indexes.count)..<written))
        #expect(indexes.count > 250)
    }

    /// Rotation holds the file it deletes open across the `unlink` and closes it on another thread (the kernel
    /// frees the file at that close): every such descriptor is closed soon after, none leaks.
    @Test(
        .enabled(if: hasProcFD, "reads /proc/self/fd"),
        arguments: [0, 2]
    )
    func rotationClosesTheFilesItDeletes(retainedFileCount: Int) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("app.log")
        let file = try FileDestination(
            configuration: .init(url: url, maximumFileSize: 4096, retainedFileCount: retainedFileCount)
        )
        // ~300 bytes a line, 10 lines a batch: a rotation every other batch, ~100 in all.
        for batch in 0..<200 {
            file.write(LogBatch(records: records(10, from: batch * 10, padding: 200)))
        }
        let closed = await eventually(timeout: .seconds(30)) { deletedFilesHeldOpen(in: folder).isEmpty }
        #expect(closed, "still open: \(deletedFilesHeldOpen(in: folder))")
        let expected = ["app.log"] + (0..<retainedFileCount).map { "app.log.\($0 + 1)" }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == expected)
        #expect(try messages(in: url).last?.hasPrefix("event 1999") == true)
    }

    /// A destination shut down leaves no deleted file held: its shutdown waits for the closes it handed over (a
    /// program may unmount the volume next).
    @Test(.enabled(if: hasProcFD, "reads /proc/self/fd"))
    func shutdownReturnsOnceTheFilesRotationDeletedAreClosed() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let queue = DispatchQueue(label: "slow closer")
        queue.suspend()
        let draining = LockedValue(false)
        let file = try FileDestination(
            configuration: .init(url: folder.appending("app.log"), maximumFileSize: 4096, retainedFileCount: 1),
            diagnostics: .standardError,
            clock: ContinuousClock(),
            closer: DescriptorCloser.on(queue, maximumWaiting: 8).observingDrain { draining.withLock { $0 = true } }
        )
        for batch in 0..<10 { file.write(LogBatch(records: records(10, from: batch * 10, padding: 200))) }
        #expect(!deletedFilesHeldOpen(in: folder).isEmpty, "no rotation held a deleted file")
        // The queue runs once the shutdown waits for it (not after a guessed delay, which a late test thread could
        // outlast: the queue would have closed the files before the shutdown began). Without that wait, the
        // shutdown returns with the queue still stopped, the files still held.
        let heldWhileDraining = LockedValue<Bool?>(nil)
        Thread.detachNewThread {
            let deadline = ContinuousClock.now + .seconds(60)
            while !draining.current, ContinuousClock.now < deadline { usleepShort() }
            heldWhileDraining.withLock { $0 = !deletedFilesHeldOpen(in: folder).isEmpty }
            queue.resume()
        }
        file.shutdown()
        #expect(deletedFilesHeldOpen(in: folder).isEmpty)
        #expect(draining.current, "the shutdown waited for the closes")
        #expect(heldWhileDraining.current == true, "the files were still held when the shutdown began to wait")
    }

    /// The closer's queue stalled (a loaded machine): past its bound the caller closes its own descriptors, so a
    /// starved queue never holds more than that many; the rest close once the queue runs.
    @Test func aStalledCloserHoldsAtMostItsBoundOfDescriptors() async throws {
        let queue = DispatchQueue(label: "stalled closer")
        queue.suspend()
        let closer = DescriptorCloser.on(queue, maximumWaiting: 2)
        // Pipes: the closer closes each write end, and its read end, still ours, says when that happened (a hang-up
        // once no write end is left) — a closed descriptor's number may be reused by anything in the process.
        let pipes = (0..<5).map { _ in
            var ends: [Int32] = [-1, -1]
            _ = pipe(&ends)
            // Not inherited by a child process another test starts meanwhile: it would hold the write end open.
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            return (read: ends[0], write: ends[1])
        }
        defer { for ends in pipes { close(ends.read) } }
        #expect(pipes.allSatisfy { $0.read >= 0 && $0.write >= 0 })
        func writeEndClosed(_ ends: (read: Int32, write: Int32)) -> Bool {
            var polled = pollfd(fd: ends.read, events: Int16(POLLIN), revents: 0)
            return poll(&polled, 1, 0) == 1 && polled.revents & Int16(POLLHUP) != 0
        }
        for ends in pipes { closer.close(ends.write) }
        #expect(pipes.map(writeEndClosed) == [false, false, true, true, true])
        queue.resume()
        #expect(await eventually(timeout: .seconds(30)) { pipes.allSatisfy(writeEndClosed) })
        // The count went back down: a descriptor waits again, and a drain returns once it is closed.
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer { close(ends[0]) }
        queue.suspend()
        closer.close(ends[1])
        #expect(!writeEndClosed((read: ends[0], write: ends[1])), "closed at once: the count never went down")
        queue.resume()
        closer.drain()
        #expect(writeEndClosed((read: ends[0], write: ends[1])))
    }

    @Test func retentionZeroKeepsOnlyTheCurrentFile() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("app.log")
        let file = try FileDestination(configuration: .init(url: url, maximumFileSize: 4096, retainedFileCount: 0))
        file.write(LogBatch(records: records(100, padding: 100)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["app.log"])
        #expect(try messages(in: url).last?.hasPrefix("event 99") == true)
    }

    @Test func newFilesAndFoldersAreOwnerOnly() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("nested/deeper/app.log")
        let file = try FileDestination(configuration: .init(url: url, maximumFileSize: 2048, retainedFileCount: 2))
        file.write(LogBatch(records: records(50, padding: 100)))
        for path in [url.path, url.path + ".1"] {
            let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
            #expect(permissions == 0o600, "\(path) has \(String(permissions, radix: 8))")
        }
        let folderPermissions =
            try FileManager.default.attributesOfItem(atPath: folder.appending("nested/deeper").path)[.posixPermissions]
            as! Int
        #expect(folderPermissions == 0o700)
    }

    @Test func recreatesTheFileWhenItsFolderIsDeleted() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("logs/app.log")
        let file = try FileDestination(configuration: .init(url: url))
        file.write(LogBatch(records: records(3)))
        try FileManager.default.removeItem(at: folder.appending("logs"))
        file.write(LogBatch(records: records(2, from: 3)))
        #expect(try messages(in: url) == ["event 3 ", "event 4 "])
    }

    /// logrotate's `copytruncate` copies the file and empties it under the program: the next lines go to its start,
    /// and the file rotates when it is full again, not when the bytes written before the truncation would have
    /// filled it (review, helper-52: a file of a few lines was rotated away).
    @Test func aFileEmptiedUnderItIsNotRotatedBeforeItIsFullAgain() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("app.log")
        let file = try FileDestination(configuration: .init(url: url, maximumFileSize: 64 << 10, retainedFileCount: 2))
        defer { file.shutdown() }
        // ~600 bytes a line: 90 lines fill most of the file.
        file.write(LogBatch(records: records(90, padding: 200)))
        #expect(truncate(url.path, 0) == 0)
        for index in 90..<120 { file.write(LogBatch(records: records(1, from: index, padding: 200))) }
        #expect(!FileManager.default.fileExists(atPath: url.path + ".1"), "rotated a file of a few lines")
        #expect(try messages(in: url).map { Int($0.split(separator: " ")[1])! } == Array(90..<120))
    }

    /// A link another user planted as the log file (a shared or group-writable log folder) had every line — logged
    /// text included — appended to the file it points at, any of this user's: a shell's start-up file, say (review,
    /// helper-69). It is not followed; the file it points at is untouched. Only root can make a link another user
    /// owns: run by the root step.
    @Test(.enabled(if: getuid() == 0, "needs root to make a link another user owns"))
    func aLinkAnotherUserPlantedAsTheLogFileIsNotFollowed() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let victim = folder.file("victim")
        #expect(FileManager.default.createFile(atPath: victim, contents: Data("precious\n".utf8)))
        let url = folder.appending("app.log")
        #expect(symlink(victim, url.path) == 0)
        #expect(lchown(url.path, 65_534, 65_534) == 0)
        let error = #expect(throws: JustLogError.self) {
            let file = try FileDestination(configuration: .init(url: url), diagnostics: LineCapture().diagnostics)
            file.write(LogBatch(records: records(3)))
            file.shutdown()
        }
        #expect(error?.message.contains("is a symbolic link another user") == true, "\(String(describing: error))")
        #expect(FileManager.default.contents(atPath: victim) == Data("precious\n".utf8))
    }

    /// A hard link as the log file — another user's, to a file of this user's, where the kernel lets them — had the
    /// lines appended to that file (review, helper-73). A log file of more than one link is not written.
    @Test func aLogFileWithAnotherNameIsNotWritten() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let precious = folder.file("precious")
        #expect(FileManager.default.createFile(atPath: precious, contents: Data("precious\n".utf8)))
        let url = folder.appending("app.log")
        #expect(link(precious, url.path) == 0)
        let error = #expect(throws: JustLogError.self) {
            let file = try FileDestination(configuration: .init(url: url), diagnostics: LineCapture().diagnostics)
            file.write(LogBatch(records: records(3)))
            file.shutdown()
        }
        #expect(error?.message.contains("has 2 links") == true, "\(String(describing: error))")
        #expect(FileManager.default.contents(atPath: precious) == Data("precious\n".utf8))
    }

    /// A link this user made (a log kept on another disk) is followed, as `/dev/stdout` is.
    @Test func aLinkThisUserMadeAsTheLogFileIsFollowed() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let target = folder.appending("elsewhere.log")
        let url = folder.appending("app.log")
        #expect(symlink(target.path, url.path) == 0)
        let file = try FileDestination(configuration: .init(url: url), diagnostics: LineCapture().diagnostics)
        file.write(LogBatch(records: records(3)))
        file.shutdown()
        #expect(try messages(in: target) == (0..<3).map { "event \($0) " })
    }

    /// A folder the program may no longer search (`chmod` by an administrator, a mount's permissions) makes the
    /// path unreadable, not the open file: writing goes on. Before (review, helper-52), `EACCES` was taken for "the
    /// file was moved away", the file closed, its reopen refused, and every line lost. Root searches any folder:
    /// run by CI's unprivileged step.
    @Test(.enabled(if: getuid() != 0, "needs a user whom a folder's permissions bind (not root)"))
    func aFolderThatCanNoLongerBeSearchedDoesNotStopTheOpenFile() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let logs = folder.appending("logs")
        let url = logs.appendingPathComponent("app.log")
        let diagnostics = LineCapture()
        // Small enough to rotate: a rotation the folder refuses keeps the open file too (review, helper-57).
        let file = try FileDestination(
            configuration: .init(url: url, maximumFileSize: 2048),
            diagnostics: diagnostics.diagnostics
        )
        defer { file.shutdown() }
        file.write(LogBatch(records: records(3)))
        #expect(chmod(logs.path, 0o600) == 0)
        for index in 3..<23 { file.write(LogBatch(records: records(1, from: index))) }
        #expect(chmod(logs.path, 0o700) == 0)
        #expect(try messages(in: url) == (0..<23).map { "event \($0) " })
        #expect(!diagnostics.text.contains("lost"), "\(diagnostics.text)")
        #expect(diagnostics.text.contains("cannot rotate the log file"), "\(diagnostics.text)")
    }

    @Test(ifThereIsADevFull) func fullDiskIsReportedOnceNeverCrashesAndLossIsCounted() throws {
        let folder = try TemporaryDirectory()
        let url = try fullDiskLog(in: folder)
        let diagnostics = LineCapture()
        let clock = ManualClock()
        let file = try FileDestination(
            configuration: .init(url: url),
            diagnostics: diagnostics.diagnostics,
            clock: clock
        )
        for start in stride(from: 0, to: 50, by: 10) { file.write(LogBatch(records: records(10, from: start))) }
        #expect(diagnostics.writes.count == 1, "one report, not one per event: \(diagnostics.writes)")
        #expect(diagnostics.text.contains("No space left on device"))
        #expect(diagnostics.text.contains(url.path))
        let flushError = LockedValue<String?>(nil)
        file.flush { error in flushError.withLock { $0 = error.map { "\($0)" } } }
        #expect(flushError.current?.contains("No space left on device") == true)

        // The disk "frees up": the next write after the retry interval succeeds and says how many events were lost.
        try FileManager.default.removeItem(at: url)
        clock.advance(by: .seconds(1))
        file.write(LogBatch(records: records(1, from: 50)))
        let lines = try messages(in: url)
        #expect(
            lines.first
                == "JustLog could not write 50 event(s) to this file: cannot write to the log file \(url.path): No space left on device"
        )
        #expect(lines.last == "event 50 ")
        #expect(diagnostics.text.contains("works again; 50 event(s) were lost"))
    }

    @Test(ifThereIsADevFull) func whileWritingFailsBatchesAreCountedWithoutTryingAgainUntilTheRetryInterval() throws {
        let folder = try TemporaryDirectory()
        let url = try fullDiskLog(in: folder)
        let clock = ManualClock()
        let file = try FileDestination(
            configuration: .init(url: url, retryInterval: 1),
            diagnostics: LineCapture().diagnostics,
            clock: clock
        )
        file.write(LogBatch(records: records(10)))
        // Space returns, but within the retry interval nothing is tried: not even the file is recreated.
        try FileManager.default.removeItem(at: url)
        clock.advance(by: .milliseconds(900))
        for start in 10..<15 { file.write(LogBatch(records: records(1, from: start))) }
        #expect(!FileManager.default.fileExists(atPath: url.path), "a batch within the retry interval tried to write")
        clock.advance(by: .milliseconds(100))
        file.write(LogBatch(records: records(5, from: 15)))
        let lines = try messages(in: url)
        #expect(
            lines == [
                "JustLog could not write 15 event(s) to this file: cannot write to the log file \(url.path): No space left on device",
                "event 15 ", "event 16 ", "event 17 ", "event 18 ", "event 19 ",
            ]
        )
    }

    @Test(ifThereIsADevFull) func flushWritesTheLossReportOnceSpaceReturnsAndOtherwiseReportsTheCount() throws {
        let folder = try TemporaryDirectory()
        let url = try fullDiskLog(in: folder)
        let diagnostics = LineCapture()
        let file = try FileDestination(
            configuration: .init(url: url),
            diagnostics: diagnostics.diagnostics,
            clock: ManualClock()
        )
        file.write(LogBatch(records: records(20)))
        let flushError = LockedValue<String?>(nil)
        file.flush { error in flushError.withLock { $0 = error.map { "\($0)" } } }
        #expect(flushError.current?.contains("No space left on device") == true)
        #expect(diagnostics.text.contains("20 event(s) lost writing to \(url.path) so far"), "\(diagnostics.writes)")

        // Space returns; no event is logged any more, but the flush (at exit, say) still writes the report.
        try FileManager.default.removeItem(at: url)
        file.flush { error in flushError.withLock { $0 = error.map { "\($0)" } } }
        #expect(flushError.current == nil)
        #expect(
            try messages(in: url) == [
                "JustLog could not write 20 event(s) to this file: cannot write to the log file \(url.path): No space left on device"
            ]
        )
        #expect(diagnostics.text.contains("works again; 20 event(s) were lost"))
    }

    @Test func aFileThatEndsMidLineGetsTheNextEventOnALineOfItsOwn() throws {
        // What a program killed in the middle of a write (or an older JustLog on a full disk) leaves behind.
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("app.log")
        try Data(#"2016-12-24 12:31:38.475  ℹ️ INFO: {"message":"torn"#.utf8).write(to: url)
        let file = try FileDestination(configuration: .init(url: url))
        file.write(LogBatch(records: records(2)))
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.first?.hasSuffix(#""message":"torn"#) == true)
        #expect(try lines.dropFirst().map { try FileLine(parsing: $0).record.message } == ["event 0 ", "event 1 "])
    }

    @Test func unwritableLocationThrowsAClearErrorAtCreation() {
        #expect {
            _ = try FileDestination(configuration: .init(url: URL(fileURLWithPath: "/proc/justlog/app.log")))
        } throws: { error in
            guard let error = error as? JustLogError else { return false }
            return error.code == .fileSystem && error.message.contains("/proc/justlog")
        }
    }

    @Test func appendsToAnExistingFile() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("app.log")
        try FileDestination(configuration: .init(url: url)).write(LogBatch(records: records(2)))
        try FileDestination(configuration: .init(url: url)).write(LogBatch(records: records(1, from: 2)))
        #expect(try messages(in: url) == ["event 0 ", "event 1 ", "event 2 "])
    }
}

@Suite struct ConsoleDestinationTests {
    @Test func printsTheDocumentedLineWithTheMessageOnly() {
        let capture = LineCapture()
        let console = ConsoleDestination(
            configuration: .init(output: capture.output, colors: .never, timeZone: TimeZone(identifier: "UTC")!)
        )
        let record = Fixtures.builder().record(
            for: Fixtures.event(.info, "a nice information", userInfo: ["some key": "x"]),
            sequence: 1
        )
        console.write(LogBatch(records: [record]))
        #expect(capture.text == "2016-12-24 12:31:38.475  ℹ️ INFO: a nice information\n")
    }

    @Test func aMessageCannotForgeALineOrEmitTerminalEscapes() {
        let capture = LineCapture()
        let console = ConsoleDestination(
            configuration: .init(output: capture.output, colors: .never, timeZone: TimeZone(identifier: "UTC")!)
        )
        let hostile =
            "ok\n2016-12-24 12:31:38.475  ☠️ ERROR: forged\r\u{1B}]0;title\u{7}\u{1B}[2J\u{9B}31m\u{2028}\u{202E}"
        console.write(LogBatch(records: [Fixtures.builder().record(for: Fixtures.event(.info, hostile), sequence: 1)]))
        let text = capture.text
        #expect(text.filter { $0 == "\n" }.count == 1)
        #expect(
            !text.unicodeScalars.contains {
                $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B || $0.value == 0x0D
            }
        )
        #expect(!text.unicodeScalars.contains { $0.value == 0x2028 || $0.value == 0x202E })
        #expect(text.contains(#"ok\n2016-12-24"#))
        #expect(text.contains(#"\u{1B}]0;title\u{7}"#))
    }

    @Test func colorsOnlyWhenAsked() {
        let record = Fixtures.builder().record(for: Fixtures.event(.error, "boom"), sequence: 1)
        let plain = LineCapture()
        let colored = LineCapture()
        ConsoleDestination(configuration: .init(output: plain.output, colors: .automatic)).write(
            LogBatch(records: [record])
        )
        ConsoleDestination(configuration: .init(output: colored.output, colors: .always)).write(
            LogBatch(records: [record])
        )
        #expect(!plain.text.contains("\u{1B}["), "a capture is not a terminal: no colors")
        #expect(colored.text.contains("\u{1B}[1;31mERROR\u{1B}[0m"))
    }

    @Test func cleanTextIsNotCopied() {
        #expect(!TerminalSafeText.needsEscaping("plain 🍕 naïve 𝄞 text"))
        #expect(TerminalSafeText.needsEscaping("a\tb"))
        #expect(TerminalSafeText.needsEscaping("\u{85}"))
        #expect(TerminalSafeText.needsEscaping("\u{2069}"))
        #expect(!TerminalSafeText.needsEscaping("\u{2027}\u{202F}"))
    }
}
