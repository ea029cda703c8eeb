import Foundation

/// The mutable heart of a ``LogPipeline``: the bounded FIFO, its counters, and the worker thread that drains
/// it. The worker holds this object, not the pipeline, so a released pipeline can stop its worker.
final class PipelineQueue: @unchecked Sendable {
    private enum Item {
        /// An event for the worker to build; `inline` when the inline destinations have not seen it yet (it was
        /// queued while the pipeline held events or was being reconfigured).
        /// `journaled`: the position just after its journal record, to acknowledge once it is written.
        case event(LogEvent, sequence: UInt64, bytes: Int, inline: Bool, journaled: SpoolPosition?)
        /// A record the inline destinations already have, for the background ones.
        case record(LogRecord, bytes: Int, journaled: SpoolPosition?)
        /// `count` events that are only in the journal, its records from `from` up to `to`: the fast lane's (see
        /// ``PipelineQueue/submitJournaled(_:lane:)``) and those logged while the queue was full (see
        /// ``PipelineQueue/spill(_:of:)``); the worker reads them back. One item holds any number of them.
        case journaled(from: SpoolPosition, to: SpoolPosition, count: Int)
        case flush(FlushBarrier)
        case action(@Sendable () -> Void)
        /// The point in log order where the destinations are replaced (see ``Reconfiguration``).
        case reconfigure(Reconfiguration)

        /// The message bytes the item counted against the queue's byte bound when it was queued (a
        /// sanitizer may have changed the record's message since: the same number must come off).
        var bytes: Int {
            switch self {
            case .event(_, _, let bytes, _, _), .record(_, let bytes, _): bytes
            case .journaled, .flush, .action, .reconfigure: 0
            }
        }

        /// An event or record the journal does not hold (with a journal: one it could not take).
        var isUnjournaledRecord: Bool {
            switch self {
            case .event(_, _, _, _, nil), .record(_, _, nil): true
            case .event, .record, .journaled, .flush, .action, .reconfigure: false
            }
        }

        var eventCount: Int {
            switch self {
            case .event, .record: 1
            case .journaled(_, _, let count): count
            case .flush, .action, .reconfigure: 0
            }
        }
    }

    /// Items the worker takes at a time: small enough that progress (which restarts a waiting caller's
    /// patience) is seen often, large enough that the queue's lock is taken once for many events (their records
    /// still go out at most ``writeLimit`` a write).
    static let batchLimit = 1024

    /// Items the worker takes at a time once the exit flush has started: its progress, which keeps the exit
    /// handler waiting, then shows every few milliseconds even through a slow destination.
    static let exitBatchLimit = 64

    /// The most records the worker hands the background destinations in one write (events built from the queue,
    /// or read from the journal): an exit that begins while a write is under way waits for that write without
    /// seeing progress, so a write of a whole batch through a slow destination (1,024 records at 0.3 ms, on a
    /// loaded machine) could outlast the exit's patience.
    static let writeLimit = 256

    /// How long the worker lingers after being woken, and after a batch before it sleeps, so that a burst — and a
    /// steady stream — costs one wake-up, not one per event; also the most a lone event waits before it is written.
    static let linger = 0.001

    private enum State { case running, stopping, stopped }

    let diagnostics: DiagnosticSink
    let now: @Sendable () -> LogTimestamp

    /// Guards every `var` below. They are touched only under it, one access at a time (a value needed after
    /// `unlock()` is read before it): `@exclusivity(unchecked)`
    /// spares each access the run-time exclusivity check, which a log call would pay several times.
    private let lock = ConditionLock()
    /// The destinations callers write inline to (under the lock). The worker keeps its own view, which changes
    /// at the ``Item/reconfigure(_:)`` item, in log order.
    @exclusivity(unchecked) private var dispatcher: RecordDispatcher
    @exclusivity(unchecked) private var limits: LogPipeline.Configuration
    /// What a log call reads before it captures: see ``LogPipeline/intake``.
    private var currentIntake: LogPipeline.Intake {
        didSet { publishIntake() }
    }
    /// `currentIntake.minimumLevel`, read without the lock (see ``LogPipeline/admits(_:)``).
    let levelGate: LevelGate
    /// What the fast lane needs of `currentIntake`, read without the lock (see ``FastLaneGate``).
    let fastLane = FastLaneGate()
    /// The version of `fastLane`'s values: a record encoded with another is not taken by ``submitJournaled``.
    @exclusivity(unchecked) private var fastLaneVersion: UInt64 = 0
    /// The journal the fast lane appends to while `fastLaneVersion` holds: `currentIntake`'s, when it is open.
    /// Unretained (a log call spares a retain and a release): `currentIntake` holds it, and both change together
    /// under the lock.
    @exclusivity(unchecked) private var fastLaneJournal: Unmanaged<EventJournal>?
    /// Before the first configuration (`Logger.shared` before `setup()`): events are kept, at most this many
    /// (the oldest dropped and counted), and nothing is written. `nil` once configured.
    @exclusivity(unchecked) private var holdCapacity: Int?
    @exclusivity(unchecked) private var heldDrops: UInt64 = 0
    /// Reconfigurations asked for and not finished: while there are any, events are queued for the worker
    /// (the inline destinations are being replaced).
    @exclusivity(unchecked) private var reconfigurationsInProgress = 0
    /// `.event` items queued with `inline: true` that the worker has not written yet. Callers write inline
    /// themselves again only when it is 0, so that no event overtakes an older one at an inline destination.
    @exclusivity(unchecked) private var inlineBacklog = 0
    /// The FIFO: `items[head...]` are waiting; the worker advances `head` and compacts now and then.
    @exclusivity(unchecked) private var items: [Item] = []
    @exclusivity(unchecked) private var head = 0
    /// The place of the events journaled since the last item, kept apart from `items` while it grows — extending it
    /// is three stores, where rewriting the last item copied and destroyed an enum — and moved there (see
    /// ``closePlace()``) before any other item is queued and before the worker takes a batch. Empty: `count` 0.
    @exclusivity(unchecked) private var openPlace = JournalPlace()
    @exclusivity(unchecked) private var queuedBytes = 0
    @exclusivity(unchecked) private var nextSequence: UInt64 = 0
    @exclusivity(unchecked) private var counters = LogPipeline.Statistics()
    @exclusivity(unchecked) private var unreportedDrops: UInt64 = 0
    /// The worker's own: where a journal's records written to every background destination end, not acknowledged
    /// because a destination holds some of them only in its memory (see ``acknowledge(_:upTo:with:)``).
    @exclusivity(unchecked) private var keptUnacknowledged: (journal: EventJournal, position: SpoolPosition)?
    /// The worker sleeps until an item wakes it.
    @exclusivity(unchecked) private var workerIsWaiting = false
    /// A caller that queued an event has woken the sleeping worker, which has not run yet: the callers of events
    /// after it don't wake it again (a futex call each). Control items, callers waiting for room and
    /// reconfigurations wake it all the same: they do not depend on that caller's thread being scheduled.
    @exclusivity(unchecked) private var workerIsWoken = false
    /// The worker waits out ``linger``: an event does not wake it (the next batch gathers meanwhile), a control
    /// item (a flush, an action, a reconfiguration) and a caller waiting for room do.
    @exclusivity(unchecked) private var workerIsLingering = false
    /// A control item is queued that the worker has not taken yet: it does not linger (see ``linger()``).
    @exclusivity(unchecked) private var controlPending = false
    /// Threads waiting for the worker's progress: log calls waiting for room, and shutdowns or exits waiting for
    /// the worker to finish (``finishWaiters`` of them), which the worker also wakes as it moves.
    @exclusivity(unchecked) private var producersWaiting = 0
    /// Of ``producersWaiting``, those that are not log calls (``waitForWorkerToFinish(patience:)``).
    @exclusivity(unchecked) private var finishWaiters = 0
    /// The worker's thread. A call made on it — a destination or an action that logs through its own pipeline —
    /// never waits for room: only the worker makes room, so it would only wait out its patience.
    @exclusivity(unchecked) private var workerThread: pthread_t?
    /// `batchesTaken` when a fast-lane call last waited in vain for room at half the journal (the destinations made
    /// no progress for `fullQueueWait`): until they move again, later calls take the full path at once, which
    /// queues them in memory while there is room — a stalled destination costs one call the wait, not every call.
    @exclusivity(unchecked) private var journalWaitGaveUpAt: UInt64?
    @exclusivity(unchecked) private var batchesTaken: UInt64 = 0
    @exclusivity(unchecked) private var state: State = .running
    @exclusivity(unchecked) private var workerFinished = false
    /// The worker took the destinations it shuts down last: nothing takes a dispatcher installed after this.
    @exclusivity(unchecked) private var workerTookItsLastDispatcher = false
    @exclusivity(unchecked) private var exiting = false
    @exclusivity(unchecked) private var destinationFailure: (any Error)?

    init(
        dispatcher: RecordDispatcher,
        configuration: LogPipeline.Configuration,
        intake: LogPipeline.Intake,
        holdCapacity: Int? = nil,
        diagnostics: DiagnosticSink,
        now: @escaping @Sendable () -> LogTimestamp
    ) {
        self.dispatcher = dispatcher
        self.limits = configuration
        self.currentIntake = intake
        self.levelGate = LevelGate(intake.minimumLevel)
        self.fastLaneVersion = fastLane.publish(intake)
        self.fastLaneJournal = intake.journalOnly ? intake.journal.map(Unmanaged.passUnretained) : nil
        self.holdCapacity = holdCapacity.map { max(1, $0) }
        self.diagnostics = diagnostics.withOwnReports()
        self.now = now
        items.reserveCapacity(min(configuration.capacity, 4096))
    }

    /// The pipeline's limits (they change when it is reconfigured).
    var configuration: LogPipeline.Configuration { lock.withLock { limits } }

    var intake: LogPipeline.Intake { lock.withLock { currentIntake } }

    /// Log calls capture with `privacy` and `limits` (those given) from now on — held ones for the first setup too —
    /// until a reconfiguration brings its own.
    func capture(privacy: PrivacyPolicy?, limits: CaptureLimits?) {
        lock.withLock {
            if let privacy { currentIntake.privacy = privacy }
            if let limits { currentIntake.captureLimits = limits }
            publishIntake()
        }
    }

    /// Publishes the intake to the log calls' gates (lock held).
    private func publishIntake() {
        levelGate.set(currentIntake.minimumLevel)
        fastLaneVersion = fastLane.publish(currentIntake)
        fastLaneJournal = currentIntake.journalOnly ? currentIntake.journal.map(Unmanaged.passUnretained) : nil
    }

    /// Whether the pipeline still waits for its first configuration.
    var isHolding: Bool { lock.withLock { holdCapacity != nil } }

    /// Whether the pipeline is shutting down or shut down.
    var isStopped: Bool { lock.withLock { state != .running } }

    func startWorker() {
        let thread = Thread { [self] in self.runWorker() }
        thread.name = "JustLog pipeline"
        thread.qualityOfService = .utility
        thread.start()
    }

    var statistics: LogPipeline.Statistics {
        lock.withLock {
            var statistics = counters
            statistics.callersWaiting = producersWaiting - finishWaiters
            return statistics
        }
    }

    // MARK: - Submitting

    func submit(_ event: LogEvent) {
        var event = event
        let bytes = event.message.utf8.count
        // Encoded outside the lock: under it, only the sequence number is written in and the record copied.
        var journalRecord = encodeForJournal(&event)
        lock.lock()
        guard state == .running else {
            counters.dropped += 1
            lock.unlock()
            reportLoggedAfterShutdown()
            return
        }
        if let holdCapacity {
            hold(event, bytes: bytes, capacity: holdCapacity)
            lock.unlock()
            return
        }
        var hasInline = false
        var queued = false
        while true {
            // Events queued for the inline destinations while the destinations were replaced (or held before the
            // first setup) are written first, by the worker: this one waits behind them — if there are inline
            // destinations now (background ones keep the queue's order anyway; had every call waited, a stalled
            // background destination would have held calls to the reconfiguration's patience, past its end).
            if reconfigurationsInProgress > 0 || (inlineBacklog > 0 && !dispatcher.inlineRoutes.isEmpty) {
                submitQueued(event, bytes: bytes)
                return
            }
            hasInline = !dispatcher.inlineRoutes.isEmpty
            queued = !dispatcher.backgroundRoutes.isEmpty
            // Only the background destinations wait in the queue. When it stays full (a stuck terminal), the
            // event is dropped for them — and still written to the inline ones: a healthy spool loses nothing.
            guard queued, !hasRoom(for: bytes, journaling: journalRecord?.record.count ?? 0) else { break }
            // With a journal, the event waits there instead: the caller does not wait (lock released on success).
            let spilled = spill(&journalRecord, of: event)
            if spilled == .spilled { return }
            // The lock is released while waiting: a reconfiguration may have begun meanwhile (look again).
            // A reconfiguration that begins meanwhile ends the wait: the event then waits as the reconfiguration's
            // do (look again), not only `fullQueueWait` while the worker is busy replacing the destinations.
            if waitForRoom(
                bytes: bytes,
                journaling: journalRecord?.record.count ?? 0,
                orReconfiguration: true,
                orJournalRoom: spilled == .journalHalfFull
            ) {
                continue
            }
            queued = false
            counters.dropped += 1
            unreportedDrops += 1
            let stopped = state != .running
            let why = fullQueueDrop(afterWaiting: limits.fullQueueWait)
            lock.unlock()
            reportFullQueue(why)
            guard hasInline, !stopped else { return }
            lock.lock()
            guard state == .running, reconfigurationsInProgress == 0, inlineBacklog == 0,
                !dispatcher.inlineRoutes.isEmpty
            else {
                lock.unlock()
                return
            }
            break
        }
        let hasBackground = !dispatcher.backgroundRoutes.isEmpty
        let sequence = nextSequence
        nextSequence += 1
        counters.submitted += 1
        let journaled = queued ? journal(&journalRecord, of: event, sequence: sequence)?.end : nil
        if !hasInline {
            enqueue(.event(event, sequence: sequence, bytes: bytes, inline: false, journaled: journaled))
        } else {
            let record = dispatcher.record(event, sequence: sequence)
            dispatcher.writeInline(record)
            guard queued else {
                // Nothing (more) to do in the background: don't hold the record in memory.
                if !hasBackground { counters.delivered += 1 }
                lock.unlock()
                return
            }
            enqueue(.record(record, bytes: bytes, journaled: journaled))
        }
        queuedBytes += bytes
        unlockWakingTheWorker()
    }

    /// The event's journal record, if the pipeline has a journal (read with the intake, without holding the lock
    /// while encoding).
    private func encodeForJournal(_ event: inout LogEvent) -> (record: [UInt8], journal: EventJournal)? {
        let intake = self.intake
        guard let journal = intake.journal else { return nil }
        let record = JournalCodec.record(
            of: &event,
            eventIDPrefix: intake.eventIDPrefix,
            errorLimits: intake.errorLimits
        )
        return (record, journal)
    }

    /// Journals an accepted event (lock held, so records are in log order); returns where its record starts and
    /// the position to acknowledge once it is written. A reconfiguration between encoding and here (rare) means
    /// encoding again.
    private func journal(
        _ encoded: inout (record: [UInt8], journal: EventJournal)?,
        of event: LogEvent,
        sequence: UInt64
    ) -> (start: SpoolPosition, end: SpoolPosition)? {
        guard let journal = dispatcher.journal, !dispatcher.backgroundRoutes.isEmpty else { return nil }
        encode(&encoded, of: event, for: journal, sequence: sequence)
        return journal.append(encoded!.record)
    }

    /// Makes `encoded` the event's record for `journal` — encoding it again if it was encoded for another (a
    /// reconfiguration between encoding and taking the lock: rare) — numbered `sequence` (lock held).
    private func encode(
        _ encoded: inout (record: [UInt8], journal: EventJournal)?,
        of event: LogEvent,
        for journal: EventJournal,
        sequence: UInt64
    ) {
        if encoded?.journal !== journal {
            var event = event
            let record = JournalCodec.record(
                of: &event,
                eventIDPrefix: dispatcher.builder.eventIDs.prefix,
                errorLimits: dispatcher.builder.limits
            )
            encoded = (record, journal)
        }
        // Written in place: the record is not copied (it is uniquely referenced here).
        JournalCodec.setSequence(sequence, in: &encoded!.record)
    }

    /// The queue is full (lock held): with a journal, and while what the destinations have not written takes less
    /// than half of it, the event is journaled and not queued in memory — the worker reads it back in its turn
    /// (see ``Item/journaled(from:to:count:)``) — so the caller neither waits nor loses it. Past half, callers
    /// wait for room as without a journal: the journal never reaches its cap, where it would drop the oldest. Inline
    /// destinations get it now, as usual. Returns ``Spill/spilled`` once done, with the lock released; otherwise
    /// (nothing done, lock held) why not.
    private func spill(_ encoded: inout (record: [UInt8], journal: EventJournal)?, of event: LogEvent) -> Spill {
        guard let journal = dispatcher.journal, !dispatcher.backgroundRoutes.isEmpty else { return .notSpilled }
        encode(&encoded, of: event, for: journal, sequence: nextSequence)
        // Room and place taken in one look under the spool's lock: the condition a caller then waits for is exactly
        // the one that failed (``waitForRoom(bytes:journaling:patience:orReconfiguration:orJournalRoom:)``).
        var noRoom = false
        let sequence = nextSequence
        let journaled = encoded!.record.withUnsafeBytes { record in
            guard let reservation = journal.reserveBelowHalf(record, noRoom: &noRoom) else { return false }
            queueJournaled(from: reservation.start, to: reservation.end)
            reservation.fill(with: record)
            return true
        }
        guard journaled else { return noRoom ? .journalHalfFull : .notSpilled }
        if !dispatcher.inlineRoutes.isEmpty { dispatcher.writeInline(dispatcher.record(event, sequence: sequence)) }
        unlockWakingTheWorker()
        return .spilled
    }

    /// What ``spill(_:of:)`` did.
    private enum Spill {
        case spilled
        /// The journal has no room below its half: the caller may spill once it has (see
        /// ``waitForRoom(bytes:journaling:patience:orReconfiguration:orJournalRoom:)``).
        case journalHalfFull
        /// No journal, or the record could not be appended.
        case notSpilled
    }

    /// Queues (lock held) the event just journaled from `start` to `end` by its place in the journal alone, with
    /// the next sequence number (the one its record carries). Consecutive such events are consecutive journal
    /// records (every journaled event is queued in order): one place holds them all, so the queue does not grow.
    private func queueJournaled(from start: SpoolPosition, to end: SpoolPosition) {
        // Wrapping adds (a log call's every instruction counts): 2^64 calls are never made.
        nextSequence &+= 1
        counters.submitted &+= 1
        if openPlace.count == 0 { openPlace.from = start }
        openPlace.to = end
        openPlace.count &+= 1
    }

    /// Moves the open place, if any, to the end of `items` (lock held).
    private func closePlace() {
        guard openPlace.count > 0 else { return }
        items.append(.journaled(from: openPlace.from, to: openPlace.to, count: openPlace.count))
        openPlace.count = 0
    }

    /// Queues an item (lock held), after the events journaled before it.
    private func enqueue(_ item: Item) {
        closePlace()
        items.append(item)
    }

    /// Whether nothing waits: no item, no open place.
    private var isEmpty: Bool { head == items.count && openPlace.count == 0 }

    /// The fast lane (see ``JournalCodec/encodeCall(level:message:userInfo:callSite:timestamp:eventIDPrefix:limits:into:)``):
    /// when every destination reads the journal, a log call's record goes there and the queue holds only its place
    /// — the lock covers the sequence number, the record's reserved place in the mapped segment (the journal's lock
    /// within it) and the queue's; the record is copied in after both are released (``SpoolReservation``), and the
    /// worker reads the event back once it is. `lane` is the version of the ``FastLaneGate`` values the record was encoded with. Returns
    /// `false`, having done nothing, whenever the event needs the full path: the pipeline is not running or not set
    /// up, destinations are being replaced or are written inline, the intake changed since the caller read the
    /// gate, or the journal could not take the record. At half the journal the call waits for room while the
    /// destinations make progress (``queueJournaledOnceThereIsRoom(_:lane:)``), and takes the full path if they
    /// make none for `fullQueueWait`.
    func submitJournaled(_ record: UnsafeMutableRawBufferPointer, lane: UInt64) -> Bool {
        let attempt = queueJournaled(record, lane: lane)
        if attempt == .queued { return true }
        return attempt == .journalFull && queueJournaledOnceThereIsRoom(record, lane: lane)
    }

    /// What one attempt of the fast lane did.
    private enum JournaledAttempt {
        case queued
        /// Nothing done: the event needs the full path.
        case declined
        /// Nothing done: the journal has no room below its half for the record (see
        /// ``EventJournal/roomBelowHalf(for:)``, ``waitForJournalRoom(for:)``).
        case journalFull
    }

    /// One attempt of ``submitJournaled(_:lane:)``.
    @inline(__always)
    private func queueJournaled(_ record: UnsafeMutableRawBufferPointer, lane: UInt64) -> JournaledAttempt {
        lock.lock()
        // The version says the intake is the one the record was encoded with, and so that every destination reads
        // the journal (`fastLaneJournal`, the dispatcher's).
        // Events queued for inline destinations before (`inlineBacklog`) don't hold it: with a fast lane there are
        // none now, and its places queue behind those events.
        guard lane == fastLaneVersion, let journal = fastLaneJournal, state == .running, holdCapacity == nil,
            reconfigurationsInProgress == 0
        else {
            lock.unlock()
            return .declined
        }
        JournalCodec.setSequence(nextSequence, in: record)
        var reserved: SpoolReservation?
        var noRoom = false
        journal._withUnsafeGuaranteedRef {
            reserved = $0.reserveBelowHalf(UnsafeRawBufferPointer(record), noRoom: &noRoom)
        }
        guard let reservation = reserved.take() else {
            lock.unlock()
            return noRoom ? .journalFull : .declined
        }
        queueJournaled(from: reservation.start, to: reservation.end)
        let wake = unlockNotingWake()
        // The copy and its checksums, outside every lock: the worker waits at this place until it is filled.
        reservation.fill(with: UnsafeRawBufferPointer(record))
        if wake { lock.broadcast() }
        return .queued
    }

    /// At half the journal the fast lane waits for room, as a call waits for a full queue (the journal is the fast
    /// lane's queue), and then takes it: leaving it for the full path would cost the call a capture and the
    /// pipeline's thread a record rebuilt from it — a stream faster than the destinations would slow down to half
    /// what they can write (BENCHMARKS part 18) — and queue in memory events the journal holds too, toward its
    /// cap. `false` when the destinations made no progress for `fullQueueWait` (or the pipeline changed): the full
    /// path then takes the event.
    @inline(never)
    private func queueJournaledOnceThereIsRoom(_ record: UnsafeMutableRawBufferPointer, lane: UInt64) -> Bool {
        while waitForJournalRoom(for: record.count) {
            switch queueJournaled(record, lane: lane) {
            case .queued: return true
            case .declined: return false
            case .journalFull: continue
            }
        }
        return false
    }

    /// Waits (lock not held) while the fast lane's journal has no room below its half for a record of `count` bytes
    /// and the destinations make progress; `true` once it has, `false` when they made none for `fullQueueWait`, the
    /// fast lane changed, a reconfiguration began (the call then waits as the reconfiguration's do) or the pipeline
    /// stopped.
    private func waitForJournalRoom(for count: Int) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let journal = fastLaneJournal?.takeUnretainedValue(), state == .running,
            journalWaitGaveUpAt != batchesTaken, !isWorkerThread
        else { return false }
        let lane = fastLaneVersion
        let moved = waitForProgress(patience: limits.fullQueueWait) {
            journal.roomBelowHalf(for: count) != .notNow || fastLaneVersion != lane || reconfigurationsInProgress > 0
                || state != .running
        }
        if !moved { journalWaitGaveUpAt = batchesTaken }
        return moved && fastLaneVersion == lane && reconfigurationsInProgress == 0 && state == .running
    }

    /// Before the first configuration (lock held): keeps the event; past `capacity` the oldest is dropped and
    /// counted (reported when the pipeline is configured).
    private func hold(_ event: LogEvent, bytes: Int, capacity: Int) {
        if items.count - head >= capacity, case .event(_, _, let oldBytes, _, _) = items[head] {
            head += 1
            queuedBytes -= oldBytes
            inlineBacklog -= 1
            heldDrops += 1
            counters.dropped += 1
            if head >= capacity {
                items.removeFirst(head)
                head = 0
            }
        }
        counters.submitted += 1
        enqueue(.event(event, sequence: nextSequence, bytes: bytes, inline: true, journaled: nil))
        nextSequence += 1
        queuedBytes += bytes
        inlineBacklog += 1
    }

    /// While the destinations are replaced, or the worker still writes to inline destinations events queued
    /// meanwhile (lock held, released here): every destination gets the event from the worker, in order. A full
    /// queue is waited for as long as the reconfiguration may take (only `fullQueueWait` once it has ended), then
    /// the event is dropped and counted.
    private func submitQueued(_ event: LogEvent, bytes: Int) {
        while !hasRoom(for: bytes) {
            // A reconfiguration that begins while this caller waits (the worker then waits for the new
            // destinations) ends the shorter wait: the caller looks again, with the reconfiguration's patience.
            let reconfiguring = reconfigurationsInProgress > 0
            let patience =
                reconfiguring ? max(limits.fullQueueWait, LogPipeline.reconfigurationPatience) : limits.fullQueueWait
            if waitForRoom(bytes: bytes, patience: patience, orReconfiguration: !reconfiguring) { continue }
            counters.dropped += 1
            unreportedDrops += 1
            let why = fullQueueDrop(afterWaiting: patience)
            lock.unlock()
            reportFullQueue(why)
            return
        }
        guard state == .running else {
            counters.dropped += 1
            lock.unlock()
            reportLoggedAfterShutdown()
            return
        }
        counters.submitted += 1
        enqueue(.event(event, sequence: nextSequence, bytes: bytes, inline: true, journaled: nil))
        nextSequence += 1
        queuedBytes += bytes
        inlineBacklog += 1
        unlockWakingTheWorker()
    }

    /// Releases the lock after queuing an item, and wakes the worker if it waits for one — or, for a control item
    /// (`urgent`), lingers (after the release, so that it does not wake into a lock still held).
    private func unlockWakingTheWorker(urgent: Bool = false) {
        if unlockNotingWake(urgent: urgent) { lock.broadcast() }
    }

    /// Releases the lock after queuing an item; returns whether the caller is to wake the worker
    /// (`lock.broadcast()`), which it may do once it has finished what the worker will read (a reserved record's
    /// copy): see ``unlockWakingTheWorker(urgent:)``.
    private func unlockNotingWake(urgent: Bool = false) -> Bool {
        let wake = urgent ? workerIsWaiting || workerIsLingering : workerIsWaiting && !workerIsWoken
        if workerIsWaiting { workerIsWoken = true }
        lock.unlock()
        return wake
    }

    /// Reports (lock released) that an event came after the pipeline stopped, and was dropped.
    private func reportLoggedAfterShutdown() {
        diagnostics.reportOnce(
            key: "pipeline.stopped",
            "an event was logged after shutdown and dropped; log before shutting the logger down"
        )
    }

    /// Why an event found the queue full and was dropped for the background destinations.
    private enum FullQueueDrop {
        /// The destinations made no progress for `fullQueueWait` (read under the lock) while the call waited.
        case noProgress(Double)
        /// Logged on the pipeline's own thread, where it can't wait for room.
        case ownThread
        /// The pipeline began shutting down while the call waited.
        case shutDown
    }

    /// Why a call that waited up to `patience` seconds for room found none (lock held).
    private func fullQueueDrop(afterWaiting patience: Double) -> FullQueueDrop {
        if state != .running { return .shutDown }
        return isWorkerThread ? .ownThread : .noProgress(patience)
    }

    /// Reports (lock released) why an event was dropped at a full queue, once per reason.
    private func reportFullQueue(_ why: FullQueueDrop) {
        switch why {
        case .noProgress(let waited):
            diagnostics.reportOnce(
                key: "pipeline.full",
                "the log queue made no progress for \(waited) s (a destination is stalled); dropping events for the background destinations and counting them"
            )
        case .ownThread:
            diagnostics.reportOnce(
                key: "pipeline.full.own-thread",
                "events logged on the log pipeline's own thread (by a destination or an action while it ran) found the queue full, where they can't wait for room; dropping them for the background destinations and counting them"
            )
        case .shutDown:
            diagnostics.reportOnce(
                key: "pipeline.full.shutdown",
                "the log pipeline shut down while events waited for room in its full queue; dropping them for the background destinations and counting them"
            )
        }
    }

    private func hasRoom(for bytes: Int) -> Bool {
        items.count - head + (openPlace.count > 0 ? 1 : 0) < limits.capacity
            && (queuedBytes == 0 || queuedBytes + bytes <= limits.maximumQueuedBytes)
    }

    /// Room in the queue for an event whose journal record takes `recordBytes` (0: not journaled): the journal too
    /// must take the record without reaching its cap, where it would drop its oldest records — events the queue may
    /// hold by their place alone, not yet written (lock held).
    private func hasRoom(for bytes: Int, journaling recordBytes: Int) -> Bool {
        guard hasRoom(for: bytes) else { return false }
        guard recordBytes > 0, let journal = dispatcher.journal, !dispatcher.backgroundRoutes.isEmpty else {
            return true
        }
        return journal.takesWithoutDropping(recordBytes)
    }

    /// Waits (lock held) for room; `false` when the worker made no progress for `fullQueueWait`.
    ///
    /// The deadline restarts each time the worker shows progress (see ``progress``): a slow destination that
    /// keeps moving slows the caller down (back-pressure) but loses nothing; a stalled one costs each caller at
    /// most `fullQueueWait`, after which events are dropped and counted.
    ///
    /// - Parameter journaling: the size of the event's journal record (see ``hasRoom(for:journaling:)``).
    /// - Parameter orJournalRoom: also return (`true`) once the journal has room below its half again
    ///   (``EventJournal/roomBelowHalf(for:)``), for the caller to spill its event there. The worker frees
    ///   journal room as it writes, and a destination may then hold the worker back while that holds
    ///   (``PipelineHoldingBack``): a caller that waited only for the queue would see no progress, and drop.
    private func waitForRoom(
        bytes: Int,
        journaling recordBytes: Int = 0,
        patience: Double? = nil,
        orReconfiguration: Bool = false,
        orJournalRoom: Bool = false
    ) -> Bool {
        var other = false
        let moved = waitForProgress(patience: patience ?? limits.fullQueueWait) {
            if hasRoom(for: bytes, journaling: recordBytes) || state != .running { return true }
            if orReconfiguration, reconfigurationsInProgress > 0 { other = true }
            if orJournalRoom, let journal = dispatcher.journal, journal.roomBelowHalf(for: recordBytes) != .notNow {
                other = true
            }
            return other
        }
        return moved && (other || state == .running)
    }

    /// Waits until the worker, stopped, has written what was queued and shut the destinations down — as long as it
    /// makes progress; `false` when it made none for `patience` seconds (or at once on its own thread).
    func waitForWorkerToFinish(patience: Double) -> Bool {
        lock.withLock {
            finishWaiters += 1
            defer { finishWaiters -= 1 }
            return waitForProgress(patience: patience) { workerFinished }
        }
    }

    /// Whether the calling thread is the worker's: a destination's, or an action's run in log order.
    var callerIsWorker: Bool { lock.withLock { isWorkerThread } }

    /// Whether the calling thread is the worker's (lock held).
    private var isWorkerThread: Bool {
        guard let workerThread else { return false }
        return pthread_equal(workerThread, pthread_self()) != 0
    }

    /// Waits (lock held) until `done()`, while the worker makes progress; `false` when it made none for `patience`
    /// seconds of the program's running time (see ``Patience``), or at once on the worker's own thread (see
    /// ``workerThread``). Every progress the worker shows (see ``progress``) wakes the waiters and restarts the
    /// deadline.
    private func waitForProgress(patience seconds: Double, until done: () -> Bool) -> Bool {
        var seenBatches = batchesTaken
        // Time the program did not run (stopped, starved) is not held against the destinations.
        var patience = Patience(seconds: seconds)
        producersWaiting += 1
        defer { producersWaiting -= 1 }
        while !done() {
            guard !isWorkerThread else { return false }
            if batchesTaken != seenBatches {
                seenBatches = batchesTaken
                patience.restart()
            }
            guard let remaining = patience.nextWait() else { return false }
            // The worker, if it has something to take (woken with nothing, it sleeps again; and the broadcast
            // would wake the other waiters into a round of broadcasts of their own).
            if workerIsWaiting || workerIsLingering, !isEmpty { lock.broadcast() }
            _ = lock.wait(seconds: remaining)
            patience.woke()
        }
        return true
    }

    /// Appends a control item; `false` (and nothing appended) once the queue has stopped, or while it holds
    /// events before its first configuration (there are no destinations yet).
    private func enqueueControl(_ item: Item) -> Bool {
        lock.lock()
        guard state != .stopped, holdCapacity == nil else {
            lock.unlock()
            return false
        }
        enqueue(item)
        controlPending = true
        unlockWakingTheWorker(urgent: true)
        return true
    }

    func performInOrder(_ action: @escaping @Sendable () -> Void) {
        if !enqueueControl(.action(action)) { action() }
    }

    // MARK: - Flushing and stopping

    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        guard !enqueueControl(.flush(FlushBarrier(completion: completion))) else { return }
        let held: Int? = lock.withLock { state == .running ? holdCapacity.map { _ in items.count - head } : nil }
        if let held {
            completion(
                JustLogError(
                    .invalidConfiguration,
                    "the logger is not set up: call setup() first (\(held) event(s) waiting)"
                )
            )
        } else {
            completion(JustLogError(.shutdown, "the logger was shut down"))
        }
    }

    func flush(timeout: Double) -> (any Error)? {
        if let error = waitsForItself("flush(timeout:)") { return error }
        return requestFlush().wait(timeout: timeout, restartingOnProgress: false)
    }

    /// The error a call that waits for the worker gets on the worker's own thread, where it would wait for itself
    /// (until its timeout, or forever for a reconfiguration); `nil` on any other thread.
    private func waitsForItself(_ call: String) -> JustLogError? {
        guard callerIsWorker else { return nil }
        return JustLogError(
            .pipelineThread,
            "\(call) was called on the pipeline's own thread (by a destination, or an action run in log order), where it would wait for itself; call it from another thread"
        )
    }

    /// Queues a flush now and returns the handle to wait for it: the exit handler requests every pipeline's
    /// flush first, then waits for them together.
    func requestFlush() -> PendingFlush {
        let pending = PendingFlush(queue: self)
        flush { error in pending.finish(error) }
        return pending
    }

    /// The process is exiting: take small batches from now on, so that progress shows often (see ``ExitFlusher``).
    func prepareForExit() {
        lock.withLock { exiting = true }
    }

    /// Counts the worker's batches, and every 64 events it builds within one: it moves whenever the destinations
    /// make progress.
    var progress: UInt64 { lock.withLock { batchesTaken } }

    /// Whether the destinations callers write to now read a journal (what they have not written survives exit).
    var isJournaled: Bool { lock.withLock { dispatcher.journal != nil } }

    /// Events waiting in the queue (not yet taken by the worker).
    var waitingEvents: Int {
        lock.withLock { items[head...].reduce(openPlace.count) { $0 + $1.eventCount } }
    }

    /// Flushes (at most `timeout`), then stops the worker, which shuts the destinations down after the
    /// last item: a destination is never shut down while the worker may still write to it.
    func shutdown(timeout: Double) -> (any Error)? {
        let (first, onWorkerThread) = lock.withLock { () -> (Bool, Bool) in
            let onWorkerThread = isWorkerThread
            guard state == .running else { return (false, onWorkerThread) }
            // On the worker's own thread (a destination, an action — or the pipeline's last reference let go there)
            // nothing can be waited for: the worker stops once it has written what is queued (and leaves the exit
            // handler then: until it has, a shutdown elsewhere and the exit flush wait for it).
            state = onWorkerThread ? .stopped : .stopping
            lock.broadcast()
            return (true, onWorkerThread)
        }
        guard first else {
            // Stopped already — perhaps on the worker's own thread, which could not wait: wait here for the worker to
            // write what is queued and shut the destinations down (they are closed when this returns `nil`).
            if onWorkerThread || waitForWorkerToFinish(patience: timeout) { return nil }
            return JustLogError(
                .timeout,
                "shutdown: the destinations made no progress for \(timeout) s; they are closed when the worker finishes"
            )
        }
        if onWorkerThread {
            return JustLogError(
                .pipelineThread,
                "shutdown(timeout:) was called on the pipeline's own thread (by a destination, or an action run in log order), where it can't wait for itself: the pipeline stops once it has written what is queued"
            )
        }
        // Like the exit handler: small batches, so that progress shows as writes complete, and a flush that waits
        // while the destinations make progress (`timeout` is how long they may go without any). A pipeline still
        // waiting for its first configuration has nothing to flush (the worker reports what it held).
        prepareForExit()
        var error = isHolding ? nil : requestFlush().wait(timeout: timeout, restartingOnProgress: true)
        // A fixed bound, on the monotonic clock.
        var bound = Patience(seconds: timeout)
        let (finished, failure) = lock.withLock { () -> (Bool, (any Error)?) in
            state = .stopped
            lock.broadcast()
            while !workerFinished {
                guard let remaining = bound.nextWait() else { return (false, nil) }
                _ = lock.wait(seconds: remaining)
            }
            return (true, destinationFailure)
        }
        if !finished, error == nil {
            error = JustLogError(
                .timeout,
                "shutdown did not finish within \(timeout) s; the destinations are closed when the worker finishes"
            )
        }
        if error == nil { error = failure }
        // A worker that has not finished still has events to write: the exit flush waits for it, or says how many
        // it left (it leaves the exit handler itself once finished).
        if finished { ExitFlusher.shared.unregister(self) }
        return error
    }

    // MARK: - Worker

    private func runWorker() {
        recoverJournal(
            with: lock.withLock {
                workerThread = pthread_self()
                return dispatcher
            }
        )
        var batch: [Item] = []
        batch.reserveCapacity(min(configuration.capacity, 4096))
        /// Whether the worker has taken a batch since it last slept: then it lingers before it sleeps again.
        var busy = false
        while true {
            lock.lock()
            // Nothing to take: the queue is empty, or it holds events until the pipeline is first configured.
            func idle() -> Bool { (isEmpty || holdCapacity != nil) && state != .stopped }
            if idle() {
                // Just done with a batch: linger before sleeping, so that while events keep coming their callers
                // queue them without waking the worker (a syscall each, and the wake-up's latency on their
                // thread). Only a linger that finds nothing ends in sleep: an idle program is not woken.
                if busy, state == .running { linger() }
                var slept = false
                while idle() {
                    slept = true
                    busy = false
                    workerIsWaiting = true
                    lock.wait()
                    workerIsWaiting = false
                    workerIsWoken = false
                }
                // Woken by the first event of a burst: linger, so the rest of the burst is queued without a
                // wake-up per event.
                if slept, items.count - head < Self.batchLimit, state == .running { linger() }
            }
            busy = true
            if state == .stopped && (isEmpty || holdCapacity != nil) {
                // Shut down before it was ever configured: the held events had nowhere to go.
                let held = items.count - head
                if holdCapacity != nil, held > 0 {
                    counters.dropped += UInt64(held)
                    items.removeAll()
                    head = 0
                    diagnostics.report(
                        "\(held) event(s) logged before the logger was set up were never delivered (it was shut down first)"
                    )
                }
                let current = dispatcher
                workerTookItsLastDispatcher = true
                lock.unlock()
                let failure = current.shutdownDestinations(keepingOpen: []) {
                    acknowledgeWhatWasKept(with: current)
                }.failure
                lock.withLock {
                    destinationFailure = failure
                    workerFinished = true
                    // Its thread ends: the system may give its identity to another.
                    workerThread = nil
                    lock.broadcast()
                }
                ExitFlusher.shared.unregister(self)
                return
            }
            closePlace()
            let end = min(items.count, head + (exiting ? Self.exitBatchLimit : Self.batchLimit))
            batch.append(contentsOf: items[head..<end])
            for item in batch { queuedBytes -= item.bytes }
            head = end
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
                queuedBytes = 0
                // Every control item queued is in this batch.
                controlPending = false
            } else if head >= 4 * Self.batchLimit {
                items.removeFirst(head)
                head = 0
            }
            batchesTaken += 1
            let drops = unreportedDrops
            unreportedDrops = 0
            let current = dispatcher
            if producersWaiting > 0 { lock.broadcast() }
            lock.unlock()

            // A journal set up since the last batch (the first setup of a holding pipeline) is recovered first.
            recoverJournal(with: current)
            process(batch, with: current, reportingDrops: drops)
            batch.removeAll(keepingCapacity: true)
        }
    }

    /// Waits out ``linger`` (lock held) unless a control item, a caller waiting for room or a shutdown wakes it —
    /// or a control item is queued already (it woke the worker from its sleep): a flush does not wait for a batch
    /// to gather.
    private func linger() {
        guard !controlPending else { return }
        workerIsLingering = true
        _ = lock.wait(seconds: Self.linger)
        workerIsLingering = false
    }

    private func process(_ batch: [Item], with dispatcher: RecordDispatcher, reportingDrops drops: UInt64) {
        var dispatcher = dispatcher
        var records: [LogRecord] = []
        records.reserveCapacity(batch.count + 1)
        if drops > 0 {
            let report = dropReport(drops, dispatcher: dispatcher)
            // Inline destinations are written under the lock, in order with the callers' writes.
            lock.withLock { dispatcher.writeInline(report) }
            records.append(report)
        }
        var inlineWritten = 0
        /// Just after the newest journal record among `records`: acknowledged once they are written.
        var journaledUpTo: SpoolPosition?
        func deliver() {
            let count = UInt64(records.count)
            if !records.isEmpty { dispatcher.writeBackground(records) }
            if let position = journaledUpTo, let journal = dispatcher.journal {
                acknowledge(journal, upTo: position, with: dispatcher)
            } else {
                acknowledgeWhatWasKeptIfNoLongerHeld(with: dispatcher)
            }
            journaledUpTo = nil
            // Events queued for the inline destinations are written: callers may write inline again once
            // none is left (`inlineBacklog`).
            let caughtUp = inlineWritten
            guard count > 0 || caughtUp > 0 else { return }
            lock.withLock {
                counters.delivered += count
                inlineBacklog -= caughtUp
                // The journal may have room again: a caller waiting for the queue may spill there now.
                if producersWaiting > 0 { lock.broadcast() }
            }
            records.removeAll(keepingCapacity: true)
            inlineWritten = 0
        }
        /// Events built since progress last showed: a batch of 1,024 can take longer than `fullQueueWait` on a slow
        /// machine (ThreadSanitizer, two cores shared), and callers waiting for room must see that the worker moves.
        var sinceProgress = 0
        for item in batch {
            defer {
                // After the item, so that an exit-sized batch (64 events) goes out in one write, not 63 and 1.
                sinceProgress += item.eventCount
                if sinceProgress >= Self.exitBatchLimit {
                    sinceProgress = 0
                    // Callers wait for room, or an exit or a shutdown waits: what is built so far goes out now
                    // (and at most `writeLimit` records in any case).
                    if showProgress() || records.count >= Self.writeLimit { deliver() }
                }
            }
            // An event the journal never held (too large for it, a segment a full disk refused; or queued while the
            // destinations were replaced, or held before the first setup) goes out in a write after those before it
            // are acknowledged: killed after that write, the next start sees in the
            // file's newest line no record it holds, and writes everything it recovers — which is right only if
            // nothing it recovers is in the file already.
            if item.isUnjournaledRecord, journaledUpTo != nil { deliver() }
            switch item {
            case .event(let event, let sequence, _, let inline, let journaled):
                if let journaled { journaledUpTo = journaled }
                let record = dispatcher.record(event, sequence: sequence)
                if inline {
                    dispatcher.writeInline(record)
                    inlineWritten += 1
                }
                if dispatcher.backgroundRoutes.isEmpty {
                    if inline { lock.withLock { counters.delivered += 1 } }
                } else {
                    records.append(record)
                }
            case .record(let record, _, let journaled):
                if let journaled { journaledUpTo = journaled }
                records.append(record)
            case .journaled(let from, let to, let count):
                deliver()
                deliverFromJournal(from: from, to: to, count: count, with: dispatcher)
            case .flush(let barrier):
                deliver()
                dispatcher.flush(barrier)
            case .action(let action):
                deliver()
                action()
            case .reconfigure(let reconfiguration):
                deliver()
                dispatcher = replaceDestinations(of: dispatcher, at: reconfiguration)
                recoverJournal(with: dispatcher)
                _ = showProgress()
            }
        }
        deliver()
    }

    /// Counts progress within a batch (see ``progress``): a caller waiting for room, and the exit handler or a
    /// shutdown, wait on while it moves. Returns whether what was built should go out now: callers are waiting for
    /// room, or the pipeline is exiting or shutting down (whoever waits sees progress only as writes complete).
    private func showProgress() -> Bool {
        lock.withLock {
            batchesTaken += 1
            if producersWaiting > 0 { lock.broadcast() }
            return producersWaiting > 0 || exiting
        }
    }

    /// At a ``Reconfiguration``'s place in log order: the old background destinations get a final flush (at most
    /// ``LogPipeline/Configuration/exitFlushTimeout``), every old destination is shut down, then the worker waits
    /// for the new ones, which the caller of ``reconfigure(_:)`` builds meanwhile (they may need what the old
    /// ones held: a file, a spool folder's lock).
    private func replaceDestinations(of old: RecordDispatcher, at reconfiguration: Reconfiguration) -> RecordDispatcher
    {
        let background = RecordDispatcher(routes: old.backgroundRoutes, builder: old.builder, sanitizer: old.sanitizer)
        let flushed = PendingFlush(queue: self)
        background.flush(FlushBarrier { error in flushed.finish(error) })
        let flushError = flushed.wait(timeout: configuration.exitFlushTimeout, restartingOnProgress: false)
        let (failure, keptOpen) = old.shutdownDestinations(keepingOpen: reconfiguration.keepingOpen) {
            acknowledgeWhatWasKept(with: old)
        }
        let (replacement, abandoned) = reconfiguration.oldDestinationsClosed(
            failure: failure ?? flushError,
            keptOpen: keptOpen
        )
        guard abandoned else { return replacement }
        // The caller gave up waiting and built the new destinations meanwhile: what it would have done with the
        // old ones is done here, once they have closed.
        let installed = Set(replacement.routes.map { ObjectIdentifier($0.destination) })
        for destination in keptOpen where !installed.contains(ObjectIdentifier(destination)) {
            destination.shutdown()
        }
        if let failure = failure ?? flushError {
            diagnostics.report("the destinations a setup replaced closed late, and not cleanly: \(failure)")
        }
        return replacement
    }

    /// Writes to the background destinations the `count` events queued by their place in the journal alone (the
    /// fast lane, or spilled from a full queue), from `from` up to `to`, in chunks, acknowledging each; those the
    /// journal no longer holds (dropped at its cap) are counted and reported.
    private func deliverFromJournal(
        from: SpoolPosition,
        to: SpoolPosition,
        count: Int,
        with dispatcher: RecordDispatcher
    ) {
        var remaining = count
        var unreadable = 0
        if let journal = dispatcher.journal {
            remaining = forEachJournalChunk(of: journal, from: from, before: to, count: count) { chunk in
                let written = dispatcher.writeBackground(journaled: chunk)
                acknowledge(journal, chunk, with: dispatcher)
                unreadable += written.unreadable
                lock.withLock { counters.delivered += UInt64(written.records) }
            }
        }
        let lost = remaining + unreadable
        guard lost > 0 else { return }
        lock.withLock { counters.dropped += UInt64(lost) }
        let message =
            "JustLog dropped \(lost) event(s): they waited in the log journal, which dropped them at its size cap (or could not read them)"
        diagnostics.report(message)
        let report = reportRecord(message, userInfo: ["dropped_events": .uint(UInt64(lost))], dispatcher: dispatcher)
        dispatcher.writeBackground([report])
    }

    // MARK: - Acknowledging

    /// Acknowledges `journal` up to `position`: every record before it is written by every background destination
    /// of `dispatcher`. Not while one of them holds some only in its memory (its store refuses them; see
    /// ``MemoryHolding``) and the journal has room to keep them: then they stay journaled — killed meanwhile, the
    /// next start gives them to it again — and the first acknowledgement that finds none held covers them too.
    private func acknowledge(_ journal: EventJournal, upTo position: SpoolPosition, with dispatcher: RecordDispatcher) {
        if keepsRecordsHeldInMemory(in: journal, with: dispatcher) {
            keptUnacknowledged = (journal, position)
            return
        }
        journal.acknowledge(upTo: position)
        keptUnacknowledged = nil
    }

    /// ``acknowledge(_:upTo:with:)`` for records read from the journal one chunk after another (without walking
    /// their frames, unless some before them were kept).
    private func acknowledge(_ journal: EventJournal, _ chunk: SpoolRecords, with dispatcher: RecordDispatcher) {
        guard keptUnacknowledged == nil, !keepsRecordsHeldInMemory(in: journal, with: dispatcher) else {
            acknowledge(journal, upTo: chunk.extent.end, with: dispatcher)
            return
        }
        journal.acknowledge(chunk)
    }

    /// When destinations are shut down (a reconfiguration, or the pipeline's end): what was kept is acknowledged
    /// whether or not a destination still holds it. The journal protects held records against a crash only: left
    /// unacknowledged, a new setup's journal on the same folder, or the next start, would give them to every
    /// destination again, and to those that stayed open a second time (review, helper-42). A destination that still
    /// holds some at its shutdown reports them lost.
    private func acknowledgeWhatWasKept(with dispatcher: RecordDispatcher) {
        guard let (journal, position) = keptUnacknowledged else { return }
        keptUnacknowledged = nil
        if journal === dispatcher.journal { journal.acknowledge(upTo: position) }
    }

    /// What ``acknowledge(_:upTo:with:)`` kept, acknowledged once no destination holds records in memory (or the
    /// journal has no more room for them). Always `dispatcher`'s journal: ``acknowledgeWhatWasKept(with:)`` clears
    /// what was kept whenever the destinations, and with them the journal, are replaced.
    private func acknowledgeWhatWasKeptIfNoLongerHeld(with dispatcher: RecordDispatcher) {
        guard let (journal, position) = keptUnacknowledged else { return }
        acknowledge(journal, upTo: position, with: dispatcher)
    }

    private func keepsRecordsHeldInMemory(in journal: EventJournal, with dispatcher: RecordDispatcher) -> Bool {
        dispatcher.holdsRecordsOnlyInMemory && journal.hasRoomToKeepRecordsHeldInMemory
    }

    // MARK: - Recovering

    /// Before anything logged with `dispatcher`: writes to its background destinations what an earlier run
    /// journaled and did not acknowledge, rebuilt with the `event_id`s it had, as each destination asks (see
    /// ``LogDestination/journalRecovery()``); acknowledges it; then sends every background destination one
    /// warning record that says how many events were recovered, and one for those it held and could not give back
    /// (unreadable, dropped at its cap meanwhile). Then a record for what the journal found lost when it opened:
    /// last, once every recovered event is acknowledged — a destination resumes after its newest event, and a report
    /// of this run, newest in a file that holds some of the recovered events, would hide where it stands. Once a
    /// journal: the first call with it does this, the next ones nothing.
    private func recoverJournal(with dispatcher: RecordDispatcher) {
        guard let journal = dispatcher.journal, let opening = journal.takeOpening() else { return }
        if opening.recover, !dispatcher.backgroundRoutes.isEmpty { replayEarlierRun(of: journal, with: dispatcher) }
        reportLossesFoundAtOpen(of: journal, counted: opening.lost, uncounted: opening.lostUncounted, with: dispatcher)
    }

    /// See ``recoverJournal(with:)``.
    private func replayEarlierRun(of journal: EventJournal, with dispatcher: RecordDispatcher) {
        let routes = dispatcher.backgroundRoutes
        let plans = routes.map { $0.destination.journalRecovery() }
        let start = journal.cursor
        // A destination that holds some of the events already resumes after the newest it holds that is among
        // them: the first of its list (newest first) that a first pass finds. (Its writes are in journal order, so
        // it holds every one before that. Not the latest in journal order among all it lists: an id an earlier run
        // used again — a builder's prefix reused by another pipeline — may match an older line.) A destination
        // routed twice gets each batch once a route, so its writes are not in journal order: it is given everything.
        var routings: [ObjectIdentifier: Int] = [:]
        for route in routes { routings[ObjectIdentifier(route.destination), default: 0] += 1 }
        let newestHeld: [[RecoveredEventID]] = zip(routes, plans).map { route, plan in
            guard case .replay(let held) = plan, routings[ObjectIdentifier(route.destination)] == 1 else { return [] }
            return held.compactMap(EventIDGenerator.components(of:)).map {
                RecoveredEventID(prefix: $0.prefix, sequence: $0.sequence)
            }
        }
        var skipped = [Int](repeating: 0, count: routes.count)
        let wanted = Set(newestHeld.joined())
        if !wanted.isEmpty {
            var indexes: [RecoveredEventID: Int] = [:]
            var index = 0
            forEachJournalChunk(of: journal, from: start, before: journal.recoveryEnd, count: journal.recoveryCount) {
                chunk in
                for entry in EventJournal.entries(of: chunk).entries {
                    index += 1
                    let id = RecoveredEventID(prefix: entry.eventIDPrefix, sequence: entry.sequence)
                    if wanted.contains(id) { indexes[id] = index }
                }
            }
            for (route, held) in newestHeld.enumerated() {
                skipped[route] = held.lazy.compactMap { indexes[$0] }.first ?? 0
            }
        }
        var recovered = 0
        var unreadable = 0
        // Not past where the earlier run ended: had the cap dropped some of its records, a read from the cursor would
        // go on into this run's own, which are queued already.
        let missing = forEachJournalChunk(
            of: journal,
            from: start,
            before: journal.recoveryEnd,
            count: journal.recoveryCount
        ) { chunk in
            let (entries, chunkUnreadable) = EventJournal.entries(of: chunk)
            let records = entries.map(dispatcher.record(recovered:))
            for (index, route) in routes.enumerated() {
                guard case .replay = plans[index] else { continue }
                let first = min(records.count, max(0, skipped[index] - recovered))
                let selected = records[first...].filter { $0.level >= route.minimumLevel }
                if !selected.isEmpty { route.destination.write(LogBatch(records: selected)) }
            }
            acknowledge(journal, chunk, with: dispatcher)
            recovered += records.count
            unreadable += chunkUnreadable
        }
        // No destination of this run writes them (its file could not be opened, only the console counts them): lost,
        // and said so — they were reported "recovered" (review, helper-66).
        let written = plans.contains { plan in
            if case .replay = plan { return true }
            return false
        }
        if recovered > 0, !written {
            reportLoss(
                of: UInt64(recovered),
                "lost \(recovered) event(s) that an earlier run logged and had not written when it stopped: no destination of this run writes them (a log file that could not be opened, no Logstash)",
                with: dispatcher
            )
        } else if recovered > 0 {
            let message =
                "recovered \(recovered) event(s) that an earlier run logged but had not written to every destination when it stopped"
            let report = reportRecord(
                "JustLog " + message,
                userInfo: ["recovered_events": .uint(UInt64(recovered))],
                dispatcher: dispatcher
            )
            dispatcher.writeBackground([report])
            // Said on the diagnostics sink too: the warning may go nowhere — every destination's level above it (console
            // and file at `.error`: review, helper-66), or it taken only by a destination that drops it (switched off,
            // or Logstash settings that can't work: helper-70) — and an earlier run's crash is not to go unsaid.
            diagnostics.report(message)
        }
        if unreadable + missing > 0 {
            let why = [
                unreadable > 0 ? "\(unreadable) could not be read (written by a newer version of JustLog?)" : nil,
                missing > 0 ? "\(missing) were dropped at the journal's size cap before they could be" : nil,
            ]
            reportLoss(
                of: UInt64(unreadable + missing),
                "lost \(unreadable + missing) event(s) that an earlier run logged and the log journal \(journal.configuration.directory) held: \(why.compactMap { $0 }.joined(separator: "; "))",
                with: dispatcher
            )
        }
    }

    /// What the journal found lost when it was opened (a damaged record, a deleted segment) and no earlier run
    /// reported: said on the diagnostics sink when it opened, and now counted as dropped and reported in one record
    /// to the background destinations — a line in the log where the events are missing.
    private func reportLossesFoundAtOpen(
        of journal: EventJournal,
        counted: UInt64,
        uncounted: [String],
        with dispatcher: RecordDispatcher
    ) {
        let place = "the log journal \(journal.configuration.directory) was damaged"
        if counted > 0 {
            reportLoss(
                of: counted,
                "lost \(counted) event(s) that an earlier run logged: \(place) and they could not be read (a destination that had written them before the run stopped has them)",
                with: dispatcher,
                alreadySaid: true
            )
        }
        // (Not `lost_events` with another type: a collector's index maps each field to one type.)
        for damage in uncounted {
            let report = reportRecord(
                "JustLog lost event(s) that an earlier run logged, how many is unknown: \(place): \(damage)",
                userInfo: ["lost_events_unknown": .bool(true)],
                dispatcher: dispatcher
            )
            dispatcher.writeBackground([report])
        }
    }

    /// Counts `count` events as dropped, says that JustLog `lost …` on the diagnostics sink (unless the journal did
    /// already) and in a record to the background destinations.
    private func reportLoss(
        of count: UInt64,
        _ message: String,
        with dispatcher: RecordDispatcher,
        alreadySaid: Bool = false
    ) {
        lock.withLock { counters.dropped += count }
        if !alreadySaid { diagnostics.report(message) }
        let report = reportRecord("JustLog " + message, userInfo: ["lost_events": .uint(count)], dispatcher: dispatcher)
        dispatcher.writeBackground([report])
    }

    /// Reads at most `count` journal records from `start` (none that starts at `limit` or later), in chunks, and
    /// hands each to `body`; after each, the worker's progress shows (for a caller waiting in a full queue and for
    /// the exit handler). Returns how many of the `count` were not there to read (dropped at the journal's cap).
    @discardableResult
    private func forEachJournalChunk(
        of journal: EventJournal,
        from start: SpoolPosition,
        before limit: SpoolPosition? = nil,
        count: Int,
        _ body: (SpoolRecords) -> Void
    ) -> Int {
        var position = start
        var remaining = count
        var unfilledWaits = 0
        while remaining > 0 {
            let chunkLimit = lock.withLock { exiting ? Self.exitBatchLimit : Self.writeLimit }
            let chunk = journal.read(from: position, before: limit, maxRecords: min(remaining, chunkLimit))
            guard chunk.recordCount > 0 else {
                guard chunk.endsAtUnfilledRecord else { break }
                // A log call is copying its record in (outside every lock; see `submitJournaled`): a moment.
                unfilledWaits += 1
                Self.waitForFill(attempt: unfilledWaits)
                continue
            }
            unfilledWaits = 0
            body(chunk)
            remaining -= chunk.recordCount
            position = chunk.extent.end
            _ = showProgress()
        }
        return remaining
    }

    /// Waits for a log call to fill the journal place it reserved: a copy of a few hundred bytes, done within
    /// microseconds unless its thread was preempted — so the first waits only yield the processor, later ones sleep
    /// 50 µs. Not bounded: the call holds no lock and does nothing else before it fills the place.
    private static func waitForFill(attempt: Int) {
        if attempt <= 64 {
            sched_yield()
        } else {
            usleep(50)
        }
    }

    private func dropReport(_ count: UInt64, dispatcher: RecordDispatcher) -> LogRecord {
        reportRecord(
            "JustLog dropped \(count) event(s): the log queue was full (its destinations made no progress for \(configuration.fullQueueWait) s, or they were logged on the pipeline's own thread)",
            userInfo: ["dropped_events": .uint(count)],
            dispatcher: dispatcher
        )
    }

    /// One of JustLog's own warning records, stamped now, with the next sequence number.
    private func reportRecord(
        _ message: String,
        userInfo: [String: LogValue],
        dispatcher: RecordDispatcher
    ) -> LogRecord {
        let event = LogEvent.report(message, userInfo: userInfo, timestamp: now())
        let sequence = lock.withLock { () -> UInt64 in
            defer { nextSequence += 1 }
            return nextSequence
        }
        return dispatcher.record(event, sequence: sequence)
    }

    // MARK: - Reconfiguring

    /// Replaces the destinations in log order: events logged before the call reach the old destinations, events
    /// logged after it the new ones that `build` returns, each exactly once. `build` runs on the caller's thread
    /// once the old destinations are shut down. Meanwhile log calls queue their events (waiting, when the queue
    /// is full, for up to ``LogPipeline/reconfigurationPatience``). The first configuration of a holding pipeline also
    /// delivers what it held. Returns the old destinations' ``LogDestination/shutdownFailure``, or their final
    /// flush's error.
    ///
    /// The caller waits for the old destinations to close while the worker makes progress, and at most `patience`
    /// seconds without it (a destination that blocks in its final flush or its `shutdown`): then it builds the new
    /// destinations all the same, hands them over — the worker installs them, in log order, once the old ones
    /// have closed — and returns a ``JustLogError/Code/timeout`` error. Until the worker has them, a later
    /// reconfiguration waits for it as long, and then changes nothing (``JustLogError/Code/reconfigurationPending``).
    func reconfigure(
        keepingOpen kept: () -> Set<ObjectIdentifier> = { [] },
        patience: Double = LogPipeline.reconfigurationPatience,
        _ build: () -> (RecordDispatcher, LogPipeline.Configuration, LogPipeline.Intake)
    ) -> ReconfigurationOutcome {
        if let error = waitsForItself("reconfigure") { return .refused(error) }
        if lock.withLock({ reconfiguringThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }) {
            return .refused(
                JustLogError(
                    .pipelineThread,
                    "reconfigure was called inside the build closure of another reconfiguration of the same pipeline, where it would wait for itself"
                )
            )
        }
        reconfiguring.lock()
        lock.withLock { reconfiguringThread = pthread_self() }
        defer {
            lock.withLock { reconfiguringThread = nil }
            reconfiguring.unlock()
        }
        // One the caller gave up on, whose worker still closes the old destinations: its new ones are not in place
        // yet, and this one would replace them before the worker has them.
        if let previous = lock.withLock({ abandonedReconfiguration }) {
            guard previous.waitUntilTaken(patience: patience, progress: { self.progress }) else {
                return .refused(
                    JustLogError(
                        .reconfigurationPending,
                        "the destinations an earlier reconfiguration replaced have still not closed (one of them blocks in its final flush or shutdown; waited \(patience) s without progress)"
                    )
                )
            }
            lock.withLock { abandonedReconfiguration = nil }
        }
        // Read now, one reconfiguration at a time: two at once install the settings read last.
        let reconfiguration = Reconfiguration(keepingOpen: kept())
        let holding: Bool? = lock.withLock {
            guard state == .running else { return nil }
            reconfigurationsInProgress += 1
            guard holdCapacity == nil else { return true }
            enqueue(.reconfigure(reconfiguration))
            controlPending = true
            // The worker, and callers waiting in a full queue: they now wait as long as a reconfiguration may take.
            if workerIsWaiting || workerIsLingering || producersWaiting > 0 { lock.broadcast() }
            return false
        }
        guard let holding else { return .refused(JustLogError(.shutdown, "the logger was shut down")) }
        let closed =
            holding
            ? (failure: nil, keptOpen: [])
            : reconfiguration.waitForOldDestinations(patience: patience, progress: { self.progress })
        if closed == nil { lock.withLock { abandonedReconfiguration = reconfiguration } }
        let (replacement, configuration, intake) = build()
        // A destination kept open for the new setup that is not in it after all (the settings changed meanwhile)
        // is not left open for ever (the worker sees to it when the caller gave up waiting).
        let installedNow = Set(replacement.routes.map { ObjectIdentifier($0.destination) })
        for destination in closed?.keptOpen ?? [] where !installedNow.contains(ObjectIdentifier(destination)) {
            destination.shutdown()
        }
        // The queue's view first: the worker takes its next batch with `dispatcher`, which must not be the old,
        // shut-down destinations once it has the new ones. Callers still queue for the worker meanwhile
        // (`reconfigurationsInProgress`), and the fast lane stays closed.
        let (installed, heldCapacity) = lock.withLock { () -> (Bool, Int?) in
            // A pipeline still holding for its first setup that was shut down while `build` ran has no worker left
            // to write to the new destinations or shut them down (one that is not holding waits for them).
            guard !workerTookItsLastDispatcher else {
                reconfigurationsInProgress -= 1
                lock.broadcast()
                return (false, nil)
            }
            dispatcher = replacement
            limits = configuration
            currentIntake = intake
            // In the same step, a holding pipeline stops holding: a worker stopped between the two would take the
            // new destinations for none, drop the held events and close them, and the setup would still succeed.
            defer { holdCapacity = nil }
            return (true, holdCapacity)
        }
        guard installed else {
            _ = replacement.shutdownDestinations()
            return .refused(
                JustLogError(
                    .shutdown,
                    "the logger was shut down while its destinations were being set up; they were closed at once"
                )
            )
        }
        // Then the worker, then the callers: once the reconfiguration ends for them, a caller waiting in a full
        // queue has only `fullQueueWait` of patience, and the worker must not be still waiting for this handover
        // (a caller's thread descheduled between the two, on a loaded machine, cost that long).
        if !holding { reconfiguration.provide(replacement) }
        let heldDrops: UInt64 = lock.withLock {
            reconfigurationsInProgress -= 1
            defer { self.heldDrops = 0 }
            guard heldCapacity != nil else { return 0 }
            // The worker recovers what an earlier run left in the journal when it takes a batch: one now, not at the
            // first event — a journal left with no room below its half would hold that event's call waiting (the
            // fast lane) for progress only the recovery makes.
            if replacement.journal != nil, !replacement.backgroundRoutes.isEmpty {
                enqueue(.action({}))
                controlPending = true
            }
            return self.heldDrops
        }
        lock.broadcast()
        if heldDrops > 0, let heldCapacity {
            submit(
                .report(
                    "JustLog dropped \(heldDrops) event(s) logged before setup() (more than the \(heldCapacity) it keeps)",
                    userInfo: ["dropped_events": .uint(heldDrops)],
                    timestamp: now()
                )
            )
        }
        guard let closed else {
            return .installed(
                oldDestinationsFailure: JustLogError(
                    .timeout,
                    "the destinations it replaces did not close within \(patience) s without progress (one of them blocks in its final flush or shutdown); the new destinations are set up and take over in log order once they have, and events logged meanwhile wait in the queue"
                )
            )
        }
        return .installed(oldDestinationsFailure: closed.failure)
    }

    /// One reconfiguration at a time.
    private let reconfiguring = ConditionLock()

    /// The last reconfiguration whose caller gave up waiting for the old destinations (`lock` held): the next one
    /// waits until the worker has taken its new destinations.
    private var abandonedReconfiguration: Reconfiguration?

    /// An `event_id`, as a recovery compares them (see ``LogDestination/journalRecovery()``).
    private struct RecoveredEventID: Hashable {
        var prefix: UInt64
        var sequence: UInt64
    }
    /// The thread that runs the reconfiguration under way, if any (`lock` held): one nested in its `build` would
    /// wait for itself.
    private var reconfiguringThread: pthread_t?
}

/// A replacement of a pipeline's destinations at one point in log order, between the worker (which reaches
/// it, retires the old destinations, then waits) and the caller of ``PipelineQueue/reconfigure(_:)`` (which
/// waits for that, builds the new destinations, and hands them over).
final class Reconfiguration: @unchecked Sendable {
    private let lock = ConditionLock()
    /// The old destinations the new setup installs again: flushed, not shut down (see
    /// ``LogPipeline/reconfigure(keepingOpen:_:)``).
    let keepingOpen: Set<ObjectIdentifier>
    private var closed = false
    private var failure: (any Error)?
    private var keptOpen: [any LogDestination] = []
    private var replacement: RecordDispatcher?
    /// The caller gave up waiting for the old destinations to close (see ``waitForOldDestinations(patience:progress:)``).
    private var abandoned = false
    /// The worker has the new destinations.
    private var taken = false

    init(keepingOpen: Set<ObjectIdentifier>) {
        self.keepingOpen = keepingOpen
    }

    /// The worker: the old destinations are closed (but those it kept open); waits for and returns the new ones,
    /// and whether the caller gave up waiting (then nobody else shuts down a kept one they leave out, or hears
    /// why the old ones did not close cleanly).
    func oldDestinationsClosed(
        failure: (any Error)?,
        keptOpen: [any LogDestination]
    ) -> (replacement: RecordDispatcher, abandoned: Bool) {
        lock.withLock {
            closed = true
            self.failure = failure
            self.keptOpen = keptOpen
            lock.broadcast()
            while replacement == nil { lock.wait() }
            taken = true
            lock.broadcast()
            return (replacement!, abandoned)
        }
    }

    /// The caller: waits until the old destinations are closed, while the worker makes `progress` and at most
    /// `patience` seconds without it; returns why they did not close cleanly, and those kept open — or `nil`
    /// once it gave up (the worker is told, and sees to what the caller would have done with them).
    func waitForOldDestinations(
        patience: Double,
        progress: () -> UInt64
    ) -> (failure: (any Error)?, keptOpen: [any LogDestination])? {
        guard waitFor(patience: patience, progress: progress, { closed }) else { return nil }
        return lock.withLock { (failure, keptOpen) }
    }

    /// A later reconfiguration's caller: waits until the worker has the new destinations, as
    /// ``waitForOldDestinations(patience:progress:)`` waits; whether it has.
    func waitUntilTaken(patience: Double, progress: () -> UInt64) -> Bool {
        waitFor(patience: patience, progress: progress) { taken }
    }

    /// Waits until `done` (read under the lock) while `progress` moves, at most `patience` seconds without it
    /// (see ``Patience``). Giving up marks the reconfiguration abandoned, in the same look as the last `done`.
    private func waitFor(patience seconds: Double, progress: () -> UInt64, _ done: () -> Bool) -> Bool {
        var patience = Patience(seconds: seconds)
        var seen = progress()
        while true {
            // `progress` takes the queue's lock: read outside this one.
            let wait = patience.nextWait()
            let finished: Bool = lock.withLock {
                if !done(), let wait { _ = lock.wait(seconds: wait) }
                if done() { return true }
                if wait == nil { abandoned = true }
                return false
            }
            if finished { return true }
            if wait == nil { return false }
            patience.woke()
            let now = progress()
            if now != seen {
                seen = now
                patience.restart()
            }
        }
    }

    func provide(_ dispatcher: RecordDispatcher) {
        lock.withLock {
            replacement = dispatcher
            lock.broadcast()
        }
    }
}

/// A flush that was queued, and the means to wait for it.
final class PendingFlush: @unchecked Sendable {
    private let queue: PipelineQueue
    private let done = ConditionLock()
    private var finished = false
    private var error: (any Error)?
    /// After a ``wait(timeout:restartingOnProgress:)`` that gave up: ", not counting N s when the program did not
    /// run", or nothing (see ``Patience``). Read on the waiting thread.
    private(set) var notRunningNote = ""

    init(queue: PipelineQueue) {
        self.queue = queue
    }

    func finish(_ error: (any Error)?) {
        done.withLock {
            finished = true
            self.error = error
            done.broadcast()
        }
    }

    /// Waits for the flush. With `restartingOnProgress`, `timeout` is how long the destinations may go without
    /// progress: the wait restarts whenever the worker shows progress, so a slow but moving destination (a loaded
    /// machine, a slow disk) is waited for, and only a stalled one is given up on. Without it, `timeout` is a
    /// fixed bound. Returns the flush's error, or a timeout error.
    func wait(timeout: Double, restartingOnProgress: Bool) -> (any Error)? {
        var seen = queue.progress
        var patience = Patience(seconds: timeout)
        // Waits of at most `Patience.poll` (100 ms), after each a look at the worker's progress (read outside this
        // lock).
        while let wait = patience.nextWait() {
            let outcome: (finished: Bool, error: (any Error)?) = done.withLock {
                if !finished { _ = done.wait(seconds: wait) }
                return (finished, error)
            }
            if outcome.finished { return outcome.error }
            guard restartingOnProgress else { continue }
            // Time the program did not run is not counted (a fixed bound is a fixed bound).
            patience.woke()
            let now = queue.progress
            if now != seen {
                seen = now
                patience.restart()
            }
        }
        // Finished as the patience ran out.
        let last: (finished: Bool, error: (any Error)?) = done.withLock { (finished, error) }
        if last.finished { return last.error }
        notRunningNote = patience.notRunningNote
        return JustLogError(
            .timeout,
            restartingOnProgress
                ? "flush made no progress for \(timeout) s\(patience.notRunningNote)"
                : "flush did not complete within \(timeout) s"
        )
    }
}

/// Where consecutive journaled events are in the journal: their records from `from` up to `to`.
private struct JournalPlace {
    var from = SpoolPosition(segment: 0, offset: 0)
    var to = SpoolPosition(segment: 0, offset: 0)
    var count = 0
}
