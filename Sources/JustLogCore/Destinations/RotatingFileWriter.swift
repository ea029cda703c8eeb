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
struct RotatingFileWriter: Sendable {
    let path: String
    let maximumFileSize: Int
    let retainedFileCount: Int
    let retryInterval: Duration
    let diagnostics: DiagnosticSink

    private var descriptor: Int32 = -1
    private var size = 0
    private var identity: (device: UInt64, inode: UInt64)?
    private(set) var lostEvents: UInt64 = 0
    private(set) var lastError: JustLogError?

    init(path: String, maximumFileSize: Int, retainedFileCount: Int, retryInterval: Duration, diagnostics: DiagnosticSink) {
        self.path = path
        self.maximumFileSize = maximumFileSize
        self.retainedFileCount = retainedFileCount
        self.retryInterval = retryInterval
        self.diagnostics = diagnostics
    }

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
        let fd = systemOpen(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw JustLogError(.fileSystem, "cannot open the log file \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        fstat(fd, &info)
        descriptor = fd
        size = Int(info.st_size)
        identity = (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    mutating func close() {
        if descriptor >= 0 { systemClose(descriptor) }
        descriptor = -1
        identity = nil
    }

    /// Whether the open descriptor is still the file at `path` (it was not deleted, moved or rotated away).
    private func isStillAtPath() -> Bool {
        guard descriptor >= 0, let identity else { return false }
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return UInt64(info.st_dev) == identity.device && UInt64(info.st_ino) == identity.inode
    }

    // MARK: - Writing

    /// Appends whole lines, rotating between lines when the file would pass its size limit.
    /// `lossLine` makes the line that reports events lost to an earlier failure, once writing works again.
    mutating func append(lines: [[UInt8]], now: Duration, lossLine: (UInt64, String) -> [UInt8]) {
        if !isStillAtPath() {
            do {
                try open()
            } catch {
                fail(error, events: UInt64(lines.count))
                return
            }
        }
        if lostEvents > 0, let lastError {
            let report = lossLine(lostEvents, lastError.description)
            if writeChunk(report) {
                diagnostics.report("writing to \(path) works again; \(lostEvents) event(s) were lost")
                diagnostics.reset(key: "file.write.\(path)")
                lostEvents = 0
                self.lastError = nil
            } else {
                lostEvents += UInt64(lines.count)
                return
            }
        }
        var chunk: [UInt8] = []
        chunk.reserveCapacity(min(1 << 20, lines.reduce(0) { $0 + $1.count }))
        var linesInChunk = 0
        for (index, line) in lines.enumerated() {
            let pending = size + chunk.count
            if pending > 0, pending + line.count > maximumFileSize {
                if !chunk.isEmpty {
                    if !writeChunk(chunk) { lostEvents += UInt64(lines.count - index + linesInChunk); return }
                    chunk.removeAll(keepingCapacity: true)
                    linesInChunk = 0
                }
                rotate()
                if descriptor < 0 { lostEvents += UInt64(lines.count - index); return }
            }
            chunk.append(contentsOf: line)
            linesInChunk += 1
        }
        if !chunk.isEmpty, !writeChunk(chunk) {
            lostEvents += UInt64(linesInChunk)
        }
    }

    mutating func retryAfterFailure(now: Duration, lossLine: (UInt64, String) -> [UInt8]) -> JustLogError? {
        lastError
    }

    mutating func finish() {
        close()
    }

    /// Writes all of `bytes`; on failure records and reports the error once, and returns `false`.
    private mutating func writeChunk(_ bytes: [UInt8]) -> Bool {
        let failure = writeAll(descriptor, bytes)
        if let failure {
            let error = JustLogError(.fileSystem, "cannot write to the log file \(path): \(String(cString: strerror(failure)))")
            lastError = error
            diagnostics.reportOnce(key: "file.write.\(path)", "\(error.message); events are counted as lost until writing works again")
            return false
        }
        size += bytes.count
        return true
    }

    private mutating func fail(_ error: JustLogError, events: UInt64) {
        lastError = error
        lostEvents += events
        diagnostics.reportOnce(key: "file.write.\(path)", "\(error.message); events are counted as lost until writing works again")
    }

    // MARK: - Rotation

    /// `name` → `name.1`, `name.1` → `name.2`, …; the oldest past the retention count is deleted.
    private mutating func rotate() {
        close()
        if retainedFileCount == 0 {
            unlink(path)
        } else {
            unlink("\(path).\(retainedFileCount)")
            for index in stride(from: retainedFileCount - 1, through: 1, by: -1) {
                rename("\(path).\(index)", "\(path).\(index + 1)")
            }
            rename(path, "\(path).1")
        }
        do {
            try open()
        } catch {
            lastError = error
            diagnostics.reportOnce(key: "file.write.\(path)", "\(error.message); events are counted as lost until writing works again")
        }
    }
}
