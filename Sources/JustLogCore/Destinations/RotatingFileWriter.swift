import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file under a ``FileDestination``: an append-only descriptor, size rotation, and recovery when the
/// file disappears or a write fails. Not thread-safe on its own; its owner guards it with a lock.
///
/// Only a regular file is rotated: a path that names a FIFO or a device, or a process's stream (`/dev/stdout`,
/// `/dev/fd/N`, `/proc/…/fd/N`, a terminal) itself or through links (a container's usual `app.log -> /dev/stdout`,
/// whatever stdout is), is written to as it is, never renamed away. A write to a pipe waits while its reader does
/// not read, as a console's does; one whose reader went away fails with `EPIPE` (counted as lost), not `SIGPIPE`.
/// A rotation the file system refuses (a folder the program may not write in, a file in the way of a rotated name
/// that can't be moved) is reported once and tried again after the retry interval; meanwhile the file grows past
/// its limit (what a file-size limit then refuses is counted lost). A file the system lets grow no further than its
/// limit — the process's file-size limit (`ulimit -f`, read at each open), a file system's largest file (`EFBIG`) —
/// rotates there, said once; an event whose line alone is larger is lost alone (counted), and rotates nothing away.
/// (A file that is not rotated — a process's stream that is a regular file — treats `EFBIG` as any failed write.)
///
/// The file only ever holds whole lines. A write that a full disk (`ENOSPC`) or a file-size limit (`EFBIG`)
/// stops part-way is cut back to its last whole line; should even that fail, the next write starts with a
/// newline, so that only the torn line is damaged. Events whose line is not in the file are counted exactly,
/// and the count is written as a line of its own once writing works again.
struct RotatingFileWriter: Sendable {
    let path: String
    let maximumFileSize: Int
    let retainedFileCount: Int
    /// After a failure, how long batches are counted as lost without a write being tried.
    let retryInterval: Duration
    let diagnostics: DiagnosticSink
    /// Closes the descriptor of a file that rotation deleted (see ``rotate()``).
    let closer: DescriptorCloser
    /// Called each time a rotation is tried (tests count the tries).
    let onRotating: (@Sendable () -> Void)?

    /// Writing failed, and events were lost since it last worked.
    struct Failure: Sendable {
        /// The latest error.
        var error: JustLogError
        /// Events whose line is not in the file and that no line of the file reports yet.
        var lostEvents: UInt64
        /// Before this time (on the owner's clock) a batch is counted as lost without trying to write.
        var retryAt: Duration
        /// Writing works: the events lost are those whose line no file can take (``loseAlone(_:)``), or the line
        /// that says how many can't be written itself (``writeLossReport(_:now:)``). No error for a flush then.
        var writingWorks = false
        /// The count and the process's file-size limit when the report was found too long for the file: tried again
        /// only when either changed.
        var reportTooLong: (lost: UInt64, limit: Int?)?
    }

    private var descriptor: Int32 = -1
    /// Bytes in the file (at most ``largestSize``: a sparse file may claim up to `Int.max`, and sums with it trapped).
    private var size = 0
    /// The process's file-size limit (`ulimit -f`), if it has one: read at each open, before a rotation it would
    /// cause (a limit raised meanwhile rotates no more there) and before a line longer than it is lost.
    private var processLimit: Int?
    /// The size at which a write to the open file failed with `EFBIG` (a limit lowered while it was open, a file
    /// system's largest file), if one did.
    private var grewNoFurtherThan: Int?
    /// The open file is a regular file, rotated at ``maximumFileSize`` (anything else is written to as it is).
    private var rotates = true
    /// The open file is a pipe: its writes are kept from raising `SIGPIPE` (``withoutBrokenPipeSignal(_:)``).
    private var isPipe = false
    /// A rotation was refused: until then (on the owner's clock) the file is not rotated.
    private var rotationRetryAt: Duration?
    private var identity: (device: UInt64, inode: UInt64)?
    /// The file does not end with a newline (a torn line could not be cut away): the next write starts with one.
    private var endsMidLine = false
    private(set) var failure: Failure?
    /// Every event lost since the writer was created, reported in the file or not.
    private(set) var totalLostEvents: UInt64 = 0
    /// ``totalLostEvents`` when the diagnostics sink was last told the count, so that it is told only news.
    private var lastReportedTotal: UInt64 = 0

    init(
        path: String,
        maximumFileSize: Int,
        retainedFileCount: Int,
        retryInterval: Duration,
        diagnostics: DiagnosticSink,
        closer: DescriptorCloser = .background,
        onRotating: (@Sendable () -> Void)? = nil
    ) {
        self.path = path
        // As `FileDestination.Configuration`, its one caller, clamps them (and no larger than a size counts: on a
        // 32-bit `Int`, 512 MiB, review helper-55).
        self.maximumFileSize = min(maximumFileSize, Self.largestSize)
        self.retainedFileCount = retainedFileCount
        self.retryInterval = retryInterval
        self.diagnostics = diagnostics.withOwnReports()
        self.closer = closer
        self.onRotating = onRotating
    }

    /// The error that keeps events from the file, if any (none while writing works, with a loss still to report).
    var lastError: JustLogError? { failure?.writingWorks == true ? nil : failure?.error }

    // MARK: - Opening

    /// Opens the file for appending, creating it (0600) and its folder (0700) if needed.
    mutating func open() throws(JustLogError) {
        close()
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            do {
                try FileManager.default.createDirectory(
                    atPath: folder,
                    withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700]
                )
            } catch {
                throw JustLogError(.fileSystem, "cannot create the log folder \(folder)", cause: error)
            }
        }
        // Non-blocking to open: a FIFO no one reads would wait for a reader forever (review, helper-52); its writes
        // block as usual (the flag is cleared). A regular file under a lease answers `EAGAIN` then: opened again,
        // waiting, as before.
        // A symbolic link is followed only if this user or root made it (`/dev/stdout`, a log kept elsewhere): one
        // another user planted where the folder lets them (a shared or group-writable log folder) had log lines —
        // logged text included — appended to any file of this user's, a shell's start-up file among them, and a
        // torn last line cut there (review, helper-69).
        let flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY
        var followsLink = false
        var fd = systemOpen(path, flags | O_NONBLOCK | O_NOFOLLOW, 0o600)
        if fd < 0, errno == ELOOP {
            if let refusal = Self.linkRefusal(path) { throw refusal }
            followsLink = true
            fd = systemOpen(path, flags | O_NONBLOCK, 0o600)
        }
        if fd < 0, errno == EAGAIN || errno == EWOULDBLOCK {
            fd = systemOpen(path, flags | (followsLink ? 0 : O_NOFOLLOW), 0o600)
        }
        guard fd >= 0 else {
            throw JustLogError(.fileSystem, "cannot open the log file \(path): \(Self.openFailure(path, errno))")
        }
        let status = fcntl(fd, F_GETFL)
        if status >= 0, status & O_NONBLOCK != 0 { _ = fcntl(fd, F_SETFL, status & ~O_NONBLOCK) }
        var info = stat()
        fstat(fd, &info)
        // The link followed is the one checked: not one put in its place meanwhile (checked again, with what it
        // reaches).
        if followsLink {
            var reached = stat()
            let same = stat(path, &reached) == 0 && reached.st_dev == info.st_dev && reached.st_ino == info.st_ino
            let refusal =
                Self.linkRefusal(path)
                ?? (same ? nil : JustLogError(.fileSystem, "the log file \(path) changed while it was being opened"))
            if let refusal {
                systemClose(fd)
                throw refusal
            }
        }
        // What a link of this user's or root's leads to was chosen by them (`/dev/stdout` of `sudo -u app prog > out`
        // is the invoking user's file, or pipe): only what lies at the path itself is checked below.
        // A regular file of more than one link: perhaps a hard link another user made to a file of this user's (a
        // shell's start-up file) — where the kernel lets them (macOS; Linux without `protected_hardlinks`) — which
        // the lines would be appended to, and a torn line cut from (review, helper-73).
        let kind = info.st_mode & S_IFMT
        if !followsLink, kind == S_IFREG, info.st_nlink > 1 {
            systemClose(fd)
            throw JustLogError(
                .fileSystem,
                "the log file \(path) has \(info.st_nlink) links (another name for the same file, perhaps another user's hard link to a file of this user's); it is not written: remove that name, or log to a file of its own"
            )
        }
        // A regular file or a FIFO another user owns (made ahead, writable by this user) would hand them every line;
        // root's is trusted, and root may write anyone's (review, helper-69, helper-70).
        let user = geteuid()
        if !followsLink, kind == S_IFREG || kind == S_IFIFO, info.st_uid != user, info.st_uid != 0, user != 0 {
            systemClose(fd)
            throw JustLogError(
                .fileSystem,
                "the log file \(path) belongs to another user (uid \(info.st_uid); this program runs as uid \(user)); it is not written, for that user would read every line: remove it, or log to a file of this user's"
            )
        }
        descriptor = fd
        isPipe = kind == S_IFIFO
        rotates = kind == S_IFREG && !Self.namesAStream(path)
        size = rotates ? min(Int(clamping: info.st_size), Self.largestSize) : 0
        identity = (UInt64(info.st_dev), UInt64(info.st_ino))
        endsMidLine = size > 0 && !lastByteIsNewline()
        grewNoFurtherThan = nil
        readProcessLimit()
        #if canImport(Darwin)
        if isPipe { _ = fcntl(fd, F_SETNOSIGPIPE, 1) }
        #endif
    }

    /// Why the symbolic link at `path` is not followed — another user than this one or root made it — or `nil`.
    private static func linkRefusal(_ path: String) -> JustLogError? {
        var link = stat()
        guard lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK else { return nil }
        let user = geteuid()
        guard link.st_uid != user, link.st_uid != 0 else { return nil }
        return JustLogError(
            .fileSystem,
            "the log file \(path) is a symbolic link another user (uid \(link.st_uid)) made; it is not followed, for it could point at any file of this user's: remove it, or log elsewhere"
        )
    }

    /// The size past which the open file rotates: ``maximumFileSize``, or less where the file can't grow that far
    /// (review, helper-52: at a file-size limit below it the file stopped for good, every later line counted as
    /// lost).
    private var rotationSize: Int {
        max(1, min(maximumFileSize, processLimit ?? .max, grewNoFurtherThan ?? .max))
    }

    /// Reads the process's file-size limit into ``processLimit`` (said once when it is below the file's maximum).
    private mutating func readProcessLimit() {
        processLimit = rotates ? FileSizeLimit.current() : nil
        // (At or above the maximum it rotates nothing early; it still bounds a line: review, helper-59.)
        guard let limit = processLimit, limit < maximumFileSize else { return }
        diagnostics.reportOnce(
            key: "file.limit.\(path)",
            "the process's file-size limit (ulimit -f) is \(limit) bytes, below the log file's \(maximumFileSize)-byte maximum: \(path) rotates at \(max(1, limit)) bytes"
        )
    }

    /// The most ``size`` counts: far beyond any file, and sums with a line's length stay far from overflowing (a
    /// 32-bit `Int` included).
    static let largestSize = Int.max / 4

    /// Why `path` could not be opened (`code`: the `errno`): `ENXIO` names a FIFO no process reads, or a socket (a
    /// standard output that is one: `StandardOutput=journal`), which no file can be.
    private static func openFailure(_ path: String, _ code: Int32) -> String {
        var info = stat()
        if code == ENXIO, stat(path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFIFO: return "a FIFO that no process reads"
            case S_IFSOCK: return "a socket, which can't be opened as a file (the console destination writes to one)"
            default: break
            }
        }
        return String(cString: strerror(code))
    }

    /// Whether `path` names a process's stream — `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/…/fd/N`, a
    /// terminal — itself or through a symbolic link or a chain of them, relative or not (`app.log -> /dev/stdout`):
    /// the stream is never renamed away, even when it is a regular file (`app > out.log`). A link into `/dev/shm`
    /// is a file like any other (review, helper-55, helper-56).
    private static func namesAStream(_ path: String) -> Bool {
        var current = normalized(path)
        for _ in 0..<9 {
            if isStream(current) { return true }
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: current) else { return false }
            current = normalized(
                target.hasPrefix("/") ? target : (current as NSString).deletingLastPathComponent + "/" + target
            )
        }
        return false
    }

    /// Whether the absolute, normalized `path` is one of a process's streams.
    private static func isStream(_ path: String) -> Bool {
        if path == "/dev/stdout" || path == "/dev/stderr" || path == "/dev/console" { return true }
        if ["/dev/fd/", "/dev/tty", "/dev/pts/"].contains(where: path.hasPrefix) { return true }
        let parts = path.split(separator: "/")
        return parts.count == 4 && parts[0] == "proc" && parts[2] == "fd"
    }

    /// `path` made absolute (from the working folder) with its `.` and `..` taken away — by hand: Foundation's
    /// standardizing would follow the links.
    private static func normalized(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var parts: [Substring] = []
        for part in absolute.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(part) }
        }
        return "/" + parts.joined(separator: "/")
    }

    mutating func close() {
        if descriptor >= 0 { systemClose(descriptor) }
        descriptor = -1
        identity = nil
    }

    /// Whether the open descriptor is still the file at `path` (it was not deleted, moved or rotated away). Only a
    /// path that names nothing (`ENOENT`, `ENOTDIR`) or another file says it was: a folder the program may no longer
    /// search (`EACCES`), a file server that hiccups (`ESTALE`, `EIO`) says nothing about the file it writes, which
    /// goes on working — closing it for a reopen that fails too lost every line (review, helper-52) — unless it was
    /// deleted (no link left).
    private func isStillAtPath() -> Bool {
        guard descriptor >= 0, let identity else { return false }
        var info = stat()
        guard stat(path, &info) == 0 else {
            // (A file deleted meanwhile — by logrotate, where the program can't look — is not written to for ever.)
            guard errno != ENOENT, errno != ENOTDIR else { return false }
            return fstat(descriptor, &info) == 0 && info.st_nlink > 0
        }
        return UInt64(info.st_dev) == identity.device && UInt64(info.st_ino) == identity.inode
    }

    /// Whether the file at `path` ends with a newline (or cannot be read, which is taken as yes): a file left
    /// with a torn last line by a program killed mid-write, or by a full disk, gets its next line on its own.
    private func lastByteIsNewline() -> Bool {
        let reader = systemOpen(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0)
        guard reader >= 0 else { return true }
        defer { systemClose(reader) }
        var last: UInt8 = 0
        guard size > 0, pread(reader, &last, 1, off_t(size - 1)) == 1 else { return true }
        return last == UInt8(ascii: "\n")
    }

    // MARK: - Recovering

    /// The `event_id`s of the file's last `limit` whole lines that have one, newest first — going on into the newest
    /// rotated file when the file holds fewer — after cutting away a torn last line (left by a program killed
    /// mid-write; its event is in the journal and is written again whole). Empty if there is none or it can't be
    /// read. The cut is made only while the open file is the one at the path, which it measures: a file rotated away
    /// since the open (logrotate at boot) was cut at the new file's length — to nothing (review, helper-66).
    mutating func newestEventIDs(upTo limit: Int) -> [String] {
        if descriptor >= 0, endsMidLine, isStillAtPath(), let whole = Self.lastNewline(in: path, size: size) {
            if ftruncate(descriptor, off_t(whole)) == 0 {
                size = min(whole, Self.largestSize)
                endsMidLine = false
            }
        }
        var ids: [String] = []
        for candidate in [path, "\(path).1"] {
            guard let tail = Self.readTail(of: candidate, maximum: 8 << 20), tail.bytes.last == UInt8(ascii: "\n")
            else {
                if candidate == path, size > 0 { return [] }
                continue
            }
            let whole = tail.bytes.count == tail.size
            let (found, readAll) = Self.eventIDs(
                inLastLinesOf: tail.bytes.dropLast(),
                wholeFile: whole,
                upTo: limit - ids.count
            )
            ids += found
            // The rotated file's newest lines come before the file's first: read on only past every line of this.
            guard readAll, ids.count < limit else { break }
        }
        return ids
    }

    /// How many bytes of the file come before and with its last newline, or `nil` if unreadable.
    private static func lastNewline(in path: String, size: Int) -> Int? {
        guard let tail = readTail(of: path, maximum: 8 << 20) else { return nil }
        guard let last = tail.bytes.lastIndex(of: UInt8(ascii: "\n")) else {
            return tail.bytes.count == tail.size ? 0 : nil
        }
        return tail.size - tail.bytes.count + last + 1
    }

    /// The `metadata.event_id`s of the last `limit` lines of `text` (whole lines, the last newline cut away) that
    /// have one, newest first, and whether every line of the `wholeFile` was read. Unless `text` is the `wholeFile`,
    /// its first line may be cut (a tail): it is not read.
    private static func eventIDs(
        inLastLinesOf text: ArraySlice<UInt8>,
        wholeFile: Bool,
        upTo limit: Int
    ) -> (ids: [String], readAll: Bool) {
        var ids: [String] = []
        var end = text.endIndex
        var lines = 0
        /// The walk read the text's first line (or found nothing before the last newline it passed).
        var reachedStart = end == text.startIndex
        while lines < limit, end > text.startIndex {
            let newline = text[..<end].lastIndex(of: UInt8(ascii: "\n"))
            // Without a newline before it, the line starts the text: whole only if the text is the whole file.
            if newline == nil, !wholeFile { break }
            let start = newline.map { $0 + 1 } ?? text.startIndex
            let line = text[start..<end]
            lines += 1
            if let brace = line.firstIndex(of: UInt8(ascii: "{")),
                case .object(let fields)? = try? JSONReader.parse(bytes: Array(line[brace...])),
                case .object(let metadata)? = fields[AggregatedFormat.metadataKey],
                case .string(let id)? = metadata[MetadataKey.eventID]
            {
                ids.append(id)
            }
            guard let newline else {
                reachedStart = true
                break
            }
            end = newline
            reachedStart = end == text.startIndex
        }
        return (ids, wholeFile && reachedStart)
    }

    /// The last `maximum` bytes of a file, and its size.
    private static func readTail(of path: String, maximum: Int) -> (bytes: [UInt8], size: Int)? {
        // Only a regular file is read (a FIFO with no writer would wait for one; a device may do anything on an open),
        // and it is opened without waiting (a lease).
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let reader = systemOpen(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0)
        guard reader >= 0 else { return nil }
        defer { systemClose(reader) }
        guard fstat(reader, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int(clamping: info.st_size)
        let count = min(size, maximum)
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { pread(reader, $0.baseAddress, count, off_t(size - count)) }
        guard read == count else { return nil }
        return (bytes, size)
    }

    // MARK: - Writing

    /// Appends whole lines, rotating between lines when the file would pass its size limit. `now` is the
    /// owner's clock, for the retry interval after a failure. `lossLine` makes the line that reports events lost
    /// to an earlier failure; it is written before the batch once writing works again.
    mutating func append(lines: LineBatch, now: Duration, lossLine: (UInt64, String) -> [UInt8]) {
        guard lines.count > 0 else { return }
        if let failure, now < failure.retryAt {
            // Still failing, as far as we know: count without a system call.
            lose(UInt64(lines.count))
            return
        }
        if let error = prepare(lossLine, now: now) {
            fail(error, losing: lines.count, now: now)
            return
        }
        let lostBefore = totalLostEvents
        let (done, error, _) = writeRotating(lines, now: now, events: true)
        // (Lines lost alone are among `done`: "works again" needs a line written — helper-61.)
        let written = done - Int(totalLostEvents - lostBefore)
        if let error {
            fail(error, losing: lines.count - done, now: now)
        } else if written > 0, let failure, !failure.writingWorks {
            // Lines were written while the report of an earlier failure can't be (too long for the file): writing
            // works again, and a flush has no error to return for it (helper-59). The count is said here, once.
            self.failure?.writingWorks = true
            self.failure?.retryAt = .zero
            lastReportedTotal = totalLostEvents
            diagnostics.report(
                "writing to \(path) works again; \(failure.lostEvents) event(s) were lost (not said in the file: the line that would say so is longer than it can take)"
            )
            diagnostics.reset(key: "file.write.\(path)")
        }
    }

    /// Writes `lines` in order, rotating between them when the file would pass its size. Returns how many were
    /// dealt with — written, or, for `events`, lost alone — and the error that stopped the next one, if any, and
    /// whether that line is one no file can take (`unfit`; only when not `events`).
    ///
    /// A line no file can take — longer than the process's file-size limit, or refused with `EFBIG` by an empty file
    /// — is not written and rotates nothing away (review, helper-57: each such line deleted the oldest retained
    /// file, a restart loop under `ulimit -f 0` the whole history): an event's is counted lost alone and the lines
    /// after it go on (see ``loseAlone(_:)``); the loss report's stops the write. A write that fails with `EFBIG`
    /// in a file that is not empty rotates it there (see ``grewNoFurther(than:)``) and goes on in the new one.
    private mutating func writeRotating(
        _ lines: LineBatch,
        now: Duration,
        events: Bool
    ) -> (done: Int, error: JustLogError?, unfit: Bool) {
        var start = 0
        var limited = rotates && rotationRetryAt.map { now >= $0 } ?? true
        /// The line at which a write failed with `EFBIG` and the file was rotated for it: a second `EFBIG` there,
        /// in a file that is not empty, is not rotated for again.
        var grewNoFurtherAt: Int?
        while start < lines.count {
            let length = lines.length(of: start)
            if let limit = processLimit, length > limit {
                // The limit read again first: one raised since it was read takes the line.
                readProcessLimit()
                if let processLimit, length > processLimit {
                    guard events else { return (start, tooLarge(length, limit: processLimit), true) }
                    loseAlone(tooLarge(length, limit: processLimit))
                    start += 1
                    continue
                }
            }
            if limited, needsRotation(before: length) {
                switch rotate(now: now) {
                case .rotated: break
                case .refused: limited = false
                case .failed(let error): return (start, error, false)
                }
            }
            // The lines that fit in the current file (all of them, if it is not rotated), in one write.
            var end = start + 1
            if limited {
                var pending = size + length
                while end < lines.count, pending + lines.length(of: end) <= rotationSize {
                    pending += lines.length(of: end)
                    end += 1
                }
            } else {
                end = lines.count
            }
            let (whole, errorNumber) = write(lines, start..<end)
            guard let errorNumber else {
                start = end
                continue
            }
            start += whole
            if errorNumber == EFBIG, limited {
                // A limit lowered since it was read: a line longer than it is lost alone at the loop's top, and
                // rotates nothing away (review, helper-58).
                readProcessLimit()
                if let processLimit, lines.length(of: start) > processLimit { continue }
                if size > 0, grewNoFurtherAt != start {
                    // The file can grow no further: it rotates here (the loop's check), and the rest goes on.
                    grewNoFurtherAt = start
                    grewNoFurther(than: size)
                    continue
                }
                if size == 0 {
                    guard events else { return (start, tooLarge(lines.length(of: start), limit: nil), true) }
                    loseAlone(tooLarge(lines.length(of: start), limit: nil))
                    start += 1
                    continue
                }
            }
            return (start, writeError(errorNumber), false)
        }
        return (start, nil, false)
    }

    /// Why a line of `length` bytes can't be written to any file: `limit`, the process's file-size limit, or the
    /// file system's.
    private func tooLarge(_ length: Int, limit: Int?) -> JustLogError {
        let why =
            limit.map { "the process's file-size limit (ulimit -f), \($0) bytes" }
            ?? "what the file system lets it hold (EFBIG)"
        return JustLogError(.fileSystem, "a line of \(length) bytes is more than \(path) can take: \(why)")
    }

    /// An event whose line no file can take is lost alone: counted (the file says how many at its next batch), said
    /// once on the diagnostics sink, without holding back the lines after it or the next batch — no retry time (a
    /// batch whose clock was read before this one's must not wait: helper-58), and no "works again" once written.
    private mutating func loseAlone(_ error: JustLogError) {
        if failure == nil { failure = Failure(error: error, lostEvents: 0, retryAt: .zero, writingWorks: true) }
        lose(1)
        diagnostics.reportOnce(
            key: "file.too-long.\(path)",
            "\(error.message); such an event is lost alone and counted, and the file says how many"
        )
    }

    /// Whether a line of `length` bytes starts a new file: the open one is not empty and would pass
    /// ``rotationSize``. Its size is read again first (one `fstat`, only at that point): a file emptied under it
    /// (logrotate's `copytruncate`) is not rotated away (review, helper-52).
    private mutating func needsRotation(before length: Int) -> Bool {
        guard size > 0, size + length > rotationSize else { return false }
        if processLimit != nil { readProcessLimit() }
        var info = stat()
        if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
            size = min(Int(clamping: info.st_size), Self.largestSize)
        }
        return size > 0 && size + length > rotationSize
    }

    /// A write failed with `EFBIG` with `size` bytes in the file (a file-size limit lowered while it was open; a
    /// file system's largest file): the file rotates there (said once), the next one at its own limit.
    private mutating func grewNoFurther(than size: Int) {
        grewNoFurtherThan = size
        diagnostics.reportOnce(
            key: "file.efbig.\(path)",
            "the file system lets \(path) grow no further than \(size) bytes (EFBIG: a file-size limit, or the largest file it holds), below its \(maximumFileSize)-byte maximum: it is rotated there"
        )
    }

    /// After a failure, tries now (whatever the retry interval) to write the line that reports the loss, and
    /// tells the diagnostics sink about losses it has not heard of yet if that fails too. Returns the error that
    /// is still in the way.
    mutating func retryAfterFailure(now: Duration, lossLine: (UInt64, String) -> [UInt8]) -> JustLogError? {
        guard failure != nil else { return nil }
        if let error = prepare(lossLine, now: now) {
            fail(error, losing: 0, now: now)
            reportPendingLoss()
        } else if failure != nil {
            // Writing works, but the line that says how many were lost can't be written: said here.
            reportPendingLoss()
        }
        return lastError
    }

    /// Closes the file for good, first telling the diagnostics sink about losses no line of the file reports.
    mutating func finish() {
        if failure != nil { reportPendingLoss() }
        close()
        // No deleted file outlives the destination (a volume unmounted after the program shut its logger down).
        closer.drain()
    }

    /// Before writing: opens the file again if it is not open or no longer at `path`, then writes the line that
    /// reports an earlier loss; returns the error if either fails.
    private mutating func prepare(_ lossLine: (UInt64, String) -> [UInt8], now: Duration) -> JustLogError? {
        if !isStillAtPath() {
            // Another file now: a refused rotation of the one before says nothing about it.
            rotationRetryAt = nil
            do {
                try open()
            } catch {
                return error
            }
        }
        return writeLossReport(lossLine, now: now)
    }

    /// Writes the line that reports the pending loss, if any — rotating first if the file is full (review,
    /// helper-57: at its size limit the report never fit, and every later line was lost) — and clears the failure;
    /// returns the error if the line could not be written. A report longer than the file can take leaves the loss
    /// pending and the way clear.
    private mutating func writeLossReport(_ lossLine: (UInt64, String) -> [UInt8], now: Duration) -> JustLogError? {
        guard let failure else { return nil }
        if failure.lostEvents > 0 {
            if let tooLong = failure.reportTooLong, tooLong.lost == failure.lostEvents,
                tooLong.limit == FileSizeLimit.current()
            {
                return nil
            }
            let line = LineBatch(line: lossLine(failure.lostEvents, failure.error.description))
            let (_, error, unfit) = writeRotating(line, now: now, events: false)
            if unfit {
                // The report itself is longer than the file can take: writing goes on (helper-58: it failed every
                // batch until exit), the report waits for a limit raised or a count that changed, and the count is
                // said on the diagnostics sink at each flush and at the end. Whether writing works again is for the
                // batch's lines to show (``append(lines:now:lossLine:)``; helper-60: said here, a flush said so
                // while every write still failed).
                self.failure?.reportTooLong = (failure.lostEvents, FileSizeLimit.current())
                diagnostics.reportOnce(
                    key: "file.report-too-long.\(path)",
                    "the line that says how many events were lost can't be written to \(path) (\(error?.message ?? "")): the count is said here at each flush and at the end"
                )
                return nil
            } else if let error {
                return error
            } else if !failure.writingWorks {
                diagnostics.report("writing to \(path) works again; \(failure.lostEvents) event(s) were lost")
            }
        }
        if !failure.writingWorks { diagnostics.reset(key: "file.write.\(path)") }
        lastReportedTotal = totalLostEvents
        self.failure = nil
        return nil
    }

    /// Writes the lines `range` of `lines` in one go. Returns how many of them are whole in the file and, if not
    /// all, the error's number: the part of a line that a full disk or a file-size limit let through is cut away
    /// again.
    private mutating func write(_ lines: LineBatch, _ range: Range<Int>) -> (whole: Int, errorNumber: Int32?) {
        if endsMidLine {
            // The torn line that could not be cut away ends here, so that the next line is whole.
            let (written, errorNumber) = [UInt8(ascii: "\n")].withUnsafeBytes { put($0) }
            if let errorNumber { return (0, errorNumber) }
            grow(by: written)
            endsMidLine = false
        }
        let start = lines.start(of: range.lowerBound)
        let (written, errorNumber) = lines.bytes.withUnsafeBytes { bytes in
            put(UnsafeRawBufferPointer(rebasing: bytes[start..<lines.ends[range.upperBound - 1]]))
        }
        guard let errorNumber else {
            grow(by: written)
            return (range.count, nil)
        }
        let whole = lines.ends[range].prefix { $0 - start <= written }.count
        let kept = whole > 0 ? lines.ends[range.lowerBound + whole - 1] - start : 0
        if written > kept, !cutBack(written - kept) {
            // The torn line stays; its event is counted as lost, and the next write starts a new line.
            grow(by: written)
            endsMidLine = true
        } else {
            grow(by: kept)
        }
        return (whole, errorNumber)
    }

    /// Writes as much of `bytes` as the file takes (see `writePrefix`); to a pipe, without `SIGPIPE`.
    private func put(_ bytes: UnsafeRawBufferPointer) -> (written: Int, error: Int32?) {
        isPipe ? Self.withoutBrokenPipeSignal { writePrefix(descriptor, bytes) } : writePrefix(descriptor, bytes)
    }

    /// Runs `write` (a write to a pipe) so that a reader gone makes it fail with `EPIPE` instead of killing the
    /// program with `SIGPIPE`, changing nothing process-wide (review, helper-54): on Linux the signal is blocked
    /// for this thread around the write and the one it raised taken back; on Apple's platforms the descriptor says
    /// so once (`F_SETNOSIGPIPE`, at ``open()``).
    private static func withoutBrokenPipeSignal(
        _ write: () -> (written: Int, error: Int32?)
    ) -> (written: Int, error: Int32?) {
        #if !canImport(Darwin) && !os(Windows)
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var pending = sigset_t()
        sigpending(&pending)
        let alreadyPending = sigismember(&pending, SIGPIPE) == 1
        let result = write()
        if result.error == EPIPE, !alreadyPending {
            var now = timespec()
            while sigtimedwait(&pipeSignal, nil, &now) == -1, errno == EINTR {}
        }
        return result
        #else
        return write()
        #endif
    }

    /// Counts `count` bytes written (up to ``largestSize``; nothing is counted for what is not rotated).
    private mutating func grow(by count: Int) {
        if rotates { size = min(size + count, Self.largestSize) }
    }

    private func writeError(_ errorNumber: Int32) -> JustLogError {
        JustLogError(.fileSystem, "cannot write to the log file \(path): \(String(cString: strerror(errorNumber)))")
    }

    /// Truncates the file by the `count` bytes just written at its end; returns whether that worked.
    private func cutBack(_ count: Int) -> Bool {
        // With O_APPEND the offset after a write is the end of what it wrote.
        let end = lseek(descriptor, 0, SEEK_CUR)
        guard end >= off_t(count) else { return false }
        return ftruncate(descriptor, end - off_t(count)) == 0
    }

    /// Records a failed attempt: `count` more events lost, no new attempt before the retry interval, the
    /// error reported once on the diagnostics sink (until writing works again).
    private mutating func fail(_ error: JustLogError, losing count: Int, now: Duration) {
        let retryAt = now + retryInterval
        if failure == nil {
            failure = Failure(error: error, lostEvents: 0, retryAt: retryAt)
        } else {
            failure?.error = error
            failure?.retryAt = retryAt
            failure?.writingWorks = false
            failure?.reportTooLong = nil
        }
        lose(UInt64(max(0, count)))
        diagnostics.reportOnce(
            key: "file.write.\(path)",
            "\(error.message); events are counted as lost until writing works again"
        )
    }

    private mutating func lose(_ count: UInt64) {
        failure?.lostEvents += count
        totalLostEvents += count
    }

    /// Tells the diagnostics sink how many events are missing from the file, if that changed since it was last
    /// told: while the file cannot be written, no line in it can say so.
    private mutating func reportPendingLoss() {
        guard let failure, totalLostEvents != lastReportedTotal else { return }
        lastReportedTotal = totalLostEvents
        diagnostics.report(
            "\(totalLostEvents) event(s) lost writing to \(path) so far, \(failure.lostEvents) of them not yet reported in the file: \(failure.error.message)"
        )
    }

    // MARK: - Rotation

    /// A descriptor that keeps the regular file at `path` alive across its `unlink`, or -1: when it is anything else
    /// (a FIFO, a device, a symbolic link: nothing is opened), or when its disk is short of space — rotation is how
    /// the file gets space back, and the next write must find it there, not wait for another thread's close.
    private func descriptorHoldingForDeletion(_ path: String) -> Int32 {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return -1 }
        var disk = statvfs()
        let (needed, overflow) = UInt64(maximumFileSize).multipliedReportingOverflow(by: 2)
        guard statvfs(path, &disk) == 0, !overflow else { return -1 }
        let (available, plenty) = UInt64(disk.f_bavail).multipliedReportingOverflow(by: UInt64(disk.f_frsize))
        guard plenty || available >= needed else { return -1 }
        #if os(Linux)
        // O_PATH (not in Swift's Glibc module): a reference to the file, not an open of it — no read permission
        // needed, nothing a security module or a scanner hooks on open.
        let flags: Int32 = 0o10_000_000 | O_NOFOLLOW | O_CLOEXEC
        #else
        let flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC
        #endif
        return systemOpen(path, flags, 0)
    }

    /// What ``rotate(now:)`` did.
    private enum Rotation {
        /// The file was renamed (or deleted), and a new one opened.
        case rotated
        /// The file system refused a rename or the deletion: the file stays where it is, open (as it was), and grows
        /// past its limit until ``rotationRetryAt`` (said once on the diagnostics sink).
        case refused
        /// The new file could not be opened.
        case failed(JustLogError)
    }

    /// `name` → `name.1`, `name.1` → `name.2`, …; the oldest past the retention count is deleted — only when every
    /// retained name is taken: a gap (a rotation refused part-way left one) takes the shift instead, and nothing is
    /// deleted (review, helper-54: each retry of a refused rotation deleted one more retained file). A rename or a
    /// deletion the file system refuses stops the shift there — a rename after it would overwrite a retained file
    /// — and the file stays; it is tried again after the retry interval (review, helper-52: the renames' results
    /// were not read, the file was reopened where it was, and every later line tried the whole rotation again,
    /// silently, while the file grew without bound).
    ///
    /// The kernel frees a deleted file — drops its cached pages, releases its blocks — when its last descriptor
    /// closes: for a 10 MiB file, ~7 % of the pipeline's thread at 1.5 M events a second (BENCHMARKS part 26). So
    /// the file to delete is held open across its `unlink` (``descriptorHoldingForDeletion(_:)``) and
    /// ``closer`` closes it, on its own queue; the file is gone from the folder at once, as before.
    private mutating func rotate(now: Duration) -> Rotation {
        onRotating?()
        // The first retained name that is free, if any: the shift stops there.
        let gap = (1...max(1, retainedFileCount)).first { index in
            var info = stat()
            return lstat("\(path).\(index)", &info) != 0 && errno == ENOENT
        }
        let deleted = retainedFileCount == 0 ? path : gap == nil ? "\(path).\(retainedFileCount)" : nil
        let held = deleted.map(descriptorHoldingForDeletion) ?? -1
        // The open file is renamed open: refused, it stays open where it is (review, helper-57: closed first, it was
        // reopened — in a folder the program can no longer search, refused too, and every line was lost).
        var refusal = deleted.flatMap { deleted in Self.refusal(of: "delete \(deleted)") { unlink(deleted) } }
        if retainedFileCount > 0 {
            for index in stride(from: gap ?? retainedFileCount, through: 1, by: -1) where refusal == nil {
                let from = index == 1 ? path : "\(path).\(index - 1)"
                let to = "\(path).\(index)"
                refusal = Self.refusal(of: "rename \(from) to \(to)") { rename(from, to) }
            }
        }
        let key = "file.rotate.\(path)"
        guard let refusal else {
            // The working descriptor first: the one held for the deletion is then the file's last, closed on the
            // closer's queue (with no file kept, the deleted file is the open one: helper-58).
            close()
            if held >= 0 { closer.close(held) }
            do {
                try open()
            } catch {
                return .failed(error)
            }
            rotationRetryAt = nil
            diagnostics.reset(key: key)
            return .rotated
        }
        // (The file itself is the shift's last rename: refused anywhere, it was not moved.)
        if held >= 0 { closer.close(held) }
        rotationRetryAt = now + retryInterval
        diagnostics.reportOnce(
            key: key,
            "cannot rotate the log file: can't \(refusal); it grows past its \(maximumFileSize)-byte limit until rotation works (tried again every \(retryInterval))"
        )
        return .refused
    }

    /// `nil` if `call` (an `unlink` or a `rename`) worked or found nothing to move; else what was refused, and why.
    private static func refusal(of action: @autoclosure () -> String, _ call: () -> Int32) -> String? {
        guard call() != 0 else { return nil }
        let error = errno
        guard error != ENOENT else { return nil }
        return "\(action()) (\(String(cString: strerror(error))))"
    }
}
