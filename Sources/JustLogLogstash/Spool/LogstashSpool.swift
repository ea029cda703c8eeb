#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The Logstash destination's on-disk queue: records are appended on the logging caller's thread and
/// read, sent and acknowledged by the sender, in order, across restarts of the program.
///
/// The spool is a folder of segment files (`00000000000000000001.seg`, …), each mapped into memory with
/// `MAP_SHARED`, and a `cursor` file holding the position of the oldest record not yet acknowledged.
///
/// ## Crash safety
/// ``append(_:)`` copies the record into the shared mapping and returns: no system call per record. The
/// page belongs to the kernel's page cache, so once `append` returns, the record survives the process
/// being killed (even `SIGKILL`) and the next ``LogstashSpool`` opened on the folder finds it. A crash of
/// the operating system or a power loss before the kernel writes the page back may lose recent records:
/// that is out of scope (it would need an `msync` per record).
///
/// A record torn by a crash in the middle of ``append(_:)`` fails its CRC-32 and marks the end of the
/// segment when the spool is opened again.
///
/// ## Size cap
/// When a new segment would take the spool past ``Configuration/maxTotalBytes``, the oldest segment is
/// deleted, and its records that were not yet acknowledged are counted in ``SpoolCounters/droppedRecords``
/// and in ``takeDropsToReport()``.
///
/// ## Threads
/// Every method may be called from any thread; one lock guards the files and counters. One process only
/// per folder: two processes appending to the same folder corrupt it.
///
/// ```swift
/// let spool = try LogstashSpool(configuration: .init(directory: "/var/log/app/app.log.spool"))
/// try spool.append(Array(#"{"message":"hello","event_id":"1"}"#.utf8))
/// let batch = spool.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 1000)
/// // … send batch.bytes, then, once delivery is proven:
/// spool.acknowledge(upTo: batch.end)
/// ```
public final class LogstashSpool: @unchecked Sendable {
    /// Where the spool lives and how big it may grow.
    public struct Configuration: Sendable {
        /// The spool's folder; created (owner-only) if missing.
        public var directory: String
        /// The size of one segment file. Default 4 MiB. Must exceed ``maxRecordBytes`` plus 24 bytes.
        public var segmentBytes: Int
        /// The most disk space all segments may take; past it the oldest records are dropped. Default 64 MiB.
        public var maxTotalBytes: Int
        /// The largest record accepted, without its `\n`. Default 1 MiB, the line limit the collector
        /// configurations in this project use (syslog-ng's default is 64 KiB, rsyslog's 8 KiB, and both
        /// split longer lines silently).
        public var maxRecordBytes: Int

        public init(
            directory: String,
            segmentBytes: Int = 4 << 20,
            maxTotalBytes: Int = 64 << 20,
            maxRecordBytes: Int = 1 << 20
        ) {
            self.directory = directory
            self.segmentBytes = segmentBytes
            self.maxTotalBytes = maxTotalBytes
            self.maxRecordBytes = maxRecordBytes
        }
    }

    /// The configuration the spool was opened with.
    public let configuration: Configuration

    private let lock = SpoolLock()
    /// Live segments, oldest first; the last one is the one being appended to. Never empty while open.
    private var segments: [SpoolSegment]
    private var cursorPosition: SpoolPosition
    private let cursorFD: CInt
    /// Holds an exclusive `flock` on `<folder>/spool.lock` while open: one spool per folder, across
    /// processes and within one (two spools on one folder would write over each other's records).
    private let lockFD: CInt
    private var isClosed = false
    private var counters: SpoolCounters
    private var dropsToReport: UInt64 = 0
    private let maxSegments: Int

    // MARK: - Opening

    /// Opens the spool in `configuration.directory`, creating it if needed, and recovers what an earlier
    /// run left there: intact records after the persisted cursor are queued again.
    public init(configuration: Configuration) throws {
        guard configuration.maxRecordBytes > 0,
            configuration.segmentBytes >= configuration.maxRecordBytes + SpoolSegment.headerSize + SpoolSegment.frameHeaderSize
        else {
            throw LogstashError(
                code: .invalidConfiguration,
                message: "spool segmentBytes (\(configuration.segmentBytes)) must hold one record of maxRecordBytes (\(configuration.maxRecordBytes)) plus 24 bytes"
            )
        }
        self.configuration = configuration
        self.maxSegments = max(2, configuration.maxTotalBytes / configuration.segmentBytes)
        let directory = configuration.directory
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw spoolError("can't create spool folder \(directory)")
        }
        let lockFD = open(directory + "/spool.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockFD >= 0 else { throw spoolError("can't open the spool lock in \(directory)") }
        guard Self.lockExclusively(lockFD) else {
            closeDescriptor(lockFD)
            throw LogstashError(
                code: .spoolUnavailable,
                message: "the spool folder \(directory) is in use by another logger or process; give each logger its own spool folder"
            )
        }
        self.lockFD = lockFD
        var opened = false
        defer { if !opened { closeDescriptor(lockFD) } }

        // Segments, by sequence number.
        var sequences: [UInt64] = []
        guard let dir = opendir(directory) else { throw spoolError("can't list spool folder \(directory)") }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasSuffix(".seg"), let sequence = UInt64(name.dropLast(4)) { sequences.append(sequence) }
        }
        closedir(dir)
        sequences.sort()

        var segments: [SpoolSegment] = []
        for sequence in sequences {
            let path = directory + "/" + SpoolSegment.fileName(sequence)
            var info = stat()
            if stat(path, &info) == 0, Int(info.st_size) <= SpoolSegment.headerSize {
                // Killed between creating the file and sizing it: it can hold no record. Without this, one
                // such file would make the spool (and so Logstash logging) unusable for every later run.
                unlink(path)
                continue
            }
            segments.append(try SpoolSegment.recover(path: path, sequence: sequence, maxRecordBytes: configuration.maxRecordBytes))
        }
        if segments.isEmpty {
            segments.append(try SpoolSegment.create(directory: directory, sequence: 1, capacity: configuration.segmentBytes))
        }

        // The cursor.
        let cursorPath = directory + "/cursor"
        let cursorFD = open(cursorPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard cursorFD >= 0 else { throw spoolError("can't open spool cursor \(cursorPath)") }
        self.cursorFD = cursorFD
        var stored = [UInt64](repeating: 0, count: 2)
        let readCount = stored.withUnsafeMutableBytes { pread(cursorFD, $0.baseAddress, 16, 0) }
        var cursor = SpoolPosition(segment: segments[0].sequence, offset: SpoolSegment.headerSize)
        if readCount == 16 {
            let saved = SpoolPosition(segment: UInt64(littleEndian: stored[0]), offset: Int(UInt64(littleEndian: stored[1])))
            if let segment = segments.first(where: { $0.sequence == saved.segment }),
                saved.offset >= SpoolSegment.headerSize, saved.offset <= segment.end
            {
                cursor = saved
            } else if saved.segment > segments[segments.count - 1].sequence {
                cursor = SpoolPosition(segment: segments[segments.count - 1].sequence, offset: segments[segments.count - 1].end)
            }
        }
        // Segments wholly before the cursor were acknowledged: delete them.
        while segments.count > 1, segments[0].sequence < cursor.segment {
            segments.removeFirst().remove()
        }
        self.segments = segments
        self.cursorPosition = cursor
        self.counters = SpoolCounters(queuedRecords: 0, queuedBytes: 0, segmentCount: segments.count, droppedRecords: 0, appendedRecords: 0)
        for segment in segments {
            let skipped: (records: Int, bytes: Int) = segment.sequence == cursor.segment ? segment.count(from: SpoolSegment.headerSize, to: cursor.offset) : (0, 0)
            counters.queuedRecords += segment.recordCount - skipped.records
            counters.queuedBytes += segment.payloadBytes - skipped.bytes + segment.recordCount - skipped.records
        }
        persistCursor()
        opened = true
    }

    deinit {
        close()
    }

    /// Takes the folder's exclusive `flock`, waiting up to a second for a holder that is about to let go.
    ///
    /// A lock belongs to the open file: a child process being spawned holds a copy of the descriptor from
    /// `fork` until `exec` closes it (`O_CLOEXEC`), so a spool closed a moment ago can still look locked
    /// while the program starts a subprocess. A second logger really using the folder holds it for good.
    private static func lockExclusively(_ descriptor: CInt) -> Bool {
        for _ in 0..<100 {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
            guard errno == EWOULDBLOCK || errno == EINTR else { return false }
            usleep(10_000)
        }
        return false
    }

    /// Unmaps and closes the files. Records stay on disk for the next ``LogstashSpool`` opened on the folder.
    /// Later calls to ``append(_:)`` throw ``LogstashError/Code/spoolClosed``.
    public func close() {
        lock.withLock {
            guard !isClosed else { return }
            isClosed = true
            segments.removeAll()
            closeDescriptor(cursorFD)
            closeDescriptor(lockFD)
        }
    }

    // MARK: - Appending (logging caller's thread)

    /// Appends one record (a JSON object, *without* its trailing `\n`) and returns its position.
    ///
    /// No system call unless a segment fills up (then one new file is created, and perhaps the oldest
    /// deleted). Once this returns, the record survives the process being killed.
    ///
    /// - Throws: ``LogstashError`` with code ``LogstashError/Code/recordTooLarge`` if the record is larger
    ///   than ``Configuration/maxRecordBytes`` (nothing is spooled: truncate or replace the record and
    ///   append again), ``LogstashError/Code/emptyRecord`` for an empty record,
    ///   ``LogstashError/Code/spoolUnavailable`` if a new segment can't be created (disk full), or
    ///   ``LogstashError/Code/spoolClosed``.
    @discardableResult
    public func append(_ record: UnsafeRawBufferPointer) throws -> SpoolPosition {
        guard !record.isEmpty else {
            throw LogstashError(code: .emptyRecord, message: "an empty record can't be spooled (collectors drop empty lines)")
        }
        guard record.count <= configuration.maxRecordBytes else {
            throw LogstashError(
                code: .recordTooLarge,
                message: "a record of \(record.count) bytes exceeds the \(configuration.maxRecordBytes)-byte line limit; truncate it"
            )
        }
        return try lock.withLock {
            guard !isClosed else { throw LogstashError(code: .spoolClosed, message: "the spool is closed") }
            var segment = segments[segments.count - 1]
            if !segment.fits(record.count) {
                segment = try startSegment()
            }
            let position = SpoolPosition(segment: segment.sequence, offset: segment.end)
            segment.append(record)
            counters.queuedRecords += 1
            counters.queuedBytes += record.count + 1
            counters.appendedRecords += 1
            return position
        }
    }

    /// Appends one record; see ``append(_:)-(UnsafeRawBufferPointer)``.
    @discardableResult
    public func append(_ record: [UInt8]) throws -> SpoolPosition {
        try record.withUnsafeBytes { try append($0) }
    }

    /// Opens the next segment, first deleting the oldest if the spool is at its cap.
    private func startSegment() throws -> SpoolSegment {
        while segments.count >= maxSegments {
            dropOldestSegment()
        }
        let sequence = segments[segments.count - 1].sequence + 1
        let segment = try SpoolSegment.create(directory: configuration.directory, sequence: sequence, capacity: configuration.segmentBytes)
        segments.append(segment)
        counters.segmentCount = segments.count
        return segment
    }

    /// Deletes the oldest segment, counting its unacknowledged records as dropped.
    private func dropOldestSegment() {
        let oldest = segments.removeFirst()
        var lost = (records: oldest.recordCount, bytes: oldest.payloadBytes)
        if oldest.sequence == cursorPosition.segment {
            let acknowledged = oldest.count(from: SpoolSegment.headerSize, to: cursorPosition.offset)
            lost = (lost.records - acknowledged.records, lost.bytes - acknowledged.bytes)
        }
        if cursorPosition.segment <= oldest.sequence {
            cursorPosition = SpoolPosition(segment: segments[0].sequence, offset: SpoolSegment.headerSize)
            persistCursor()
        }
        counters.queuedRecords -= lost.records
        counters.queuedBytes -= lost.bytes + lost.records
        counters.droppedRecords += UInt64(lost.records)
        dropsToReport += UInt64(lost.records)
        oldest.remove()
        counters.segmentCount = segments.count
    }

    // MARK: - Reading and acknowledging (sender)

    /// The position of the oldest record not yet acknowledged (persisted across restarts).
    public var cursor: SpoolPosition {
        lock.withLock { cursorPosition }
    }

    /// The position the next appended record will take (or a position equal to it).
    public var endPosition: SpoolPosition {
        lock.withLock {
            guard let last = segments.last else { return cursorPosition }
            return SpoolPosition(segment: last.sequence, offset: last.end)
        }
    }

    /// Copies records starting at `position` (clamped to ``cursor`` if older, for instance after the oldest
    /// records were dropped) into one `\n`-framed batch of at most `maxBytes` bytes and `maxRecords`
    /// records — but always at least one record if there is one. Memory is bounded by `maxBytes` plus one
    /// record; nothing else is loaded.
    public func read(from position: SpoolPosition, maxBytes: Int, maxRecords: Int) -> SpoolBatch {
        lock.withLock {
            var position = max(position, cursorPosition)
            var bytes: [UInt8] = []
            var count = 0
            guard !isClosed, var index = segments.firstIndex(where: { $0.sequence >= position.segment }) else {
                return SpoolBatch(bytes: [], recordCount: 0, start: position, end: position)
            }
            if segments[index].sequence != position.segment {
                position = SpoolPosition(segment: segments[index].sequence, offset: SpoolSegment.headerSize)
            }
            let start = position
            while count < maxRecords {
                let segment = segments[index]
                if position.offset >= segment.end {
                    guard index + 1 < segments.count else { break }
                    index += 1
                    position = SpoolPosition(segment: segments[index].sequence, offset: SpoolSegment.headerSize)
                    continue
                }
                let payload = segment.payload(at: position.offset)
                if count > 0, bytes.count + payload.count + 1 > maxBytes { break }
                if count == 0 { bytes.reserveCapacity(min(maxBytes, segment.end - position.offset)) }
                bytes.append(contentsOf: payload)
                bytes.append(UInt8(ascii: "\n"))
                count += 1
                position.offset += SpoolSegment.frameHeaderSize + payload.count
            }
            // Normalize a position at the end of a full segment to the start of the next one.
            if position.offset >= segments[index].end, index + 1 < segments.count {
                position = SpoolPosition(segment: segments[index + 1].sequence, offset: SpoolSegment.headerSize)
            }
            return SpoolBatch(bytes: bytes, recordCount: count, start: start, end: position)
        }
    }

    /// Marks every record before `position` as delivered: advances the persisted cursor (one 16-byte
    /// `pwrite`) and deletes segments that are wholly before it. Acknowledging backwards does nothing.
    public func acknowledge(upTo position: SpoolPosition) {
        lock.withLock {
            guard !isClosed, position > cursorPosition else { return }
            var current = cursorPosition
            for segment in segments where segment.sequence >= current.segment && segment.sequence <= position.segment {
                let from = segment.sequence == current.segment ? current.offset : SpoolSegment.headerSize
                let to = segment.sequence == position.segment ? position.offset : segment.end
                let done = segment.count(from: from, to: to)
                counters.queuedRecords -= done.records
                counters.queuedBytes -= done.bytes + done.records
                current = SpoolPosition(segment: segment.sequence, offset: to)
            }
            cursorPosition = max(current, cursorPosition)
            while segments.count > 1, segments[0].sequence < cursorPosition.segment {
                segments.removeFirst().remove()
            }
            counters.segmentCount = segments.count
            persistCursor()
        }
    }

    /// Writes the cursor to its file (16 bytes, one `pwrite`). Call with the lock held.
    private func persistCursor() {
        var stored: [UInt64] = [UInt64(cursorPosition.segment).littleEndian, UInt64(cursorPosition.offset).littleEndian]
        _ = stored.withUnsafeMutableBytes { pwrite(cursorFD, $0.baseAddress, 16, 0) }
    }

    // MARK: - Counters

    /// A snapshot of the counters.
    public var counterSnapshot: SpoolCounters {
        lock.withLock { counters }
    }

    /// Records dropped (spool full) since the last call, and resets that count: the destination reports
    /// them once, in one event, when delivery resumes.
    public func takeDropsToReport() -> UInt64 {
        lock.withLock {
            defer { dropsToReport = 0 }
            return dropsToReport
        }
    }
}

/// `close(2)`, out of reach of ``LogstashSpool/close()``'s name.
private func closeDescriptor(_ fd: CInt) {
    _ = close(fd)
}
