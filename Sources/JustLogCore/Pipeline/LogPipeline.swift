import Foundation

/// Carries events from log calls to destinations: a bounded queue in front of one background thread.
///
/// ```text
///  log call ──capture──▶ submit ──(inline destinations, on the caller's thread)──▶ spool
///                          │
///                          ▼  bounded FIFO (events, bytes)
///                   worker thread ──build record, sanitize──▶ background destinations (batches)
/// ```
///
/// - **Order.** One FIFO queue, filled under one lock: events from one thread reach every destination in
///   the order they were logged; each gets a sequence number (its `event_id`) in that order.
/// - **Bounds.** At most ``Configuration/capacity`` events and ``Configuration/maximumQueuedBytes`` of
///   messages wait in the queue, and at most as many more are in the batch the worker is writing.
/// - **Full queue.** The caller waits while the destinations make progress (back-pressure from a slow disk
///   loses nothing); if they make none for ``Configuration/fullQueueWait`` — a stuck terminal, a hung network
///   file system — the event is dropped *and counted*: a program must not hang because logging stalls. The count is reported once on the diagnostics sink and then as a warning record sent to
///   every destination when the queue has room again.
/// - **Flush.** ``flush(completion:)`` completes once every event submitted before it has been written and
///   every destination has flushed. At process exit (returning from `main`, or `exit()`), every live
///   pipeline is flushed, with ``Configuration/exitFlushTimeout``.
public final class LogPipeline: @unchecked Sendable {
    /// Limits and timing of a pipeline; every default is a documented choice.
    public struct Configuration: Sendable {
        /// Events waiting in memory at most. Default 16 384.
        public var capacity: Int
        /// Message bytes waiting in memory at most (a few huge messages must not exhaust memory). Default 32 MiB.
        public var maximumQueuedBytes: Int
        /// How long a log call waits in a full queue for the destinations to make progress before its event is
        /// dropped and counted. The wait restarts whenever they do. Default 1 s.
        public var fullQueueWait: Double
        /// How long the exit handler waits for destinations to flush. Default 5 s.
        public var exitFlushTimeout: Double

        public init(capacity: Int = 16_384, maximumQueuedBytes: Int = 32 << 20, fullQueueWait: Double = 1, exitFlushTimeout: Double = 5) {
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
        /// Events dropped because the queue stayed full (or the pipeline was shut down).
        public var dropped: UInt64 = 0
        /// Events handed to the destinations.
        public var delivered: UInt64 = 0
    }

    private enum Item {
        case event(LogEvent, sequence: UInt64)
        case record(LogRecord)
        case flush(FlushBarrier)
        case action(@Sendable () -> Void)
    }

    /// The lowest level any route receives: a cheaper call is filtered out before it is captured.
    public let minimumLevel: LogLevel
    let routes: [Route]
    let inlineRoutes: [Route]
    let backgroundRoutes: [Route]
    let builder: RecordBuilder
    let sanitizer: Sanitizer?
    let configuration: Configuration
    let diagnostics: DiagnosticSink
    /// The clock of log calls (injected so that tests can pin it).
    let now: @Sendable () -> LogTimestamp

    private let lock = ConditionLock()
    private var queue: [Item] = []
    private var spare: [Item] = []
    private var queuedBytes = 0
    private var nextSequence: UInt64 = 0
    private var statistics = Statistics()
    private var unreportedDrops: UInt64 = 0
    private var workerIsWaiting = false
    private var producersWaiting = 0
    private var batchesTaken: UInt64 = 0
    private var state: State = .running
    private var worker: Thread?

    private enum State { case running, stopping, stopped }

    /// Creates a pipeline and starts its worker thread.
    public init(
        routes: [Route],
        builder: RecordBuilder = RecordBuilder(),
        sanitizer: Sanitizer? = nil,
        configuration: Configuration = Configuration(),
        diagnostics: DiagnosticSink = .standardError,
        now: @escaping @Sendable () -> LogTimestamp = { LogTimestamp.now() }
    ) {
        self.routes = routes
        self.inlineRoutes = routes.filter { $0.destination.delivery == .inline }
        self.backgroundRoutes = routes.filter { $0.destination.delivery == .background }
        self.minimumLevel = routes.map(\.minimumLevel).min() ?? .error
        self.builder = builder
        self.sanitizer = sanitizer
        self.configuration = configuration
        self.diagnostics = diagnostics
        self.now = now
        queue.reserveCapacity(min(configuration.capacity, 4096))
        spare.reserveCapacity(min(configuration.capacity, 4096))

        let thread = Thread { [self] in self.runWorker() }
        thread.name = "JustLog pipeline"
        thread.qualityOfService = .utility
        worker = thread
        thread.start()
        ExitFlusher.shared.register(self)
    }

    deinit {
        ExitFlusher.shared.unregister(self)
    }

    // MARK: - Submitting

    /// Accepts an event: writes it to inline destinations now and queues it for the others.
    public func submit(_ event: LogEvent) {
        let bytes = event.message.utf8.count
        lock.lock()
        guard state == .running else {
            statistics.dropped += 1
            lock.unlock()
            diagnostics.reportOnce(key: "pipeline.stopped", "an event was logged after shutdown and dropped; log before shutting the logger down")
            return
        }
        if !hasRoom(for: bytes) && !waitForRoom(bytes: bytes) {
            statistics.dropped += 1
            unreportedDrops += 1
            lock.unlock()
            diagnostics.reportOnce(
                key: "pipeline.full",
                "the log queue made no progress for \(configuration.fullQueueWait) s (a destination is stalled); dropping events and counting them"
            )
            return
        }
        let sequence = nextSequence
        nextSequence += 1
        statistics.submitted += 1
        queuedBytes += bytes
        if inlineRoutes.isEmpty {
            queue.append(.event(event, sequence: sequence))
        } else {
            let record = makeRecord(event, sequence: sequence)
            for route in inlineRoutes where record.level >= route.minimumLevel {
                route.destination.write(LogBatch(records: [record]))
            }
            queue.append(.record(record))
        }
        let wake = workerIsWaiting
        lock.unlock()
        if wake { lock.broadcast() }
    }

    private func hasRoom(for bytes: Int) -> Bool {
        queue.count < configuration.capacity && (queuedBytes == 0 || queuedBytes + bytes <= configuration.maximumQueuedBytes)
    }

    /// Waits (lock held) for room; `false` when the worker made no progress for `fullQueueWait`.
    ///
    /// The deadline restarts each time the worker takes a batch: a slow destination that keeps moving
    /// slows the caller down (back-pressure) but loses nothing; a stalled one costs each caller at most
    /// `fullQueueWait`, after which events are dropped and counted.
    private func waitForRoom(bytes: Int) -> Bool {
        var seenBatches = batchesTaken
        var deadline = Date().addingTimeInterval(configuration.fullQueueWait)
        producersWaiting += 1
        defer { producersWaiting -= 1 }
        while !hasRoom(for: bytes), state == .running {
            if batchesTaken != seenBatches {
                seenBatches = batchesTaken
                deadline = Date().addingTimeInterval(configuration.fullQueueWait)
            }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return false }
            if workerIsWaiting { lock.broadcast() }
            _ = lock.wait(seconds: remaining)
        }
        return state == .running
    }

    private func makeRecord(_ event: LogEvent, sequence: UInt64) -> LogRecord {
        var record = builder.record(for: event, sequence: sequence)
        sanitizer?(&record)
        return record
    }

    // MARK: - Flushing

    /// Calls `completion` once every event submitted before this call has been written and every destination
    /// has flushed; with an error if a destination could not (the first such error).
    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        let barrier = FlushBarrier(completion: completion)
        lock.lock()
        guard state != .stopped else {
            lock.unlock()
            completion(JustLogError(.shutdown, "the logger was shut down"))
            return
        }
        queue.append(.flush(barrier))
        let wake = workerIsWaiting
        lock.unlock()
        if wake { lock.broadcast() }
    }

    /// Runs `action` on the worker thread after every event submitted before this call has been handed to the
    /// background destinations, and before any submitted after it: for changes that must take effect in log
    /// order, such as switching a destination off.
    public func performInOrder(_ action: @escaping @Sendable () -> Void) {
        lock.lock()
        guard state == .running else {
            lock.unlock()
            action()
            return
        }
        queue.append(.action(action))
        let wake = workerIsWaiting
        lock.unlock()
        if wake { lock.broadcast() }
    }

    /// Flushes and waits at most `timeout` seconds; returns the error, or a timeout error.
    @discardableResult
    public func flush(timeout: Double) -> (any Error)? {
        let result = LockedValue<FlushOutcome>(.pending)
        let done = ConditionLock()
        flush { error in
            done.withLock {
                result.withLock { $0 = .finished(error) }
                done.broadcast()
            }
        }
        let deadline = Date().addingTimeInterval(timeout)
        return done.withLock {
            while true {
                if case .finished(let error) = result.current { return error }
                let remaining = deadline.timeIntervalSinceNow
                if remaining <= 0 { return JustLogError(.timeout, "flush did not complete within \(timeout) s") }
                _ = done.wait(seconds: remaining)
            }
        }
    }

    /// Flushes; returns once every event submitted before the call has been handed over.
    public func flush() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            flush { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    /// Flushes (waiting at most `timeout` seconds), shuts every destination down and stops the worker.
    /// Events logged afterwards are dropped and counted. Calling it again does nothing.
    @discardableResult
    public func shutdown(timeout: Double = 5) -> (any Error)? {
        let alreadyStopping = lock.withLock { () -> Bool in
            if state != .running { return true }
            state = .stopping
            lock.broadcast()
            return false
        }
        if alreadyStopping { return nil }
        let error = flush(timeout: timeout)
        lock.withLock {
            state = .stopped
            lock.broadcast()
        }
        for route in routes { route.destination.shutdown() }
        ExitFlusher.shared.unregister(self)
        return error
    }

    /// Counts since the pipeline started.
    public var currentStatistics: Statistics { lock.withLock { statistics } }

    // MARK: - Worker

    private func runWorker() {
        var batch: [Item] = []
        batch.reserveCapacity(min(configuration.capacity, 4096))
        while true {
            lock.lock()
            while queue.isEmpty && state != .stopped {
                workerIsWaiting = true
                lock.wait()
                workerIsWaiting = false
            }
            if queue.isEmpty && state == .stopped {
                lock.unlock()
                return
            }
            swap(&queue, &batch)
            queuedBytes = 0
            batchesTaken += 1
            let drops = unreportedDrops
            unreportedDrops = 0
            if producersWaiting > 0 { lock.broadcast() }
            lock.unlock()

            process(batch, reportingDrops: drops)
            batch.removeAll(keepingCapacity: true)
        }
    }

    private func process(_ items: [Item], reportingDrops drops: UInt64) {
        var records: [LogRecord] = []
        records.reserveCapacity(items.count + 1)
        if drops > 0 {
            records.append(dropReport(drops))
        }
        for item in items {
            switch item {
            case .event(let event, let sequence):
                records.append(makeRecord(event, sequence: sequence))
            case .record(let record):
                records.append(record)
            case .flush(let barrier):
                deliver(&records)
                flushDestinations(barrier)
            case .action(let action):
                deliver(&records)
                action()
            }
        }
        deliver(&records)
    }

    private func deliver(_ records: inout [LogRecord]) {
        guard !records.isEmpty else { return }
        for route in backgroundRoutes {
            let selected = route.minimumLevel == .verbose ? records : records.filter { $0.level >= route.minimumLevel }
            if !selected.isEmpty { route.destination.write(LogBatch(records: selected)) }
        }
        let count = UInt64(records.count)
        lock.withLock { statistics.delivered += count }
        records.removeAll(keepingCapacity: true)
    }

    private func flushDestinations(_ barrier: FlushBarrier) {
        barrier.expect(routes.count)
        for route in routes {
            route.destination.flush { error in barrier.complete(error) }
        }
    }

    private func dropReport(_ count: UInt64) -> LogRecord {
        let event = LogEvent(
            level: .warning,
            message: "JustLog dropped \(count) event(s): the log queue made no progress for \(configuration.fullQueueWait) s",
            userInfo: ["dropped_events": .uint(count)],
            callSite: CallSite(file: #fileID, function: #function, line: #line),
            timestamp: now()
        )
        let sequence = lock.withLock { () -> UInt64 in
            defer { nextSequence += 1 }
            return nextSequence
        }
        return makeRecord(event, sequence: sequence)
    }
}

private enum FlushOutcome: Sendable {
    case pending
    case finished((any Error)?)
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
            if count == 0 { defer { completion = nil }; return completion }
            return nil
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
