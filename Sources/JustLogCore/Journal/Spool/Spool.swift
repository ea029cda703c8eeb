import CJustLogFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A crash-safe on-disk queue of records: appended on the logging caller's thread, read and acknowledged by
/// one reader, in order, across restarts of the program. The Logstash destination's spool (`LogstashSpool`
/// in JustLogLogstash) holds flattened lines for the sender; the ``EventJournal`` holds every log call's
/// binary event for the background destinations.
///
/// The spool is a folder of segment files (`00000000000000000001.seg`, …; see ``SpoolSegment`` for the
/// layout), each mapped into memory with `MAP_SHARED`, and a checksummed `cursor` file holding the position
/// of the oldest record not yet acknowledged and the newest segment made. The folder and its missing parents are
/// created owner-only.
///
/// ## Crash safety
/// ``append(_:)`` copies the record into the shared mapping and returns: no system call per record. The
/// page belongs to the kernel's page cache, so once `append` returns, the record survives the process
/// being killed (even `SIGKILL`) and the next ``Spool`` opened on the folder finds it. A crash of
/// the operating system or a power loss before the kernel writes the page back may lose recent records:
/// that is out of scope (it would need an `msync` per record).
///
/// A record torn by a crash in the middle of ``append(_:)`` fails its checks when the spool is opened again
/// and is ignored; its append never returned, so nothing was lost. The journal's log calls take a record's place
/// under the lock and copy the record in after it (`reserveRecord`): a place the process was killed before
/// filling is skipped when the folder is opened again, and not counted as lost either — its call never returned.
///
/// ## Damage
/// Opening recovers every intact record, in order, whatever happened to the files: a damaged record is
/// skipped and the records after it kept; a missing, emptied or cut-short segment costs only its own
/// records; a damaged cursor makes sending start again at the oldest record (some events are then sent
/// twice: at least once, never skipped). Records are numbered, so every record that can't be read is
/// counted exactly and reported once: a line on the diagnostics sink and ``takeLossesToReport()`` (the
/// destination sends a report event). The newest segments deleted are found by the cursor file, which names the
/// newest segment made: the records of those before the newest are counted; the newest one's number can't be
/// known, and a line says so. Nothing is written over damaged bytes.
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
/// ## Unavailable folders
/// ``init(configuration:diagnostics:)`` opens the folder at once and throws if it can't (no permission, a full
/// disk, a file-size limit). ``init(unopened:diagnostics:)`` makes a spool that opens later, with
/// ``open(waitingForLock:)``, as often as needed: until then it reads as empty and refuses appends.
///
/// ```swift
/// let spool = try Spool(configuration: .init(directory: "/var/log/app/app.log.spool"))
/// try spool.append(Array(#"{"message":"hello","event_id":"1"}"#.utf8))
/// let batch = spool.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 1000)
/// // … send batch.bytes, then, once delivery is proven:
/// spool.acknowledge(upTo: batch.end)
/// ```
public final class Spool: @unchecked Sendable {
    /// Where the spool lives and how big it may grow.
    public struct Configuration: Sendable {
        /// The spool's folder; created (owner-only, with its missing parents) if missing.
        public var directory: String
        /// The size of one segment file. Default 4 MiB. Must exceed ``maxRecordBytes`` plus 56 bytes, and be at most
        /// ``Spool/maximumSegmentBytes`` (1 GiB).
        public var segmentBytes: Int
        /// The most disk space all segments may take; past it the oldest records are dropped. Default 64 MiB.
        public var maxTotalBytes: Int
        /// The largest record accepted, without its `\n`. Default 1 MiB, the line limit the collector
        /// configurations in this project use (syslog-ng's default is 64 KiB, rsyslog's 8 KiB, and both
        /// split longer lines silently).
        public var maxRecordBytes: Int
        /// What the spool is called in diagnostics lines ("the Logstash spool in … was damaged"). Default
        /// `Logstash spool`; the journal is `log journal`.
        public var name: String

        /// Called when closing the spool, or dropping its oldest segment at the cap, finds a place reserved there
        /// still being filled: before it waits, once for each segment it waits on (tests see the wait begin; it
        /// runs under the spool's lock: it must not call the spool).
        package var onWaitingForAFill: (@Sendable () -> Void)?

        /// How long the spool waits, after a segment could not be started (a full disk, a file-size limit, a
        /// folder it may no longer write), before it tries to start one again: until then an append that needs a new
        /// segment fails at once with the same error, without a system call. The same after a record could not be
        /// written through the file (`SpoolSegment.writesThroughFile`): until then every append fails so. `nil`:
        /// every such append tries. The journal waits a second: on a full disk every log call otherwise paid two
        /// tries at a segment — an `open`, a `posix_fallocate` and an `unlink` each — a few hundred times a call's
        /// cost. (The Logstash destination holds records in memory, and tries again on its own timer.)
        package var segmentRetryInterval: Duration?

        /// The clock of ``segmentRetryInterval`` (tests pass their own).
        package var now: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }

        /// Called each time the spool tries to start a segment (tests count the tries; it runs under the spool's
        /// lock: it must not call the spool).
        package var onStartingASegment: (@Sendable () -> Void)?

        /// How records reach the segment files: see ``SegmentWrites``. Tests choose; programs leave it to the file
        /// system.
        package var segmentWrites = SegmentWrites.byFileSystem

        /// How records reach a segment's file (see `SpoolSegment`'s discussion).
        package enum SegmentWrites: Sendable, Hashable {
            /// Through the file on btrfs, ZFS and bcachefs, where a write into a mapping of a full disk raises
            /// `SIGBUS` (or waits in the kernel) — also under overlayfs, whose upper layer may be btrfs (told by
            /// whether copy-on-write can be turned off for a new segment); through the mapping elsewhere.
            case byFileSystem
            /// Copied into the mapping, whatever the file system.
            case mapped
            /// With `pwrite`, whatever the file system (tests of that path on any disk).
            case throughFile

            /// Whether the segment open on `fd` in `directory` (`isNew`: created, still empty) is written through the
            /// file (by the file system: see `cjustlog_segment_copies_on_write`).
            func throughFile(_ fd: CInt, isNew: Bool, directory: String) -> Bool {
                var folderProbe: Bool?
                return throughFile(fd, isNew: isNew, directory: directory, folderProbe: &folderProbe)
            }

            /// ``throughFile(_:isNew:directory:)`` for the segments of one folder opened one after the other, where
            /// `folderProbe` keeps what a new file in the folder answered (see ``newFileCopiesOnWrite(in:)``): it is
            /// asked once, not for each segment (review, helper-49: a start in Docker's overlay made and deleted a
            /// file for each segment of the journal and the spool). Each segment's own flag is still read first: a
            /// folder whose new files can't turn copy-on-write off (btrfs compressing the folder) may hold segments
            /// that did, which must stay written through the file (review, helper-50).
            func throughFile(_ fd: CInt, isNew: Bool, directory: String, folderProbe: inout Bool?) -> Bool {
                switch self {
                case .mapped: return false
                case .throughFile: return true
                case .byFileSystem:
                    switch cjustlog_segment_copies_on_write(fd, isNew ? 1 : 0) {
                    case 0: return false
                    case 1: return true
                    default:
                        if let answer = folderProbe { return answer }
                        let answer = Self.newFileCopiesOnWrite(in: directory)
                        folderProbe = answer
                        return answer
                    }
                }
            }

            /// The prefix of the name of the file ``newFileCopiesOnWrite(in:)`` makes (and deletes; a process killed
            /// in between leaves it, and the next open of the folder deletes it).
            static let probeNamePrefix = ".copy-on-write-probe."

            /// For an existing segment on a file system its type does not name, whose copy-on-write is on — made by
            /// an earlier version, or copied up from an overlay's lower layer (review, helper-47) — whether a new
            /// file in the same folder takes the flag that turns it off, or compresses: then the folder is on btrfs
            /// (or compresses), and the segment is written through the file (a write there may fail on a full disk;
            /// it raises no `SIGBUS`). If no such file can be made, through the file too: slower, never a signal.
            private static func newFileCopiesOnWrite(in directory: String) -> Bool {
                var template = Array((directory + "/" + probeNamePrefix + "XXXXXX").utf8CString)
                let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
                guard fd >= 0 else { return true }
                // Not inherited by a program started meanwhile (`mkostemp` is not in Swift's Glibc).
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                defer {
                    closeDescriptor(fd)
                    template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
                }
                return cjustlog_segment_copies_on_write(fd, 1) == 1
            }
        }

        /// The most segment files the spool keeps (at least two): it drops its oldest when it needs one more.
        package var maxSegments: Int { max(2, maxTotalBytes / segmentBytes) }

        public init(
            directory: String,
            segmentBytes: Int = 4 << 20,
            maxTotalBytes: Int = 64 << 20,
            maxRecordBytes: Int = 1 << 20,
            name: String = "Logstash spool"
        ) {
            self.directory = directory
            self.segmentBytes = segmentBytes
            self.maxTotalBytes = maxTotalBytes
            self.maxRecordBytes = maxRecordBytes
            self.name = name
        }
    }

    /// The configuration the spool was made with.
    public let configuration: Configuration

    private let diagnostics: DiagnosticSink
    private let lock = SpoolLock()
    /// Held by the reader's calls while they work outside `lock` — ``read(from:maxBytes:maxRecords:)`` copying
    /// records, ``readInPlace(from:before:maxRecords:)`` walking their frames, ``acknowledge(upTo:)`` writing the
    /// cursor and deleting or zeroing the segments it retired — and by ``close()``: a segment is never retired while
    /// a read copies from it, and nothing runs after the spool closed. (Records read in place are read after the
    /// lock is let go, until their reader acknowledges them: see ``SpoolRecords``.) Taken before `lock`.
    private let readerLock = ConditionLock()
    @exclusivity(unchecked) private var state: State = .unopened {  // under `lock`
        didSet {
            if case .open(let storage) = state {
                openStorageReference = .passUnretained(storage)
            } else {
                openStorageReference = nil
            }
        }
    }
    /// The storage of an open `state`, unretained: an append spares a retain and a release (under `lock`).
    @exclusivity(unchecked) private var openStorageReference: Unmanaged<SpoolStorage>?

    private enum State {
        case unopened
        case open(SpoolStorage)
        case closed
    }

    // MARK: - Opening

    /// The largest segment a spool takes: 1 GiB.
    public static let maximumSegmentBytes = 1 << 30

    /// Opens the spool in `configuration.directory` now, creating it if needed, and recovers what an earlier
    /// run left there: intact records after the persisted cursor are queued again; damage is reported on
    /// `diagnostics` (see the type's discussion).
    ///
    /// - Throws: ``JustLogError`` with ``JustLogError/Code/invalidConfiguration`` for sizes that can't
    ///   work, ``JustLogError/Code/spoolUnavailable`` if the folder can't be created, locked or read, or
    ///   its first segment can't be reserved (the message says why).
    public convenience init(configuration: Configuration, diagnostics: DiagnosticSink = .standardError) throws {
        try self.init(unopened: configuration, diagnostics: diagnostics)
        try open()
    }

    /// A spool that touches nothing on disk until ``open(waitingForLock:)`` succeeds: for a destination that
    /// must exist even while its folder can't be used. Until then it reads as empty and ``append(_:)`` throws
    /// ``JustLogError/Code/spoolUnavailable``.
    ///
    /// - Throws: ``JustLogError`` with ``JustLogError/Code/invalidConfiguration`` for sizes that can't work.
    public init(unopened configuration: Configuration, diagnostics: DiagnosticSink = .standardError) throws {
        // Subtracted, not added: a `maxRecordBytes` near `Int.max` must be refused, not overflow (review, helper-48);
        // a segment is mapped whole, and at most 1 GiB (sizes near `Int.max` overflowed sums elsewhere: helper-49).
        let overhead = SpoolSegment.headerSize + SpoolSegment.frameHeaderSize
        guard configuration.maxRecordBytes > 0, configuration.segmentBytes >= overhead,
            configuration.segmentBytes <= Self.maximumSegmentBytes,
            configuration.segmentBytes - overhead >= configuration.maxRecordBytes
        else {
            throw JustLogError(
                code: .invalidConfiguration,
                message:
                    "spool segmentBytes (\(configuration.segmentBytes)) must be at most \(Self.maximumSegmentBytes) and hold one record of maxRecordBytes (\(configuration.maxRecordBytes)) plus \(overhead) bytes"
            )
        }
        self.configuration = configuration
        self.diagnostics = diagnostics
    }

    /// Opens the folder and recovers it (see ``init(configuration:diagnostics:)``), waiting up to `wait` for
    /// a lock holder that is letting go; does nothing if the spool is open already. May be called again
    /// after it failed.
    ///
    /// - Throws: ``JustLogError``: ``JustLogError/Code/spoolUnavailable`` with the reason (among them a folder a
    ///   newer version of JustLog wrote, left as it is), or ``JustLogError/Code/spoolClosed`` after ``close()``.
    public func open(waitingForLock wait: Duration = .seconds(1)) throws {
        try lock.withLock {
            switch state {
            case .open:
                return
            case .closed:
                throw JustLogError(code: .spoolClosed, message: "the spool is closed")
            case .unopened:
                state = .open(try SpoolStorage(configuration: configuration, diagnostics: diagnostics, lockWait: wait))
            }
        }
    }

    /// Whether the spool is open (its folder locked and its records known).
    public var isOpen: Bool {
        lock.withLock {
            if case .open = state { return true }
            return false
        }
    }

    deinit {
        close()
    }

    /// Closes the spool and deletes its folder — its files, and those `alsoRemoving` names — if every record is
    /// acknowledged; otherwise closes it as ``close()`` does. Returns whether the folder's files were deleted.
    @discardableResult
    package func closeRemovingFolderIfEmpty(alsoRemoving: (String) -> Bool = { _ in false }) -> Bool {
        readerLock.withLock {
            lock.withLock {
                defer { state = .closed }
                guard case .open(let storage) = state else { return false }
                guard storage.counters.queuedRecords == 0 else {
                    storage.close()
                    return false
                }
                storage.closeRemovingFolder(alsoRemoving: alsoRemoving)
                return true
            }
        }
    }

    /// Unmaps and closes the files. Records stay on disk for the next ``Spool`` opened on the folder.
    /// Later calls to ``append(_:)`` throw ``JustLogError/Code/spoolClosed``.
    public func close() {
        readerLock.withLock {
            lock.withLock {
                if case .open(let storage) = state { storage.close() }
                state = .closed
            }
        }
    }

    // MARK: - Appending (logging caller's thread)

    /// Appends one record (a JSON object on one line, *without* its trailing `\n`) and returns its position.
    ///
    /// No system call unless a segment fills up (then one new file is created, and perhaps the oldest
    /// deleted) — but on btrfs, ZFS and bcachefs, where the record is written with `pwrite` (five calls) instead of
    /// copied into the mapping: see `SpoolSegment`. Once this returns, the record survives the process being killed.
    ///
    /// - Throws: ``JustLogError`` with code ``JustLogError/Code/recordTooLarge`` if the record is larger
    ///   than ``Configuration/maxRecordBytes`` (nothing is spooled: truncate or replace the record and
    ///   append again), ``JustLogError/Code/emptyRecord`` for an empty record,
    ///   ``JustLogError/Code/multilineRecord`` for one that holds a `\n` (a collector would take it for two lines,
    ///   and a Beats window would count more events than it holds: escape it, as JSON does),
    ///   ``JustLogError/Code/spoolUnavailable`` if the spool is not open or a new segment can't be created
    ///   (a full disk, a file-size limit), or ``JustLogError/Code/spoolClosed``.
    @discardableResult
    public func append(_ record: UnsafeRawBufferPointer) throws -> SpoolPosition {
        // Here, not in `check`: the journal's binary records may hold the byte. (JustLog's JSON records never do;
        // the Logstash appender re-spools the ones it held this way. Review, helper-53.) After the size check: a
        // record too large is said to be, and not scanned.
        try check(record)
        if let base = record.baseAddress, memchr(base, Int32(UInt8(ascii: "\n")), record.count) != nil {
            throw JustLogError(
                code: .multilineRecord,
                message:
                    "a record holding a newline can't be spooled: each record is one line (a collector would take it for two); escape it as JSON does (\\n)"
            )
        }
        return try appendRecord(record).start
    }

    /// Appends one record (see ``append(_:)-(UnsafeRawBufferPointer)``) and returns its position and the position
    /// just after it: acknowledging up to `end` acknowledges this record.
    package func appendRecord(_ record: UnsafeRawBufferPointer) throws -> (start: SpoolPosition, end: SpoolPosition) {
        try check(record)
        return try lock.withLock {
            guard let open = openStorageReference else { throw notOpen() }
            return try open._withUnsafeGuaranteedRef { try $0.append(record) }
        }
    }

    /// Takes the place of `record`, to be copied in with ``SpoolReservation/fill(with:)`` after this returns
    /// (outside the spool's lock), if the records not yet acknowledged take fewer than `limit` bytes and the
    /// record drops nothing at the cap; `nil`, and nothing reserved, otherwise. Throws as ``appendRecord(_:)`` does.
    /// Once filled, the record is appended exactly as ``appendRecord(_:)`` appends it; a process killed before the
    /// fill leaves a frame that recovery skips, not a loss (the call that reserved it never returned). (Where
    /// segments are written through the file, `record` is written here, under the lock, and the fill does nothing.)
    package func reserveRecord(
        _ record: UnsafeRawBufferPointer,
        whileQueuedBytesBelow limit: Int
    ) throws -> SpoolReservation? {
        let count = record.count
        try check(count: count)
        lock.lock()
        defer { lock.unlock() }
        guard let open = openStorageReference else { throw notOpen() }
        let place = try open._withUnsafeGuaranteedRef { storage -> SpoolReservation.Place? in
            guard storage.hasRoom(for: count, whileQueuedBytesBelow: limit) else { return nil }
            return try storage.reserve(record)
        }
        guard let place else { return nil }
        return SpoolReservation(place)
    }

    /// What ``reserveRecord(_:whileQueuedBytesBelow:)`` would do now with a record of `count` bytes (one look under
    /// the spool's lock, at the condition it reserves under).
    package func room(for count: Int, whileQueuedBytesBelow limit: Int) -> RecordRoom {
        guard count > 0, count <= configuration.maxRecordBytes else { return .never }
        return lock.withLock {
            guard let open = openStorageReference else { return .never }
            return open._withUnsafeGuaranteedRef { storage in
                guard storage.hasRoom(for: count, whileQueuedBytesBelow: limit) else { return .notNow }
                // Reserving would throw what the last try at a segment, or at a write, did (a full disk), until its
                // retry.
                return storage.waitsForARetry(toAppend: count) ? .never : .available
            }
        }
    }

    /// Whether a record of `count` bytes would be appended now without dropping the oldest records at the cap (see
    /// ``Configuration/maxTotalBytes``); `true` when the spool is not open or the record can't be spooled at all
    /// (appending then fails, and says so, dropping nothing).
    package func takesWithoutDropping(_ count: Int) -> Bool {
        room(for: count, whileQueuedBytesBelow: .max) != .notNow
    }

    /// The open storage, or the error appending meets when the spool is not open or closed (lock held).
    private func openStorage() throws -> SpoolStorage {
        guard case .open(let storage) = state else { throw notOpen() }
        return storage
    }

    /// Why the spool can't append now: it is not open yet, or closed (lock held).
    private func notOpen() -> JustLogError {
        if case .closed = state { return JustLogError(code: .spoolClosed, message: "the spool is closed") }
        return JustLogError(code: .spoolUnavailable, message: "the spool in \(configuration.directory) is not open")
    }

    /// Throws if `record` can't be spooled whatever the spool's state: empty, or too large.
    @inline(__always)
    private func check(_ record: UnsafeRawBufferPointer) throws {
        try check(count: record.count)
    }

    /// Throws if a record of `count` bytes can't be spooled whatever the spool's state: empty, or too large.
    @inline(__always)
    private func check(count: Int) throws {
        guard count > 0 else {
            throw JustLogError(
                code: .emptyRecord,
                message: "an empty record can't be spooled (collectors drop empty lines)"
            )
        }
        guard count <= configuration.maxRecordBytes else {
            throw JustLogError(
                code: .recordTooLarge,
                message:
                    "a record of \(count) bytes exceeds the \(configuration.maxRecordBytes)-byte line limit; truncate it"
            )
        }
    }

    /// Appends records laid end to end in `bytes`, `lengths` bytes each, in order, under one lock (see
    /// ``append(_:)-(UnsafeRawBufferPointer)``). Stops at the first record that can't be appended: returns how
    /// many were, and the error that stopped the next one (`nil` when every one was appended).
    package func appendRecords(
        _ bytes: UnsafeRawBufferPointer,
        lengths: ArraySlice<Int>
    ) -> (appended: Int, failure: (any Error)?) {
        lock.withLock {
            var offset = 0
            var appended = 0
            for length in lengths {
                let record = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
                // In the order ``appendRecord(_:)`` looks: the record itself, then the spool's state.
                do {
                    try check(record)
                    _ = try openStorage().append(record)
                } catch {
                    return (appended, error)
                }
                offset += length
                appended += 1
            }
            return (appended, nil)
        }
    }

    /// Appends one record; see ``append(_:)-(UnsafeRawBufferPointer)``.
    @discardableResult
    public func append(_ record: [UInt8]) throws -> SpoolPosition {
        try record.withUnsafeBytes { try append($0) }
    }

    // MARK: - Reading and acknowledging (sender)

    /// The position of the oldest record not yet acknowledged (persisted across restarts); before the spool
    /// is open, the smallest position.
    public var cursor: SpoolPosition {
        lock.withLock {
            if case .open(let storage) = state { return storage.cursor }
            return SpoolPosition(segment: 0, offset: 0)
        }
    }

    /// The position the next appended record will take (or a position equal to it).
    public var endPosition: SpoolPosition {
        lock.withLock {
            if case .open(let storage) = state { return storage.endPosition }
            return SpoolPosition(segment: 0, offset: 0)
        }
    }

    /// Copies records starting at `position` (clamped to ``cursor`` if older, for instance after the oldest
    /// records were dropped) into one `\n`-framed batch of at most `maxBytes` bytes and `maxRecords`
    /// records — but always at least one record if there is one. Memory is bounded by `maxBytes` plus one
    /// record; nothing else is loaded. Damaged records found when the spool was opened are skipped.
    public func read(from position: SpoolPosition, maxBytes: Int, maxRecords: Int) -> SpoolBatch {
        var storage: [UInt8] = []
        return read(from: position, before: nil, maxBytes: maxBytes, maxRecords: maxRecords, reusing: &storage)
    }

    /// ``read(from:maxBytes:maxRecords:)`` into `storage`'s memory, emptied first: the batch's bytes share it. A
    /// reader that keeps `storage` from one read to the next and lets go of each batch before the next read copies
    /// into the same memory every time — no allocation, and no fresh pages for the kernel to zero (a batch may be a
    /// megabyte).
    public func read(
        from position: SpoolPosition,
        maxBytes: Int,
        maxRecords: Int,
        reusing storage: inout [UInt8]
    ) -> SpoolBatch {
        read(from: position, before: nil, maxBytes: maxBytes, maxRecords: maxRecords, reusing: &storage)
    }

    /// ``read(from:maxBytes:maxRecords:)``, stopping at `limit` (no record that starts there or later).
    package func read(
        from position: SpoolPosition,
        before limit: SpoolPosition?,
        maxBytes: Int,
        maxRecords: Int
    )
        -> SpoolBatch
    {
        var storage: [UInt8] = []
        return read(from: position, before: limit, maxBytes: maxBytes, maxRecords: maxRecords, reusing: &storage)
    }

    /// ``read(from:maxBytes:maxRecords:reusing:)``, stopping at `limit` (no record that starts there or later).
    package func read(
        from position: SpoolPosition,
        before limit: SpoolPosition?,
        maxBytes: Int,
        maxRecords: Int,
        reusing storage: inout [UInt8]
    )
        -> SpoolBatch
    {
        readerLock.withLock {
            // Copied outside the lock appends take.
            guard let plan = readPlan(from: position) else {
                return SpoolBatch(bytes: [], recordCount: 0, start: position, end: position)
            }
            return plan.read(before: limit, maxBytes: maxBytes, maxRecords: maxRecords, reusing: &storage)
        }
    }

    /// At most `maxRecords` records from `position` (none that starts at `limit` or later), read where they lie in
    /// one segment, nothing copied; the records of the next segment come with the next read. For a spool with one
    /// reader, which acknowledges records only once it is done with them: see ``SpoolRecords``.
    func readInPlace(from position: SpoolPosition, before limit: SpoolPosition?, maxRecords: Int) -> SpoolRecords {
        readerLock.withLock {
            // The frames walked outside the lock appends take.
            readPlan(from: position)?.readInPlace(before: limit, maxRecords: maxRecords) ?? SpoolRecords(none: position)
        }
    }

    /// What a read from `position` may take, taken under the lock appends take; `nil` once the spool is not open.
    private func readPlan(from position: SpoolPosition) -> SpoolReadPlan? {
        lock.withLock {
            guard case .open(let storage) = state else { return nil }
            return storage.readPlan(from: position)
        }
    }

    /// Marks every record before `position` as delivered: advances the persisted cursor (one 48-byte
    /// `pwrite`) and deletes segments that are wholly before it — but keeps one, zeroed, for the next segment to
    /// reuse. The system calls and the zeroing happen outside the lock appends take (deleting or zeroing a segment
    /// takes a millisecond or so).
    /// Acknowledging backwards does nothing.
    public func acknowledge(upTo position: SpoolPosition) {
        acknowledge { $0.acknowledge(upTo: position) }
    }

    /// Acknowledges exactly the records of `extent` — batches read one after another from the cursor — without
    /// walking their frames to count them (walking, if the cursor is elsewhere); see ``acknowledge(upTo:)``.
    package func acknowledge(_ extent: SpoolExtent) {
        acknowledge { $0.acknowledge(extent) }
    }

    private func acknowledge(
        _ advance: (SpoolStorage) -> (retired: [SpoolSegment], cursor: SpoolStorage.PersistedCursor?)
    ) {
        readerLock.withLock {
            let (storage, acknowledged, wantsSpare, keepsRetired) = lock.withLock {
                () -> (SpoolStorage?, (retired: [SpoolSegment], cursor: SpoolStorage.PersistedCursor?), Bool, Bool) in
                guard case .open(let storage) = state else { return (nil, ([], nil), false, false) }
                return (storage, advance(storage), storage.wantsSpare, storage.keepsRetiredBeforeAnUnsavedCursor)
            }
            // Segments before a cursor the file does not hold stay on disk: the next open starts from the one saved
            // last, and sends what they hold again rather than count it lost. They are deleted once a cursor past
            // them is saved, and meanwhile count towards the cap.
            guard let storage else { return }
            if let cursor = acknowledged.cursor, !storage.write(cursor) {
                lock.withLock {
                    guard case .open(let current) = state, current === storage else { return }
                    storage.keepUntilACursorPastThemIsSaved(acknowledged.retired)
                }
                return
            }
            var retired = acknowledged.retired
            if keepsRetired, acknowledged.cursor != nil {
                retired =
                    lock.withLock { () -> [SpoolSegment] in
                        guard case .open(let current) = state, current === storage else { return [] }
                        return storage.takeRetiredBeforeAnUnsavedCursor()
                    } + retired
            }
            var spare: SpoolSegment?
            for segment in retired {
                if wantsSpare, spare == nil, segment.retireAsSpare(directory: configuration.directory) {
                    spare = segment
                } else {
                    segment.remove()
                }
            }
            guard let spare else { return }
            let kept = lock.withLock {
                guard case .open(let storage) = state else { return false }
                return storage.keepSpare(spare)
            }
            if !kept { spare.remove() }
        }
    }

    // MARK: - Counters

    /// A snapshot of the counters (zeros before the spool is open).
    public var counterSnapshot: SpoolCounters {
        lock.withLock {
            if case .open(let storage) = state { return storage.counters }
            return SpoolCounters(
                queuedRecords: 0,
                queuedBytes: 0,
                segmentCount: 0,
                droppedRecords: 0,
                appendedRecords: 0
            )
        }
    }

    /// Records dropped (spool full) since the last call, and resets that count: the destination reports
    /// them once, in one event, when delivery resumes.
    public func takeDropsToReport() -> UInt64 {
        lock.withLock {
            if case .open(let storage) = state { return storage.takeDropsToReport() }
            return 0
        }
    }

    /// Records found lost (damaged, in a missing or emptied segment) when the spool was opened and not
    /// reported by an earlier open, and resets that count: the destination reports them in one event.
    public func takeLossesToReport() -> UInt64 {
        lock.withLock {
            if case .open(let storage) = state { return storage.takeLossesToReport() }
            return 0
        }
    }

    /// Damage found when the spool was opened whose number of lost records can't be known — a deleted or emptied
    /// newest segment, an unreadable end whose header is damaged too — one line each (as said on the diagnostics
    /// sink), and forgets them: the destination reports each in an event, as it does ``takeLossesToReport()``.
    public func takeUncountedLossesToReport() -> [String] {
        lock.withLock {
            if case .open(let storage) = state { return storage.takeUncountedLossesToReport() }
            return []
        }
    }
}

/// Whether the spool has room for a record now (see ``Spool/room(for:whileQueuedBytesBelow:)``).
package enum RecordRoom: Equatable, Sendable {
    /// Reserving it now takes its place.
    case available
    /// Not now: the records not yet acknowledged take the limit, or the record would drop some at the cap. Room comes
    /// as they are acknowledged.
    case notNow
    /// Not by waiting for acknowledgements: the record is empty or too large for the spool, the spool is not open
    /// (closed, or not opened yet), or the last try at what the record needs — a segment, or a write through the file
    /// — failed less than ``Spool/Configuration/segmentRetryInterval`` ago (a full disk) — reserving throws.
    case never
}
