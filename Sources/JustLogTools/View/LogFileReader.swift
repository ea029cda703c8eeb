import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a log file line by line with `read(2)`, remembering where it stopped, so it can be read again
/// as the file grows and follow it when it is rotated (`tail -F`).
///
/// Used by one task at a time (`justlog view`, `justlog ship`); not thread-safe.
package final class LogFileReader {
    /// One line, without its `\n` (nor a trailing `\r`).
    struct Line {
        /// 1 for the first line of the file.
        var number: Int
        var bytes: [UInt8]
        /// The byte offset just after the line's `\n` (or after its last byte at the end of the file).
        var endOffset: Int
        /// Longer than ``LogFileReader/maxLineBytes``: ``bytes`` is empty, the line was skipped.
        var tooLong = false
    }

    /// What `stat` says about the file at the path now, compared with the one open.
    enum PathState: Equatable {
        /// The same file, with `size` bytes.
        case same(size: Int)
        /// Another file is at the path (the open one was rotated away, or deleted and recreated).
        case replaced
        /// Nothing is at the path (rotated away, the new one not created yet).
        case missing
    }

    /// The longest line kept; a longer one is reported as too long (memory stays bounded).
    static let maxLineBytes = 16 << 20

    package let path: String
    private(set) var device: UInt64
    private(set) var inode: UInt64
    /// Bytes consumed up to the end of the last complete line returned.
    private(set) var offset: Int
    private(set) var lineNumber: Int
    private var fd: Int32
    private var pending: [UInt8] = []
    private var readOffset: Int
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)
    /// Inside an over-long line: its bytes are dropped up to the next `\n`.
    private var skipping = false

    /// Opens `path` and positions at `offset` (a line boundary from an earlier run), counting `lineNumber`
    /// lines before it.
    package convenience init(path: String, offset: Int = 0, lineNumber: Int = 0) throws {
        try self.init(path: path, offset: offset, lineNumber: lineNumber, nilIfMissing: false)!
    }

    /// Opens `path` if there is a file there, from its beginning: `nil` if there is none (`ENOENT`: between a
    /// rotation's rename and the new file), throws if there is one that can't be read.
    static func openIfPresent(_ path: String) throws -> LogFileReader? {
        try LogFileReader(path: path, offset: 0, lineNumber: 0, nilIfMissing: true)
    }

    private init?(path: String, offset: Int, lineNumber: Int, nilIfMissing: Bool) throws {
        // Non-blocking to open: a FIFO with no writer kept the open waiting, past Ctrl-C (review, helper-72); its
        // reads block as usual (the flag is cleared).
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let error = errno
            if nilIfMissing && error == ENOENT { return nil }
            let reason = String(cString: strerror(error))
            throw ToolError("\(path): \(reason); give the path of a log file written by the file destination")
        }
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        var info = stat()
        fstat(fd, &info)
        if (info.st_mode & S_IFMT) == S_IFDIR {
            _ = close(fd)
            throw ToolError("\(path) is a folder; give the path of a log file written by the file destination")
        }
        self.path = path
        self.fd = fd
        self.device = UInt64(info.st_dev)
        self.inode = UInt64(info.st_ino)
        let start = min(max(0, offset), Int(info.st_size))
        if start > 0 { lseek(fd, off_t(start), SEEK_SET) }
        self.offset = start
        self.readOffset = start
        self.lineNumber = start > 0 ? lineNumber : 0
    }

    deinit {
        if fd >= 0 { _ = close(fd) }
    }

    /// The size of the open file now.
    var openFileSize: Int {
        var info = stat()
        fstat(fd, &info)
        return Int(info.st_size)
    }

    /// Reads what is available now, up to about `maxBytes`, and returns the complete lines in it;
    /// `nil` at the end of the file (nothing more to read now).
    func readLines(maxBytes: Int = 1 << 20) -> [Line]? {
        var lines: [Line] = []
        var consumed = 0
        while consumed < maxBytes {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            consumed += count
            split(count: count, into: &lines)
        }
        if consumed == 0 { return nil }
        return lines
    }

    /// At the end of the file: the last line if it has no `\n` (a file that won't grow any more).
    func finishPartialLine() -> Line? {
        defer {
            pending.removeAll()
            skipping = false
        }
        guard !pending.isEmpty, !skipping else { return nil }
        lineNumber += 1
        offset = readOffset
        return Line(number: lineNumber, bytes: Self.trimmed(pending), endOffset: readOffset)
    }

    /// Compares the file at the path with the open one.
    func pathState() -> PathState {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        if UInt64(info.st_dev) != device || UInt64(info.st_ino) != inode { return .replaced }
        return .same(size: Int(info.st_size))
    }

    /// The open file was truncated (copytruncate): start again from its beginning.
    func restartFromBeginning() {
        lseek(fd, 0, SEEK_SET)
        pending.removeAll()
        skipping = false
        offset = 0
        readOffset = 0
        lineNumber = 0
    }

    /// After a rotation, the files rotated *after* the open one and before `newest`, oldest first —
    /// `path.(N-1)` … `path.1` when the open file is now `path.N` — opened now, so that a reader that fell behind
    /// several rotations reads each of them instead of skipping to the newest. `newest` is the file at the path,
    /// opened *before* this look-up: if it was rotated meanwhile it is among those names, and it and what came
    /// after it are left out (they are read by following `newest`). Opened the other way round, a rotation between
    /// the look-up and the opening of the new file skipped a whole file. `nil` when the open file is no longer
    /// among `path.1` … `path.<limit>` (deleted, or rotated past the retention), or the names kept shifting under
    /// three look-ups: which files it missed can't be known.
    package func filesRotatedAfterThisOne(before newest: LogFileReader, limit: Int = 1000) -> [LogFileReader]? {
        for _ in 0..<3 {
            guard let position = (1...limit).first(where: { isThisFile("\(path).\($0)") }) else { return nil }
            var newer = (1..<position).reversed().compactMap { try? LogFileReader(path: "\(path).\($0)") }
            // A rotation between the look-up and the opens shifts every name: look again.
            guard isThisFile("\(path).\(position)"), newer.count == position - 1 else { continue }
            if let index = newer.firstIndex(where: { $0.device == newest.device && $0.inode == newest.inode }) {
                newer.removeSubrange(index...)
            }
            return newer
        }
        return nil
    }

    /// Whether the file at `other` is the open one (same device and inode).
    private func isThisFile(_ other: String) -> Bool {
        var info = stat()
        guard stat(other, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    // MARK: - Splitting

    private func split(count: Int, into lines: inout [Line]) {
        var start = 0
        buffer.withUnsafeBufferPointer { bytes in
            while start < count {
                let newline = bytes[start..<count].firstIndex(of: UInt8(ascii: "\n"))
                let end = newline ?? count
                if !skipping {
                    if pending.count + (end - start) > Self.maxLineBytes {
                        skipping = true
                        pending.removeAll()
                    } else {
                        pending.append(contentsOf: bytes[start..<end])
                    }
                }
                readOffset += end - start
                guard newline != nil else { break }
                readOffset += 1
                lineNumber += 1
                if skipping {
                    skipping = false
                    lines.append(Line(number: lineNumber, bytes: [], endOffset: readOffset, tooLong: true))
                } else {
                    lines.append(Line(number: lineNumber, bytes: Self.trimmed(pending), endOffset: readOffset))
                }
                pending.removeAll(keepingCapacity: true)
                offset = readOffset
                start = end + 1
            }
        }
    }

    private static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        bytes.last == UInt8(ascii: "\r") ? Array(bytes.dropLast()) : bytes
    }
}
