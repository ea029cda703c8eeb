/// The journal: every log call's event, in binary (see `JournalCodec`), in a crash-safe ``Spool`` before the
/// call returns, so that what the background destinations (the console, the file) had not written when the
/// program was killed is written when it starts again on the same folder.
///
/// ```text
///  log call ──encode──▶ journal (mmap segments) ──▶ queue ──▶ worker ──▶ console, file
///                           ▲                                   │
///                           └────── acknowledge(upTo:) ─────────┘  after each batch is written
/// ```
///
/// - **Crash-safe.** A record is copied into a shared memory mapping, in log order; once the call returns it
///   survives `SIGKILL` (see ``Spool``). A log call on the fast lane takes its record's place under the pipeline's
///   lock and copies it in after releasing it (`SpoolReservation`), so that logging threads don't wait for each
///   other's copies; the worker waits at a place not filled yet. The worker acknowledges records once every
///   background destination has written them (one `pwrite` of the cursor per batch).
/// - **Recovery.** When a pipeline starts (or is reconfigured) with a journal, the records an earlier run
///   journaled and did not acknowledge are rebuilt, with the `event_id`s they had, and written before anything
///   logged now. Each destination says how it takes them: the file writes those its file does not hold yet,
///   the console prints one line that says how many (see ``LogDestination/journalRecovery()``).
/// - **Bounded.** At most ``Configuration/maxTotalBytes`` on disk; past it the oldest records are dropped and
///   counted (see ``Spool``). One process per folder: a second pipeline on a folder in use runs without it.
/// - **One pipeline, once.** A journal serves the pipeline setup it is first handed to, and is closed when that
///   setup is retired; a pipeline handed it while it serves another, or after it was closed, runs without it (and
///   says so). For a reconfiguration, open a new journal on the folder inside its `build` closure: the old one holds
///   the folder until then.
///
/// ```swift
/// let journal = try EventJournal(configuration: .init(directory: "/var/log/app/app.log.journal"))
/// let pipeline = LogPipeline(setup: .init(routes: [.init(file)], journal: journal))
/// ```
public final class EventJournal: Sendable {
    /// Where the journal lives and how big it may grow.
    public struct Configuration: Sendable {
        /// The journal's folder; created owner-only (0700, files 0600) if missing.
        public var directory: String
        /// The size of one segment file: 64 KiB to 1 GiB. Default 4 MiB.
        public var segmentBytes: Int {
            didSet {
                segmentBytes = Self.segmentSize(segmentBytes)
                maxTotalBytes = max(2 * segmentBytes, maxTotalBytes)
            }
        }
        /// The most disk space the journal may take; past it the oldest records are dropped and counted.
        /// Default 64 MiB.
        public var maxTotalBytes: Int

        /// How long the journal waits after a segment could not be started (a full disk, a file-size limit) before
        /// it tries again; meanwhile events go on without it, not crash-safe (see
        /// ``Spool/Configuration/segmentRetryInterval``). One second.
        package var segmentRetryInterval: Duration = .seconds(1)
        /// The clock of ``segmentRetryInterval`` (tests pass their own).
        package var now: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
        /// Called each time the journal tries to start a segment (tests count the tries).
        package var onStartingASegment: (@Sendable () -> Void)?
        /// How records reach the segment files (see ``Spool/Configuration/SegmentWrites``): by the file system.
        package var segmentWrites = Spool.Configuration.SegmentWrites.byFileSystem
        /// How long opening waits for a process that holds the folder and is letting go (see
        /// ``Spool/open(waitingForLock:)``): a second.
        package var lockWait: Duration = .seconds(1)

        /// `bytes` as ``segmentBytes`` takes it: 64 KiB to 1 GiB.
        private static func segmentSize(_ bytes: Int) -> Int { min(max(64 << 10, bytes), 1 << 30) }

        public init(directory: String, segmentBytes: Int = 4 << 20, maxTotalBytes: Int = 64 << 20) {
            self.directory = directory
            // At most 1 GiB: a segment is mapped whole (and `2 *` a near-`Int.max` one trapped: review, helper-48).
            self.segmentBytes = Self.segmentSize(segmentBytes)
            self.maxTotalBytes = max(2 * self.segmentBytes, maxTotalBytes)
        }
    }

    /// Records larger than this (a huge message with its `userInfo`) are not journaled; they still reach every
    /// destination, but are not crash-safe (said once on the diagnostics sink).
    var maximumRecordBytes: Int { spool.configuration.maxRecordBytes }

    public let configuration: Configuration
    let spool: Spool
    /// How many records an earlier run left (from the cursor on, before this journal's own).
    let recoveryCount: Int
    /// Where the earlier run's records end: this run's own begin there.
    let recoveryEnd: SpoolPosition
    private let diagnostics: DiagnosticSink
    /// The once-key of ``reportAppendFailure(_:)``, built once: while a full disk refuses the journal, every log call
    /// reports again, and only the first says it.
    private let appendFailureKey: String
    private let openingTaken = LockedValue(false)
    /// Whether a pipeline runs with the journal (see ``claim()``).
    private let service = LockedValue(Service.free)

    /// Who the journal serves.
    private enum Service {
        case free
        /// A pipeline's setup runs with it.
        case serving
        /// ``close()`` was called: a pipeline closes its journal when it retires the setup it came with.
        case closed
    }

    /// Opens (creating if needed) the journal in `configuration.directory` and finds what an earlier run left.
    ///
    /// - Throws: ``JustLogError`` with code ``JustLogError/Code/spoolUnavailable`` if the folder can't be created,
    ///   locked (another process uses it) or read, or a newer version of JustLog wrote it (it is left as it is).
    public init(configuration: Configuration, diagnostics: DiagnosticSink = .standardError) throws {
        self.configuration = configuration
        self.diagnostics = diagnostics.withOwnReports()
        self.appendFailureKey = "journal.append.\(configuration.directory)"
        var spoolConfiguration = Spool.Configuration(
            directory: configuration.directory,
            segmentBytes: configuration.segmentBytes,
            maxTotalBytes: configuration.maxTotalBytes,
            maxRecordBytes: configuration.segmentBytes - 256,
            name: "log journal"
        )
        spoolConfiguration.segmentRetryInterval = configuration.segmentRetryInterval
        spoolConfiguration.now = configuration.now
        spoolConfiguration.onStartingASegment = configuration.onStartingASegment
        spoolConfiguration.segmentWrites = configuration.segmentWrites
        self.spool = try Spool(unopened: spoolConfiguration, diagnostics: diagnostics)
        try spool.open(waitingForLock: configuration.lockWait)
        self.recoveryCount = spool.counterSnapshot.queuedRecords
        self.recoveryEnd = spool.endPosition
    }

    /// Takes the journal for the pipeline setup about to run with it: `nil` when it may, otherwise why it may not —
    /// it already serves another pipeline (each would take the other's events as written, acknowledge them and lose
    /// them) or it is closed. That pipeline then runs without a journal, as it does without the folder.
    func claim() -> String? {
        let wasClosed: Bool? = service.withLock { service in
            switch service {
            case .free:
                service = .serving
                return nil
            case .serving: return false
            case .closed: return true
            }
        }
        guard let wasClosed else { return nil }
        let why =
            wasClosed
            ? "is closed (a pipeline closes its journal when it retires the setup it came with: open a new EventJournal on the folder in each setup, inside reconfigure's build closure)"
            : "already serves another pipeline (a journal serves one: give each pipeline a folder of its own)"
        return
            "the log journal in \(configuration.directory) \(why); this pipeline runs without it: its background destinations lose what is queued if the program is killed"
    }

    /// What the pipeline's worker does once with the journal, before the first batch it writes with it; `nil` after
    /// the first call. `recover`: an earlier run left records (``recoveryCount``) to write. `lost`, `lostUncounted`:
    /// what the journal found lost when it was opened and no earlier open reported — how many records (damaged, in
    /// a deleted segment), and one line for each loss whose count is unknown — said on the diagnostics sink then, to
    /// be reported once in the log.
    func takeOpening() -> (recover: Bool, lost: UInt64, lostUncounted: [String])? {
        let first = openingTaken.withLock { taken in
            defer { taken = true }
            return !taken
        }
        guard first else { return nil }
        return (recoveryCount > 0, spool.takeLossesToReport(), spool.takeUncountedLossesToReport())
    }

    /// Appends an encoded record; returns where it starts and the position just after it (to acknowledge it),
    /// or `nil` — said once — when it could not be journaled (too large, a full disk): the event still goes on,
    /// only not crash-safe.
    func append(_ record: [UInt8]) -> (start: SpoolPosition, end: SpoolPosition)? {
        record.withUnsafeBytes { append($0) }
    }

    /// Appends a record encoded in place; see ``append(_:)-([UInt8])``.
    func append(_ record: UnsafeRawBufferPointer) -> (start: SpoolPosition, end: SpoolPosition)? {
        do {
            return try spool.appendRecord(record)
        } catch {
            reportAppendFailure(error)
            return nil
        }
    }

    /// Takes the place of `record` while the journal has room for it below its half (looked at under
    /// the spool's lock, with the reservation: see ``roomBelowHalf(for:)``), for the caller to fill once it has
    /// released its own lock (see ``SpoolReservation``); `nil` otherwise — with `noRoom` set when that look found no
    /// room (the caller may wait for some), left alone when the place can't be taken at all (said once).
    @inline(__always)
    func reserveBelowHalf(_ record: UnsafeRawBufferPointer, noRoom: inout Bool) -> SpoolReservation? {
        do {
            guard let reservation = try spool.reserveRecord(record, whileQueuedBytesBelow: halfOfTheJournal) else {
                noRoom = true
                return nil
            }
            return reservation
        } catch {
            reportAppendFailure(error)
            return nil
        }
    }

    /// Says once that events can't be journaled, and why.
    private func reportAppendFailure(_ error: any Error) {
        diagnostics.reportOnce(
            key: appendFailureKey,
            "can't journal an event in \(configuration.directory) (\(error)); it is still written, but would be lost if the program were killed first"
        )
    }

    /// Every record before `position` is written by every destination that reads the journal.
    func acknowledge(upTo position: SpoolPosition) {
        spool.acknowledge(upTo: position)
    }

    /// Every one of `records`, read with ``read(from:before:maxRecords:)`` from the oldest not yet acknowledged, is
    /// written by every destination (no frame is walked to count them). Their bytes may be reused from now on.
    func acknowledge(_ records: SpoolRecords) {
        spool.acknowledge(records.extent)
    }

    /// Reads at most `maxRecords` records from `position` (none that starts at `limit` or later) where they lie,
    /// with where the first one starts (later than `position` if the records there were dropped at the cap) and the
    /// position after them: see ``SpoolRecords``. Only the pipeline's thread reads, and it acknowledges records
    /// only once it has written them.
    func read(from position: SpoolPosition, before limit: SpoolPosition? = nil, maxRecords: Int) -> SpoolRecords {
        spool.readInPlace(from: position, before: limit, maxRecords: maxRecords)
    }

    /// The entries of `records`. A record that can't be decoded (written by a newer version) is counted in
    /// `unreadable` and skipped.
    static func entries(of records: SpoolRecords) -> (entries: [JournalEntry], unreadable: Int) {
        var entries: [JournalEntry] = []
        entries.reserveCapacity(records.recordCount)
        var unreadable = 0
        records.withPayloads { bytes, payloads in
            while let payload = payloads.next() {
                if let entry = entry(in: bytes, payload) {
                    entries.append(entry)
                } else {
                    unreadable += 1
                }
            }
        }
        return (entries, unreadable)
    }

    /// The entry of the record whose payload is `payload` of `bytes`, or `nil` if it can't be decoded whole.
    static func entry(in bytes: UnsafeRawBufferPointer, _ payload: Range<Int>) -> JournalEntry? {
        let record = UnsafeRawBufferPointer(rebasing: bytes[payload])
        guard let (entry, consumed) = try? JournalCodec.decode(record), consumed == record.count else { return nil }
        return entry
    }

    /// The bytes of the records not yet acknowledged.
    var unacknowledgedBytes: Int { spool.counterSnapshot.queuedBytes }

    /// Whether what the destinations have not written takes less than half the journal (the bytes half of
    /// ``roomBelowHalf(for:)``'s condition).
    var isLessThanHalfFull: Bool { unacknowledgedBytes < halfOfTheJournal }

    /// Whether a record of `count` bytes would be journaled now without reaching the cap, where the oldest records
    /// not yet written would be dropped.
    func takesWithoutDropping(_ count: Int) -> Bool { spool.takesWithoutDropping(count) }

    /// Whether a record of `count` bytes may wait in the journal alone (the fast lane, a full queue's spill) now —
    /// the bound up to which events wait here instead of in the queue, so that the journal never reaches its cap,
    /// where it would drop the oldest, and up to which a destination may hold the pipeline's thread back
    /// (``PipelineHoldingBack``):
    /// what the destinations have not written takes less than half of it and the record starts no segment past the
    /// cap (with few segments, half the bytes may already span all but one) — ``RecordRoom/available``, and
    /// ``reserveBelowHalf(_:noRoom:)`` takes its place; ``RecordRoom/notNow``, and the caller may wait for the destinations
    /// to make room; ``RecordRoom/never`` for a record the journal can't take at all (reserving says why).
    func roomBelowHalf(for count: Int) -> RecordRoom {
        spool.room(for: count, whileQueuedBytesBelow: halfOfTheJournal)
    }

    /// The bound below which what the destinations have not written lets events wait in the journal alone.
    private var halfOfTheJournal: Int { configuration.maxTotalBytes / 2 }

    /// Whether what the destinations have not acknowledged takes less than a quarter of the journal: the bound up to
    /// which the pipeline keeps records a destination holds only in its memory (see ``MemoryHolding``), well below
    /// the half where callers would wait for room.
    var hasRoomToKeepRecordsHeldInMemory: Bool { unacknowledgedBytes < configuration.maxTotalBytes / 4 }

    /// Where the records not yet acknowledged begin.
    var cursor: SpoolPosition { spool.cursor }

    /// Closes the files; what is not acknowledged stays for the next journal opened on the folder. A pipeline given
    /// the journal afterwards runs without it (see ``LogPipeline/Setup/journal``).
    public func close() {
        service.withLock { $0 = .closed }
        spool.close()
    }

    /// Closes the journal and deletes its folder if it holds nothing unwritten (see ``StrayJournals``); otherwise
    /// closes it as ``close()`` does. Returns whether the folder was deleted.
    @discardableResult
    package func closeRemovingFolderIfEverythingIsWritten() -> Bool {
        service.withLock { $0 = .closed }
        return spool.closeRemovingFolderIfEmpty(alsoRemoving: { $0.hasPrefix(JournalContexts.namePrefix) })
    }
}
