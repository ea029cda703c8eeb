import Foundation

/// Carries events from log calls to destinations: a bounded queue in front of one background thread.
///
/// ```text
///  log call ──capture──▶ submit ──(inline destinations, on the caller's thread)──▶ spool
///     │                    │  └──(with a journal) encode ──▶ journal (mmap, crash-safe)
///     └──plain call, every destination reads the journal──────▶ ┘            │
///                          ▼  bounded FIFO (events, bytes, journal places)   │
///                   worker thread ◀─── read back what was queued by its place ┘
///                          └──build record, sanitize──▶ background destinations (batches) ──▶ acknowledge
/// ```
///
/// - **Fast lane.** When every destination reads the journal, a plain call — a message and `String`, `Int`,
///   `Double`, `Bool` values within the capture limits, no error — is encoded straight into the journal (no
///   ``LogEvent``, no allocation) and the queue holds only its place; the worker reads it back. Every other call
///   is captured into a ``LogEvent`` first. Both keep one order.
/// - **Order.** One FIFO queue, filled under one lock: events from one thread reach every destination in
///   the order they were logged; each gets a sequence number (its `event_id`) in that order.
/// - **Bounds.** At most ``Configuration/capacity`` events and ``Configuration/maximumQueuedBytes`` of
///   messages wait in the queue, and at most as many more are in the batch the worker is writing.
/// - **Full queue, with a journal** (``Setup/journal``): the event waits in the journal instead — the caller
///   neither waits nor loses it — and the worker reads it back in its turn, in order. This holds while what the
///   destinations have not written takes less than half the journal; past that, as without a journal:
/// - **Full queue.** The caller waits while the destinations make progress (back-pressure from a slow disk
///   loses nothing); if they make none for ``Configuration/fullQueueWait`` — a stuck terminal, a hung network
///   file system — the event is dropped for the background destinations *and counted* (inline ones, such as
///   a Logstash spool without a journal, still get it): a program must not hang because logging stalls.
///   The count is reported once for each cause on the diagnostics sink and then as a warning record sent to
///   every destination when the queue moves again. A call made on the pipeline's own thread — a destination or a
///   ``performInOrder(_:)`` action that logs through this pipeline — never waits for room (only that thread
///   makes it): what finds none is dropped and counted at once. ``flush(timeout:)``, ``reconfigure(_:)`` and
///   ``shutdown(timeout:)`` called on that thread (by a background destination, or an action) would wait for
///   themselves: they return ``JustLogError/Code/pipelineThread`` at once — the flush and the reconfiguration doing
///   nothing, the shutdown stopping the pipeline once it has written what is queued, without waiting
///   (``flush(completion:)`` and the async `flush()` don't wait, and work there). An inline destination is written
///   under the pipeline's lock: it must not call the pipeline at all.
/// - **Flush.** ``flush(completion:)`` completes once every event submitted before it has been written and
///   every destination has flushed. At process exit (returning from `main`, or `exit()`), every live
///   pipeline is flushed; the exit handler waits while the destinations make progress and gives up only on
///   one that made none for ``Configuration/exitFlushTimeout`` (saying how many events it lost).
/// - **Lifetime.** ``shutdown(timeout:)`` flushes, shuts the destinations down and ends the worker thread;
///   a pipeline that is released without it does the same in `deinit`.
public final class LogPipeline: Sendable {
    /// Limits and timing of a pipeline; every default is a documented choice.
    public struct Configuration: Sendable {
        /// Events waiting in memory at most (at least 1: set lower, 1). Default 16 384.
        public var capacity: Int { didSet { capacity = max(1, capacity) } }
        /// Message bytes waiting in memory at most (a few huge messages must not exhaust memory; at least 1). Default
        /// 32 MiB.
        public var maximumQueuedBytes: Int { didSet { maximumQueuedBytes = max(1, maximumQueuedBytes) } }
        /// How long a log call waits in a full queue for the destinations to make progress before its event is
        /// dropped and counted. The wait restarts whenever they do, and time the program did not run (stopped, or
        /// held back for over 50 ms at a time) is not counted. A call on the pipeline's own thread does not wait.
        /// Default 1 s.
        public var fullQueueWait: Double
        /// At process exit, how long the destinations may go *without progress* before the exit handler stops
        /// waiting for them (it waits as long as they keep writing, and does not count time the program was stopped
        /// or held back for over 50 ms at a time: at most about ten times this in all, unless stopped for longer);
        /// also the bound on the flush in `deinit`. Default 5 s.
        public var exitFlushTimeout: Double

        public init(
            capacity: Int = 16_384,
            maximumQueuedBytes: Int = 32 << 20,
            fullQueueWait: Double = 1,
            exitFlushTimeout: Double = 5
        ) {
            self.capacity = max(1, capacity)
            self.maximumQueuedBytes = max(1, maximumQueuedBytes)
            self.fullQueueWait = max(0, fullQueueWait)
            self.exitFlushTimeout = max(0, exitFlushTimeout)
        }
    }

    /// A destination and the lowest level it receives.
    public struct Route: Sendable {
        public var destination: any LogDestination
        public var minimumLevel: LogLevel

        public init(_ destination: any LogDestination, minimumLevel: LogLevel = .verbose) {
            self.destination = destination
            self.minimumLevel = minimumLevel
        }
    }

    /// Counts since the pipeline started.
    public struct Statistics: Hashable, Sendable {
        /// Events accepted by ``submit(_:)``.
        public var submitted: UInt64 = 0
        /// Events that missed destinations: the queue made no progress, or they were logged on the pipeline's own
        /// thread into a full queue (either way they still reached the inline destinations, such as the Logstash
        /// spool), or the pipeline was shut down (they reached none). With a journal, also an earlier run's events
        /// it could not give back: found damaged when it opened (a destination that had written them before that
        /// run stopped has them), unreadable, or dropped at its cap. Those were never ``submitted`` in this run.
        public var dropped: UInt64 = 0
        /// Records handed to the background destinations (including JustLog's own drop reports).
        public var delivered: UInt64 = 0
        /// Log calls waiting right now for room in the full queue: back-pressure from a slow or stalled
        /// destination, seen from outside (each waits at most ``Configuration/fullQueueWait`` without progress, or
        /// ``LogPipeline/reconfigurationPatience`` while the destinations are being replaced).
        public var callersWaiting = 0
    }

    /// What a log call needs before it captures anything: whether any destination takes its level, and how
    /// to capture its values. Read under the pipeline's lock by the capture path (the fast lane reads what it needs
    /// from a ``FastLaneGate`` instead); it changes when the pipeline is reconfigured.
    public struct Intake: Sendable {
        /// The lowest level any route receives: a cheaper call is filtered out before it is captured.
        public var minimumLevel: LogLevel
        /// What one call may carry (see ``CaptureLimits``).
        public var captureLimits: CaptureLimits
        /// How values marked private are written (see ``PrivacyPolicy``).
        public var privacy: PrivacyPolicy
        /// The journal a log call writes its event to before it returns, with the `event_id` prefix and the
        /// error-chain limits of the pipeline's record builder (see ``EventJournal``).
        var journal: EventJournal?
        /// Every destination reads the journal (none is written on the caller's thread): a plain call may take
        /// the fast lane, its record encoded straight into the journal (see ``LogPipeline/submitCall``).
        var journalOnly = false
        var eventIDPrefix: UInt64 = 0
        var errorLimits = CaptureLimits()

        public init(
            minimumLevel: LogLevel,
            captureLimits: CaptureLimits = CaptureLimits(),
            privacy: PrivacyPolicy = .default
        ) {
            self.minimumLevel = minimumLevel
            self.captureLimits = captureLimits
            self.privacy = privacy
        }
    }

    /// Everything that ``reconfigure(_:)`` replaces.
    public struct Setup: Sendable {
        public var routes: [Route]
        public var builder: RecordBuilder
        public var sanitizer: Sanitizer?
        public var configuration: Configuration
        public var captureLimits: CaptureLimits
        public var privacy: PrivacyPolicy
        /// Where every event goes before its log call returns, so that the background destinations lose
        /// nothing if the program is killed (see ``EventJournal``); `nil`: they lose what was queued. The
        /// pipeline closes it when it retires this setup. A journal serves one pipeline, once: its thread reads the
        /// records where they lie and acknowledges them once written, and a second pipeline acknowledging the same
        /// journal would lose events (each would take the other's as written). A pipeline given a journal that
        /// already serves another, or is closed, runs without it and says so on its diagnostics sink. For a
        /// ``LogPipeline/reconfigure(_:)``, open a new journal on the folder inside `build`.
        public var journal: EventJournal?

        public init(
            routes: [Route],
            builder: RecordBuilder = RecordBuilder(),
            sanitizer: Sanitizer? = nil,
            configuration: Configuration = Configuration(),
            captureLimits: CaptureLimits = CaptureLimits(),
            privacy: PrivacyPolicy = .default,
            journal: EventJournal? = nil
        ) {
            self.routes = routes
            self.builder = builder
            self.sanitizer = sanitizer
            self.configuration = configuration
            self.captureLimits = captureLimits
            self.privacy = privacy
            self.journal = journal
        }

        var intake: Intake {
            var intake = Intake(
                minimumLevel: routes.map(\.minimumLevel).min() ?? .error,
                captureLimits: captureLimits,
                privacy: privacy
            )
            // Only the background destinations read the journal.
            let deliveries = routes.map { $0.destination.delivery.resolved(journaled: journal != nil) }
            if deliveries.contains(.background) {
                intake.journal = journal
                intake.journalOnly = !deliveries.contains(.inline)
            }
            intake.eventIDPrefix = builder.eventIDs.prefix
            intake.errorLimits = builder.limits
            return intake
        }

        var dispatcher: RecordDispatcher {
            RecordDispatcher(routes: routes, builder: builder, sanitizer: sanitizer, journal: journal)
        }

        /// This setup as a pipeline runs it: its journal taken for that pipeline, or left out — said on
        /// `diagnostics` — when it serves another or is closed (see ``EventJournal/claim()``).
        func claimingItsJournal(reportingTo diagnostics: DiagnosticSink) -> Setup {
            guard let refusal = journal?.claim() else { return self }
            diagnostics.report(refusal)
            var setup = self
            setup.journal = nil
            return setup
        }
    }

    /// While ``reconfigure(_:)`` replaces the destinations, how long a log call waits for room in a full queue
    /// (closing a Logstash connection and opening files can take seconds under load) before its event is
    /// dropped and counted; and how long ``reconfigure(_:)`` waits without progress for the old destinations to
    /// close (one that blocks in its final flush or its `shutdown`). 30 s.
    public static let reconfigurationPatience = 30.0

    /// The clock of log calls (injected so that tests can pin it).
    public let now: @Sendable () -> LogTimestamp
    private let queue: PipelineQueue

    /// Creates a pipeline and starts its worker thread.
    public convenience init(
        routes: [Route],
        builder: RecordBuilder = RecordBuilder(),
        sanitizer: Sanitizer? = nil,
        configuration: Configuration = Configuration(),
        diagnostics: DiagnosticSink = .standardError,
        now: @escaping @Sendable () -> LogTimestamp = { LogTimestamp.now() }
    ) {
        self.init(
            setup: Setup(routes: routes, builder: builder, sanitizer: sanitizer, configuration: configuration),
            diagnostics: diagnostics,
            now: now
        )
    }

    /// Creates a pipeline running `setup` and starts its worker thread.
    public init(
        setup: Setup,
        diagnostics: DiagnosticSink = .standardError,
        now: @escaping @Sendable () -> LogTimestamp = { LogTimestamp.now() }
    ) {
        self.now = now
        let setup = setup.claimingItsJournal(reportingTo: diagnostics)
        self.queue = PipelineQueue(
            dispatcher: setup.dispatcher,
            configuration: setup.configuration,
            intake: setup.intake,
            diagnostics: diagnostics,
            now: now
        )
        queue.startWorker()
        ExitFlusher.shared.register(queue)
    }

    /// A pipeline without destinations yet, which keeps what is logged (at most `capacity` events, the oldest
    /// dropped and counted) until its first ``reconfigure(_:)`` delivers it: `Logger.shared` before `setup()`.
    /// Flushing it fails with a message that says so.
    public init(
        holdingUpTo capacity: Int,
        configuration: Configuration = Configuration(),
        diagnostics: DiagnosticSink = .standardError,
        now: @escaping @Sendable () -> LogTimestamp = { LogTimestamp.now() }
    ) {
        self.now = now
        self.queue = PipelineQueue(
            dispatcher: Setup(routes: []).dispatcher,
            configuration: configuration,
            intake: Intake(minimumLevel: .verbose),
            holdCapacity: capacity,
            diagnostics: diagnostics,
            now: now
        )
        queue.startWorker()
        ExitFlusher.shared.register(queue)
    }

    deinit {
        _ = queue.shutdown(timeout: queue.configuration.exitFlushTimeout)
    }

    /// The lowest level any route receives: a cheaper call is filtered out before it is captured.
    public var minimumLevel: LogLevel { queue.intake.minimumLevel }

    /// Whether some route takes `level`: what a log call asks first, before it evaluates anything (a relaxed
    /// atomic load, no lock; a call filtered out costs a few instructions and no allocation).
    public func admits(_ level: LogLevel) -> Bool { queue.levelGate.admits(level) }

    /// What a log call's full path reads before capturing (one lock; the fast lane reads a ``FastLaneGate`` instead).
    public var intake: Intake { queue.intake }

    /// The pipeline's limits and timing.
    public var configuration: Configuration { queue.configuration }

    /// Log calls capture with `privacy` and `limits` (those given) from now on (before the first ``reconfigure(_:)`` too, whose
    /// held events were captured with the defaults: a `Sensitive` value logged in a debug build before `setup()`
    /// reached the file in clear though `privacy` was `.redacted` — review, helper-62), until the next
    /// ``reconfigure(_:)`` brings its own.
    package func capture(privacy: PrivacyPolicy? = nil, limits: CaptureLimits? = nil) {
        queue.capture(privacy: privacy, limits: limits)
    }

    /// Whether the pipeline still holds events for its first ``reconfigure(_:)``.
    public var isAwaitingSetup: Bool { queue.isHolding }

    /// Whether the exit handler will wait for this pipeline's destinations (until it has shut down and its worker
    /// has written what was queued).
    package var isWaitedForAtExit: Bool { ExitFlusher.shared.isRegistered(queue) }

    /// Replaces the destinations, the record builder, the sanitizer and the limits, **in log order**: every
    /// event logged before the call reaches the old destinations, every event after it the new ones, each
    /// exactly once; front ends attached to this pipeline (a `StructuredLogger`, a swift-log handler) keep
    /// working. The old background destinations get a final flush (at most
    /// ``Configuration/exitFlushTimeout``); then every old destination is shut down, and only then is `build`
    /// called (on this thread): new destinations can take over what the old ones held — the same file, the same
    /// spool folder. Log calls made meanwhile wait in the queue. Returns when the new destinations are in place,
    /// with the old ones' shutdown failure, if any. An old destination that blocks in its final flush or its
    /// `shutdown` is waited for ``reconfigurationPatience`` (without progress), not for ever: `build` is then
    /// called all the same, the new destinations take over in log order once the old ones have closed, and a
    /// ``JustLogError/Code/timeout`` error says so; until then, a further reconfiguration waits as long, and then
    /// changes nothing (``JustLogError/Code/reconfigurationPending``). Called from a background destination (on the pipeline's own
    /// thread), it would wait for itself: it returns ``JustLogError/Code/pipelineThread`` at once and changes
    /// nothing — as it does called inside another reconfiguration's `build` on the same thread. `build` must not wait
    /// for another thread that reconfigures this pipeline: both would wait for ever.
    @discardableResult
    public func reconfigure(_ build: () -> Setup) -> (any Error)? {
        reconfigure(keepingOpen: { [] }, build)
    }

    /// ``reconfigure(_:)``, but the old destinations that `kept` returns (by identity), which `build` installs
    /// again, are flushed and not shut down: destinations lent by the program for every setup (`Logger`'s
    /// `additionalDestinations`). One that `build` does not install after all is shut down once it has run.
    /// `kept` runs first, once this reconfiguration's turn has come (one runs at a time): settings read there are
    /// the newest when two reconfigurations begin at once. `patience`: how long the caller waits for the old
    /// destinations to close without progress before it builds the new ones all the same (see
    /// ``reconfigure(_:)``).
    @discardableResult
    package func reconfigure(
        keepingOpen kept: () -> [any LogDestination],
        patience: Double = LogPipeline.reconfigurationPatience,
        _ build: () -> Setup
    ) -> (any Error)? {
        switch reconfigureReportingOutcome(keepingOpen: kept, patience: patience, build) {
        case .refused(let error): error
        case .installed(let oldDestinationsFailure): oldDestinationsFailure
        }
    }

    /// ``reconfigure(keepingOpen:patience:_:)``, and whether it changed anything: a refusal and the old
    /// destinations' own close failure can carry the same code (`.shutdown`: the logger's, or a Logstash
    /// destination's that stopped while reconnecting).
    package func reconfigureReportingOutcome(
        keepingOpen kept: () -> [any LogDestination],
        patience: Double = LogPipeline.reconfigurationPatience,
        _ build: () -> Setup
    ) -> ReconfigurationOutcome {
        queue.reconfigure(keepingOpen: { Set(kept().map(ObjectIdentifier.init)) }, patience: patience) {
            let setup = build().claimingItsJournal(reportingTo: queue.diagnostics)
            return (setup.dispatcher, setup.configuration, setup.intake)
        }
    }

    /// Accepts an event: writes it to inline destinations now and queues it for the others.
    public func submit(_ event: LogEvent) {
        queue.submit(event)
    }

    /// Accepts a log call whose level ``admits(_:)`` let through, stamped now. When every destination reads the
    /// journal and the call is plain (see ``JournalCodec/encodeCall(level:message:userInfo:callSite:timestamp:eventIDPrefix:limits:into:)``),
    /// its record is encoded straight into the journal with what the ``FastLaneGate`` says, without a lock, and the
    /// queue holds only its place; otherwise — and whenever the queue can't take it that way — its values are
    /// captured into a ``LogEvent`` for ``submit(_:)``.
    @usableFromInline
    func submitCall(
        _ level: LogLevel,
        _ message: String,
        error: (any Error)?,
        userInfo: [String: Any]?,
        callSite: CallSite
    ) {
        let timestamp = now()
        let journaled = submitJournaled(level, error: error) { lane, buffer in
            JournalCodec.encodeCall(
                level: level,
                message: message,
                userInfo: userInfo,
                callSite: callSite,
                timestamp: timestamp,
                eventIDPrefix: lane.eventIDPrefix,
                limits: lane.captureLimits,
                into: buffer
            )
        }
        if journaled { return }
        submitCaptured(level, message, error: error, userInfo: userInfo, callSite: callSite, at: timestamp)
    }

    /// ``submitCall(_:_:error:userInfo:callSite:)`` for typed fields (see
    /// ``JournalCodec/encodeCall(level:message:fields:callSite:timestamp:eventIDPrefix:limits:into:)``): the same
    /// record, and the same event, as for a `userInfo` dictionary of the same values — which is what a call the
    /// typed lane can't take becomes.
    @usableFromInline
    func submitCall(
        _ level: LogLevel,
        _ message: String,
        error: (any Error)?,
        fields: KeyValuePairs<String, LogValue>,
        callSite: CallSite
    ) {
        let timestamp = now()
        let journaled = submitJournaled(level, error: error) { lane, buffer in
            JournalCodec.encodeCall(
                level: level,
                message: message,
                fields: fields,
                callSite: callSite,
                timestamp: timestamp,
                eventIDPrefix: lane.eventIDPrefix,
                limits: lane.captureLimits,
                into: buffer
            )
        }
        if journaled { return }
        // A key given twice keeps its last value, as a dictionary literal's would if it could hold both.
        var userInfo: [String: Any] = [:]
        userInfo.reserveCapacity(fields.count)
        for (key, value) in fields { userInfo[key] = value }
        submitCaptured(level, message, error: error, userInfo: userInfo, callSite: callSite, at: timestamp)
    }

    /// The fast lane of a call at `level`: when it has no error and the ``FastLaneGate``'s lane is open, the record
    /// `encode` writes with that lane's values (see ``JournalCodec/encodeCall(level:message:userInfo:callSite:timestamp:eventIDPrefix:limits:into:)``)
    /// is handed to the queue. `true` when the call is done with — journaled, or below every destination's level;
    /// `false` when it needs the full path. Inlined, with `encode`: neither is a call through a context.
    @inline(__always)
    private func submitJournaled(
        _ level: LogLevel,
        error: (any Error)?,
        _ encode: (FastLaneGate.Lane, UnsafeMutableRawBufferPointer) -> Int?
    ) -> Bool {
        guard error == nil, let lane = queue.fastLane.current() else { return false }
        guard level >= lane.minimumLevel else { return true }
        return JournalCodec.withRecord(
            encodedBy: { encode(lane, $0) },
            { record in queue.submitJournaled(record, lane: lane.version) }
        )
    }

    /// The full path of a log call: its values captured into a ``LogEvent`` with the current intake (read under the
    /// lock), if its level is still taken.
    private func submitCaptured(
        _ level: LogLevel,
        _ message: String,
        error: (any Error)?,
        userInfo: [String: Any]?,
        callSite: CallSite,
        at timestamp: LogTimestamp
    ) {
        let intake = queue.intake
        guard level >= intake.minimumLevel else { return }
        queue.submit(
            LogEvent(
                level: level,
                message: message,
                error: error,
                capturing: userInfo,
                limits: intake.captureLimits,
                privacy: intake.privacy,
                callSite: callSite,
                timestamp: timestamp
            )
        )
    }

    /// Runs `action` on the worker thread after every event submitted before this call has been handed to the
    /// background destinations, and before any submitted after it: for changes that must take effect in log
    /// order, such as switching a destination off.
    public func performInOrder(_ action: @escaping @Sendable () -> Void) {
        queue.performInOrder(action)
    }

    /// Calls `completion` once every event submitted before this call has been written and every destination
    /// has flushed; with an error if a destination could not (the first such error).
    ///
    /// `completion` runs on a Dispatch queue of its own (``FlushCompletions``), never on the thread that finished the
    /// flush — the pipeline's own, or a destination's (the Logstash client's event loop): a program that exits there
    /// (`forceSend { _ in exit(0) }`) had its exit flush wait for that very thread, for its whole patience, or refuse
    /// to wait on the pipeline's own thread and say so (review, helper-62). Completions may run concurrently with
    /// one another.
    ///
    /// An answer given at once, within this call (not set up, shut down), comes on the caller's own thread before
    /// this returns; one given later comes on its own queue even if the flush finished on the caller's thread (a
    /// `forceSend` on an event loop or in an action run in log order). The exit handler gives completions handed
    /// over as the program exits a second to run (they ran within its flush before), not counting one that is
    /// itself exiting.
    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        let call = FlushCall()
        queue.flush { error in
            if call.answersWithinTheCall {
                completion(error)
            } else {
                FlushCompletions.shared.run(completion, with: error)
            }
        }
        call.hasReturned = true
    }

    /// Flushes and waits at most `timeout` seconds; returns the error, or a timeout error (or
    /// ``JustLogError/Code/pipelineThread`` at once on the pipeline's own thread).
    @discardableResult
    public func flush(timeout: Double) -> (any Error)? {
        queue.flush(timeout: timeout)
    }

    /// Flushes; returns once every event submitted before the call has been handed over.
    public func flush() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.flush { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    /// Flushes (waiting while the destinations make progress, until they make none for `timeout` seconds of the
    /// program's running time), shuts every destination down and ends the worker thread.
    /// Events logged afterwards are dropped and counted. Calling it again does nothing. Returns the flush's
    /// error, a timeout, or the first destination's ``LogDestination/shutdownFailure`` — or, on the pipeline's own
    /// thread, ``JustLogError/Code/pipelineThread`` at once: the pipeline then stops once it has written what is
    /// queued, without this call waiting.
    @discardableResult
    public func shutdown(timeout: Double = 5) -> (any Error)? {
        queue.shutdown(timeout: timeout)
    }

    /// ``shutdown(timeout:)`` for async code: the waiting happens on a thread of its own, not on one of the
    /// concurrency pool's or Dispatch's shared threads (one per core, which a blocking wait would starve).
    @discardableResult
    public func shutdown(timeout: Double = 5) async -> (any Error)? {
        await offThePool { [queue] in queue.shutdown(timeout: timeout) }
    }

    /// ``flush(timeout:)`` for async code, waiting off the concurrency pool.
    @discardableResult
    public func flush(timeout: Double) async -> (any Error)? {
        await offThePool { [queue] in queue.flush(timeout: timeout) }
    }

    /// Counts since the pipeline started.
    public var currentStatistics: Statistics { queue.statistics }
}

/// Builds records and hands them to destinations: the immutable part of a pipeline, shared by the callers
/// (inline destinations) and the worker (background ones).
struct RecordDispatcher: Sendable {
    let routes: [LogPipeline.Route]
    let inlineRoutes: [LogPipeline.Route]
    let backgroundRoutes: [LogPipeline.Route]
    let builder: RecordBuilder
    let sanitizer: Sanitizer?
    let journal: EventJournal?
    /// The background destinations that write plain journal records straight from their bytes (by route).
    private let plainWriters: [(any PlainBatchWriting)?]
    /// Their format; `nil` when every record is built the general way (a sanitizer must see every record).
    private let directFormat: DirectFormat?
    /// ``directFormat``'s longest message, `nil` with it: what reading a record in place asks of the format, held
    /// here so that a record's read does not take (retain and release) the format.
    private let plainMessageLimit: Int?
    /// The background destinations that may hold records only in their memory (asked at every acknowledgement).
    private let memoryHolders: [any MemoryHolding]
    /// The record builders of earlier runs on the journal, by `event_id` prefix: their events read back are built
    /// with their own run's context (see ``JournalContexts``).
    private let earlierRuns: [UInt64: RecordBuilder]

    init(routes: [LogPipeline.Route], builder: RecordBuilder, sanitizer: Sanitizer?, journal: EventJournal? = nil) {
        self.routes = routes
        let journaled = journal != nil
        self.inlineRoutes = routes.filter { $0.destination.delivery.resolved(journaled: journaled) == .inline }
        self.backgroundRoutes = routes.filter { $0.destination.delivery.resolved(journaled: journaled) == .background }
        self.builder = builder
        self.sanitizer = sanitizer
        self.earlierRuns = journal.map { JournalContexts.exchange(builder, in: $0.configuration.directory) } ?? [:]
        self.journal = journal
        self.plainWriters = backgroundRoutes.map { $0.destination as? any PlainBatchWriting }
        self.memoryHolders = backgroundRoutes.compactMap { $0.destination as? any MemoryHolding }
        let direct = sanitizer == nil && plainWriters.contains { $0 != nil }
        self.directFormat = direct ? DirectFormat(builder: builder) : nil
        self.plainMessageLimit = directFormat?.limits.maximumMessageBytes
        if let journal {
            for route in backgroundRoutes {
                // While the journal has room below its half for any record a call may bring, the calls' events wait
                // there (the fast lane, a full queue's spill); past it — or when a large record would start a
                // segment past the journal's cap — callers would wait for the destination it holds back.
                let largest = journal.maximumRecordBytes
                (route.destination as? any PipelineHoldingBack)?.pipelineAttached {
                    journal.roomBelowHalf(for: largest) == .available
                }
            }
        }
    }

    /// Whether a background destination holds records only in its memory (see ``MemoryHolding``).
    var holdsRecordsOnlyInMemory: Bool { memoryHolders.contains { $0.holdsRecordsOnlyInMemory } }

    func record(_ event: LogEvent, sequence: UInt64) -> LogRecord {
        var record = builder.record(for: event, sequence: sequence)
        sanitizer?(&record)
        return record
    }

    /// The record of an event read back from the journal, with the `event_id` it was given when it was logged.
    func record(recovered entry: JournalEntry) -> LogRecord {
        let builder = earlierRuns[entry.eventIDPrefix] ?? builder
        var record = builder.record(for: entry.event, sequence: entry.sequence, eventIDPrefix: entry.eventIDPrefix)
        sanitizer?(&record)
        return record
    }

    func writeInline(_ record: LogRecord) {
        for route in inlineRoutes where record.level >= route.minimumLevel {
            route.destination.write(LogBatch(records: [record]))
        }
    }

    /// Writes records read from the journal to the background destinations, in order: plain ones straight from
    /// their bytes to the destinations that can (see ``PlainBatch``), every other one built the general way.
    /// Returns how many were written, and how many could not be read (written by a newer version, or damaged
    /// within an intact frame): those are skipped.
    func writeBackground(journaled chunk: SpoolRecords) -> (records: Int, unreadable: Int) {
        chunk.withPayloads { bytes, payloads in
            var plain: [JournalRecordView] = []
            var members: [JournalRecordView.Member] = []
            // Once per chunk: growing them record by record copied them ten times over (~225 instructions/event).
            plain.reserveCapacity(chunk.recordCount)
            members.reserveCapacity(4 * chunk.recordCount)
            var built: [LogRecord] = []
            func writePlain() {
                guard let directFormat, !plain.isEmpty else { return }
                let batch = PlainBatch(
                    bytes: bytes,
                    records: plain,
                    members: members,
                    format: directFormat,
                    builder: builder
                )
                var records: [LogRecord]?
                for (index, route) in backgroundRoutes.enumerated() {
                    if let writer = plainWriters[index] {
                        var routed = batch
                        routed.minimumLevel = route.minimumLevel
                        writer.write(routed)
                        continue
                    }
                    let all = records ?? plain.indices.map(batch.record(at:))
                    records = all
                    let selected = all.filter { $0.level >= route.minimumLevel }
                    if !selected.isEmpty { route.destination.write(LogBatch(records: selected)) }
                }
                plain.removeAll(keepingCapacity: true)
                members.removeAll(keepingCapacity: true)
            }
            func writeBuilt() {
                guard !built.isEmpty else { return }
                writeBackground(built)
                built.removeAll(keepingCapacity: true)
            }
            var read = 0
            var unreadable = 0
            while let payload = payloads.next() {
                if let view = plainRecord(in: bytes, payload, members: &members) {
                    writeBuilt()
                    plain.append(view)
                } else if let entry = EventJournal.entry(in: bytes, payload) {
                    writePlain()
                    built.append(record(recovered: entry))
                } else {
                    unreadable += 1
                    continue
                }
                read += 1
            }
            writeBuilt()
            writePlain()
            return (read, unreadable)
        }
    }

    /// The plain record whose payload is `payload` of a chunk's bytes, if the direct format is on.
    private func plainRecord(
        in bytes: UnsafeRawBufferPointer,
        _ payload: Range<Int>,
        members: inout [JournalRecordView.Member]
    ) -> JournalRecordView? {
        // The reader's bytes end where the record does: it checks every length against them.
        guard let plainMessageLimit,
            let view = JournalRecordView.plain(
                in: UnsafeRawBufferPointer(rebasing: bytes[..<payload.upperBound]),
                at: payload.lowerBound,
                maximumMessageBytes: plainMessageLimit,
                members: &members
            )
        else { return nil }
        // A record of an earlier run whose context is known is built with it, the general way.
        guard view.bytes.upperBound == payload.upperBound,
            earlierRuns.isEmpty || view.eventIDPrefix == builder.eventIDs.prefix
                || earlierRuns[view.eventIDPrefix] == nil
        else {
            members.removeSubrange(view.members)
            return nil
        }
        return view
    }

    func writeBackground(_ records: [LogRecord]) {
        for route in backgroundRoutes {
            let selected = route.minimumLevel == .verbose ? records : records.filter { $0.level >= route.minimumLevel }
            if !selected.isEmpty { route.destination.write(LogBatch(records: selected)) }
        }
    }

    func flush(_ barrier: FlushBarrier) {
        barrier.expect(routes.count)
        for route in routes {
            route.destination.flush { error in barrier.complete(error) }
        }
    }

    /// Shuts every destination down and closes the journal; returns the first destination's
    /// ``LogDestination/shutdownFailure``.
    func shutdownDestinations() -> (any Error)? {
        shutdownDestinations(keepingOpen: []).failure
    }

    /// Shuts every destination down (each instance once, though routed twice) but those in `kept` (by identity),
    /// calls `beforeClosingTheJournal` (the worker acknowledges what it kept for a destination that held it only in
    /// memory), and closes the journal; returns the first ``LogDestination/shutdownFailure`` of those shut down, and
    /// those kept open.
    func shutdownDestinations(
        keepingOpen kept: Set<ObjectIdentifier>,
        beforeClosingTheJournal: () -> Void = {}
    ) -> (failure: (any Error)?, keptOpen: [any LogDestination]) {
        var keptOpen: [any LogDestination] = []
        var closed: [any LogDestination] = []
        var seen = Set<ObjectIdentifier>()
        for route in routes where seen.insert(ObjectIdentifier(route.destination)).inserted {
            if kept.contains(ObjectIdentifier(route.destination)) {
                keptOpen.append(route.destination)
            } else {
                route.destination.shutdown()
                closed.append(route.destination)
            }
        }
        beforeClosingTheJournal()
        // Nothing left unwritten: no earlier set-up's context is needed at the next start.
        if let journal, journal.unacknowledgedBytes == 0 {
            JournalContexts.removeAll(in: journal.configuration.directory, upToThatOf: builder.eventIDs.prefix)
        }
        journal?.close()
        return (closed.lazy.compactMap(\.shutdownFailure).first, keptOpen)
    }
}

/// Counts the destinations' flush completions and calls the caller's completion once, after the last.
final class FlushBarrier: @unchecked Sendable {
    private let lock = ConditionLock()
    private var remaining = 0
    private var firstError: (any Error)?
    private var completion: (@Sendable ((any Error)?) -> Void)?

    init(completion: @escaping @Sendable ((any Error)?) -> Void) {
        self.completion = completion
    }

    func expect(_ count: Int) {
        let finish: (@Sendable ((any Error)?) -> Void)? = lock.withLock {
            remaining = count
            guard count == 0 else { return nil }
            defer { completion = nil }
            return completion
        }
        finish?(nil)
    }

    func complete(_ error: (any Error)?) {
        let finish: ((@Sendable ((any Error)?) -> Void), (any Error)?)? = lock.withLock {
            if firstError == nil { firstError = error }
            remaining -= 1
            guard remaining == 0, let completion else { return nil }
            self.completion = nil
            return (completion, firstError)
        }
        if let (completion, error) = finish { completion(error) }
    }
}

/// Runs blocking `work` on a thread of its own and resumes with its result, so that async callers never block a
/// thread of Swift's concurrency pool, nor one of Dispatch's shared threads: on Linux those are one per core, and a
/// few waits on a stalled destination would hold them all, delaying the program's work and the destinations' own
/// timers until the waits time out. A wait is rare and long; a thread's start (tens of microseconds) is not felt.
package func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.name = "JustLog wait"
        thread.start()
    }
}

/// What a reconfiguration did (see ``LogPipeline/reconfigureReportingOutcome(keepingOpen:patience:_:)``).
package enum ReconfigurationOutcome {
    /// Nothing changed: the destinations and settings are those before the call.
    case refused(JustLogError)
    /// The new destinations are in place (or take over in log order once the old ones have let go: then
    /// `oldDestinationsFailure` is a `.timeout`); the old ones' final flush or close failed with
    /// `oldDestinationsFailure`, if any.
    case installed(oldDestinationsFailure: (any Error)?)
}
