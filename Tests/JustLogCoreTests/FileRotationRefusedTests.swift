import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The file destination where rotation can't work as it does for a regular file in a folder the program owns: the
/// file system refuses the rename, or the log path names a pipe (review, helper-52).
@Suite struct FileRotationRefusedTests {
    func records(_ count: Int, from start: Int = 0) -> [LogRecord] {
        let builder = Fixtures.builder()
        return (start..<start + count).map {
            builder.record(for: Fixtures.event(.info, "event \($0)"), sequence: UInt64($0))
        }
    }

    func messages(in path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try FileLine(parsing: $0).record.message
        }
    }

    /// A rename the file system refuses — here a directory where `app.log.1` goes; in production a root-owned
    /// `/var/log` holding a file the program owns, or a file bind-mounted alone — is said once, and tried again only
    /// after the retry interval; meanwhile every line goes to the file, past its limit. Before, the failures were
    /// not read: nothing said so, and every line past the limit closed, renamed and reopened the file (the kernel's
    /// count of its opens: ~2,000 for 2,000 lines).
    @Test func aRotationTheFileSystemRefusesIsSaidOnceRetriedAfterTheIntervalAndLosesNothing() throws {
        let folder = try TemporaryDirectory(prefix: "rotation-refused")
        defer { folder.remove() }
        let url = folder.appending("app.log")
        try FileManager.default.createDirectory(atPath: url.path + ".1/kept", withIntermediateDirectories: true)
        let diagnostics = LineCapture()
        let clock = ManualClock()
        let tries = TryCount()
        var configuration = FileDestination.Configuration(url: url, maximumFileSize: 4096, retainedFileCount: 1)
        configuration.onRotating = { tries.add() }
        let file = try FileDestination(configuration: configuration, diagnostics: diagnostics.diagnostics, clock: clock)
        defer { file.shutdown() }
        let opens = try OpenWatch(folder.path)
        for index in 0..<2_000 { file.write(LogBatch(records: records(1, from: index))) }
        #expect(tries.count == 1, "one try at rotating while the clock stands still")
        // That try keeps the file open as it is (review, helper-57: it was closed and opened again, which in a
        // folder the program can no longer search failed).
        #expect(opens.count(of: "app.log") == 0, "no reopen")
        #expect(try messages(in: url.path) == (0..<2_000).map { "event \($0)" })
        let openedSoFar = opens.count(of: "app.log")  // the read just now included
        #expect(diagnostics.writes.count == 1, "\(diagnostics.writes)")
        #expect(diagnostics.text.contains("cannot rotate the log file: can't delete \(url.path).1 (Is a directory)"))

        // Within the retry interval, still no try; after it, and with the way clear, the file rotates.
        clock.advance(by: .milliseconds(999))
        file.write(LogBatch(records: records(1, from: 2_000)))
        #expect(opens.count(of: "app.log") == openedSoFar)
        #expect(tries.count == 1)
        try FileManager.default.removeItem(atPath: url.path + ".1")
        clock.advance(by: .milliseconds(1))
        file.write(LogBatch(records: records(10, from: 2_001)))
        #expect(try messages(in: url.path + ".1") == (0..<2_001).map { "event \($0)" })
        #expect(try messages(in: url.path) == (2_001..<2_011).map { "event \($0)" })
        #expect(diagnostics.writes.count == 1, "\(diagnostics.writes)")
    }

    /// A rotation refused part-way — a retained file that can't be moved (immutable here; bind-mounted, or owned by
    /// root in a sticky folder, in production) — leaves a gap in the retained names, and the retries shift into that
    /// gap and delete nothing (review, helper-54: each retry deleted the oldest retained file again, one a retry
    /// interval, while the log itself never rotated).
    @Test(.enabled(if: immutableFiles, "makes a file immutable (chattr +i: root, a file system that takes it)"))
    func retriesOfARotationRefusedPartWayDeleteNoRetainedFile() throws {
        let folder = try TemporaryDirectory(prefix: "rotation-gap")
        defer { folder.remove() }
        let url = folder.appending("app.log")
        for (index, text) in ["a", "b", "c", "d"].enumerated() {
            try Data((text + "\n").utf8).write(to: URL(fileURLWithPath: "\(url.path).\(index + 1)"))
        }
        try #require(chattr("+i", url.path + ".2"), "chattr +i")
        defer { chattr("-i", url.path + ".2") }
        let diagnostics = LineCapture()
        let clock = ManualClock()
        let file = try FileDestination(
            configuration: .init(url: url, maximumFileSize: 1024, retainedFileCount: 4),
            diagnostics: diagnostics.diagnostics,
            clock: clock
        )
        defer { file.shutdown() }
        // A first rotation (its oldest file, "d", deleted as any rotation does) stops at app.log.2; then three retries.
        for round in 0..<4 {
            file.write(LogBatch(records: records(10, from: round * 10)))
            clock.advance(by: .seconds(1))
        }
        func text(_ suffix: String) -> String? { try? String(contentsOfFile: url.path + suffix, encoding: .utf8) }
        #expect([text(".1"), text(".2"), text(".3"), text(".4")] == ["a\n", "b\n", nil, "c\n"])
        #expect(try messages(in: url.path) == (0..<40).map { "event \($0)" })
        #expect(diagnostics.text.contains("can't rename \(url.path).2 to \(url.path).3 (Operation not permitted)"))
    }

    /// A process's stream (`/dev/stdout`; here `/proc/self/fd/N` of an open file) named by the path itself, through a
    /// relative link, or through a chain of links, is never renamed away, even when the stream is a regular file
    /// (`app > out.log`) — the first version of this part went by the file alone and renamed the link; the second
    /// missed the path itself (rotating `/proc/self/fd/N` found nothing to move, reopened the same file, and did so
    /// again before every line: helper-56).
    @Test(
        .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd"), "names /proc/self/fd/N"),
        arguments: ["itself", "link", "relative link", "chain"]
    )
    func aStreamThatIsARegularFileIsNotRotatedAway(namedBy naming: String) throws {
        let folder = try TemporaryDirectory(prefix: "rotation-stream")
        defer { folder.remove() }
        let out = folder.appending("out.log").path
        let stream = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        try #require(stream >= 0)
        defer { close(stream) }
        let target = "/proc/self/fd/\(stream)"
        let url = naming == "itself" ? URL(fileURLWithPath: target) : folder.appending("app.log")
        switch naming {
        case "link": try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: target)
        case "relative link":
            let up = String(repeating: "../", count: folder.path.split(separator: "/").count)
            try FileManager.default.createSymbolicLink(
                atPath: url.path,
                withDestinationPath: up + "proc/self/fd/\(stream)"
            )
        case "chain":
            try FileManager.default.createSymbolicLink(atPath: folder.file("next"), withDestinationPath: target)
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "next")
        default: break
        }
        let opens = try OpenWatch(folder.path)
        let file = try FileDestination(configuration: .init(url: url, maximumFileSize: 1024, retainedFileCount: 2))
        for start in stride(from: 0, to: 20, by: 5) { file.write(LogBatch(records: records(5, from: start))) }
        file.shutdown()
        #expect(opens.count(of: "out.log") == 1, "opened once, never reopened by a rotation")
        #expect(try messages(in: out) == (0..<20).map { "event \($0)" })
        let expected =
            ["itself": ["out.log"], "chain": ["app.log", "next", "out.log"]][naming] ?? ["app.log", "out.log"]
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == expected)
    }

    /// A log path that is a pipe — a FIFO, or a link to one, as a container's `app.log -> /dev/stdout` — is written to
    /// and never rotated: before, at the size limit the link (or the FIFO) was renamed to `app.log.1` and a regular
    /// file made in its place, which no one reads.
    @Test(arguments: [false, true])
    func aLogPathThatIsAPipeIsWrittenToAndNeverRotatedAway(throughALink: Bool) throws {
        let folder = try TemporaryDirectory(prefix: "rotation-pipe")
        defer { folder.remove() }
        let fifo = folder.appending("pipe").path
        try #require(mkfifo(fifo, 0o600) == 0)
        let url = folder.appending("app.log")
        if throughALink {
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: fifo)
        } else {
            try #require(rename(fifo, url.path) == 0)
        }
        let reader = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        defer { close(reader) }
        // As large a pipe as the user may have (F_SETPIPE_SZ): one over its pipe quota gets 8 KiB, which the lines
        // below would fill (the write then waits for a reader: the test would hang).
        _ = fcntl(reader, 1031, 1 << 20)
        try #require(fcntl(reader, 1032) >= 16 << 10, "a pipe of \(fcntl(reader, 1032)) bytes (F_GETPIPE_SZ)")
        let file = try FileDestination(configuration: .init(url: url, maximumFileSize: 1024, retainedFileCount: 2))
        defer { file.shutdown() }
        // 20 lines of ~400 bytes (~8 KiB, read after): eight times the size limit.
        for start in stride(from: 0, to: 20, by: 5) { file.write(LogBatch(records: records(5, from: start))) }
        var bytes = [UInt8](repeating: 0, count: 1 << 20)
        let count = bytes.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
        let lines = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self).split(separator: "\n")
        #expect(try lines.map { try FileLine(parsing: $0).record.message } == (0..<20).map { "event \($0)" })
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
                == (throughALink ? ["app.log", "pipe"] : ["app.log"])
        )
        var info = stat()
        #expect(stat(url.path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
    }

    /// A FIFO no process reads is a clear error at once: opening it for writing waited for a reader forever, in the
    /// logger's `setup()`.
    @Test func aFIFONoOneReadsIsAClearErrorNotAWaitForAReader() throws {
        let folder = try TemporaryDirectory(prefix: "rotation-fifo")
        defer { folder.remove() }
        let url = folder.appending("app.log")
        try #require(mkfifo(url.path, 0o600) == 0)
        #expect {
            _ = try FileDestination(configuration: .init(url: url))
        } throws: {
            "\($0)".contains("cannot open the log file \(url.path): a FIFO that no process reads")
        }
    }

    /// A pipe whose reader went away: the write fails (counted, said once) instead of killing the program with
    /// `SIGPIPE` (its default action), and the lines after it are counted too. (In this process NIO may have set
    /// `SIGPIPE` aside already: `ChildProcessTests.aLogFileThatIsAPipeWhoseReaderWentAwayDoesNotKillTheProgram`
    /// checks a program where it is at its default action.)
    @Test func aPipeWhoseReaderWentAwayCountsTheLossAndDoesNotKillTheProgram() throws {
        let folder = try TemporaryDirectory(prefix: "rotation-broken-pipe")
        defer { folder.remove() }
        let url = folder.appending("app.log")
        try #require(mkfifo(url.path, 0o600) == 0)
        let reader = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        let diagnostics = LineCapture()
        let file = try FileDestination(
            configuration: .init(url: url),
            diagnostics: diagnostics.diagnostics,
            clock: ManualClock()
        )
        file.write(LogBatch(records: records(5)))
        close(reader)
        file.write(LogBatch(records: records(5, from: 5)))
        file.write(LogBatch(records: records(5, from: 10)))
        file.shutdown()
        #expect(diagnostics.text.contains("Broken pipe"), "\(diagnostics.writes)")
        #expect(diagnostics.text.contains("10 event(s) lost writing to \(url.path)"), "\(diagnostics.writes)")
    }

    /// A file the file system says holds nearly `Int.max` bytes (sparse, on tmpfs) is rotated like any other: the
    /// sum of its size and a line's length trapped, killing the program at its first log line.
    @Test(.enabled(if: hugeSparseFiles, "needs a tmpfs at /dev/shm that takes a file of Int.max - 10 bytes"))
    func aFileThatClaimsNearlyIntMaxBytesIsRotatedNotATrap() throws {
        let folder = try TemporaryDirectory(in: "/dev/shm", prefix: "rotation-huge")
        defer { folder.remove() }
        let url = folder.appending("app.log")
        let fd = open(url.path, O_WRONLY | O_CREAT, 0o600)
        try #require(fd >= 0)
        let sized = ftruncate(fd, off_t(Int.max - 10))
        close(fd)
        try #require(sized == 0, "tmpfs took no file of Int.max - 10 bytes: \(String(cString: strerror(errno)))")
        let file = try FileDestination(configuration: .init(url: url, retainedFileCount: 1))
        file.write(LogBatch(records: records(3)))
        file.shutdown()
        #expect(try messages(in: url.path) == ["event 0", "event 1", "event 2"])
        let rotated = try FileManager.default.attributesOfItem(atPath: url.path + ".1")[.size] as? Int
        #expect(rotated == Int.max - 10)
    }
}

/// Whether `chattr +i` works on a file in the temporary folder (root; a file system that takes the flag).
private let immutableFiles: Bool = {
    guard getuid() == 0, FileManager.default.fileExists(atPath: "/usr/bin/chattr"),
        let folder = try? TemporaryDirectory(prefix: "chattr-probe")
    else { return false }
    defer { folder.remove() }
    let file = folder.file("probe")
    guard FileManager.default.createFile(atPath: file, contents: nil) else { return false }
    guard chattr("+i", file) else { return false }
    return chattr("-i", file)
}()

/// Whether a file of `Int.max - 10` bytes can be made (sparse) in `/dev/shm`: a tmpfs there, writable.
private let hugeSparseFiles: Bool = {
    var template = Array("/dev/shm/justlog-sparse.XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { return false }
    defer {
        close(fd)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    }
    return ftruncate(fd, off_t(Int.max - 10)) == 0
}()

/// Counts, by name, the opens of files in a folder (`IN_CLOSE_WRITE` watched too, so that opens with a close between
/// them are not folded into one event; the kernel still folds two opens in a row).
/// A count of calls from any thread.
private final class TryCount: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add() { lock.withLock { value += 1 } }
    var count: Int { lock.withLock { value } }
}

private final class OpenWatch {
    private let watch: FolderWatch
    private var counts: [String: Int] = [:]

    init(_ folder: String) throws {
        watch = try FolderWatch(folder, mask: UInt32(IN_OPEN | IN_CLOSE_WRITE))
    }

    /// How many times `name` was opened since the watch began.
    func count(of name: String) -> Int {
        for event in watch.events() where event.mask & UInt32(IN_OPEN) != 0 { counts[event.name, default: 0] += 1 }
        return counts[name] ?? 0
    }
}
