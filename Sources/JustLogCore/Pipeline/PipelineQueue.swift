import Foundation

/// The mutable heart of a ``LogPipeline``: the bounded FIFO, its counters, and the worker thread that drains
/// it. The worker holds this object, not the pipeline, so a released pipeline can stop its worker.
final class PipelineQueue: @unchecked Sendable {
    private enum Item {
        case event(LogEvent, sequence: UInt64, bytes: Int)
        case record(LogRecord, bytes: Int)
        case flush(FlushBarrier)
        case action(@Sendable () -> Void)

        /// The message bytes the item counted against the queue's byte bound when it was queued (a
        /// sanitizer may have changed the record's message since: the same number must come off).
        var bytes: Int {
            switch self {
            case .event(_, _, let bytes), .record(_, let bytes): bytes
            case .flush, .action: 0
            }
        }

        var isEvent: Bool {
            switch self {
            case .event, .record: true
            case .flush, .action: false
            }
        }
    }

    /// Items the worker takes at a time: small enough that progress (which restarts a waiting caller's
    /// patience) is seen often, large enough that a destination writes in batches.
    static let batchLimit = 1024

    /// Items the worker takes at a time once the exit flush has started: its progress, which keeps the exit
    /// handler waiting, then shows every few milliseconds even through a slow destination.
    static let exitBatchLimit = 64

    /// How long the worker lingers after being woken, so a burst costs one wake-up, not one per event;
    /// also the most a lone event waits before it is written.
    static let linger = 0.001

    private enum State { case running, stopping, stopped }

    let dispatcher: RecordDispatcher
    let configuration: LogPipeline.Configuration
    let diagnostics: DiagnosticSink
    let now: @Sendable () -> LogTimestamp

    private let lock = ConditionLock()
    /// The FIFO: `items[head...]` are waiting; the worker advances `head` and compacts now and then.
    private var items: [Item] = []
    private var head = 0
    private var queuedBytes = 0
    private var nextSequence: UInt64 = 0
    private var counters = LogPipeline.Statistics()
    private var unreportedDrops: UInt64 = 0
    private var workerIsWaiting = false
    private var producersWaiting = 0
    private var batchesTaken: UInt64 = 0
    private var state: State = .running
    private var workerFinished = false
    private var exiting = false
    private var destinationFailure: (any Error)?

    init(dispatcher: RecordDispatcher, configuration: LogPipeline.Configuration, diagnostics: DiagnosticSink,
         now: @escaping @Sendable () -> LogTimestamp) {
        self.dispatcher = dispatcher
        self.configuration = configuration
        self.diagnostics = diagnostics
        self.now = now
        items.reserveCapacity(min(configuration.capacity, 4096))
    }

    func startWorker() {
        let thread = Thread { [self] in self.runWorker() }
        thread.name = "JustLog pipeline"
        thread.qualityOfService = .utility
        thread.start()
    }

    var statistics: LogPipeline.Statistics { lock.withLock { counters } }

    // MARK: - Submitting

    func submit(_ event: LogEvent) {
        let bytes = event.message.utf8.count
        let hasInline = !dispatcher.inlineRoutes.isEmpty
        let hasBackground = !dispatcher.backgroundRoutes.isEmpty
        lock.lock()
        guard state == .running else {
            counters.dropped += 1
            lock.unlock()
            diagnostics.reportOnce(key: "pipeline.stopped", "an event was logged after shutdown and dropped; log before shutting the logger down")
            return
        }
        // Only the background destinations wait in the queue. When it stays full (a stuck terminal), the
        // event is dropped for them — and still written to the inline ones: a healthy spool loses nothing.
        var queued = hasBackground
        if hasBackground, !hasRoom(for: bytes), !waitForRoom(bytes: bytes) {
            queued = false
            counters.dropped += 1
            unreportedDrops += 1
            let stopped = state != .running
            lock.unlock()
            reportFullQueue()
            guard hasInline, !stopped else { return }
            lock.lock()
            guard state == .running else {
                lock.unlock()
                return
            }
        }
        let sequence = nextSequence
        nextSequence += 1
        counters.submitted += 1
        if !hasInline {
            items.append(.event(event, sequence: sequence, bytes: bytes))
        } else {
            let record = dispatcher.record(event, sequence: sequence)
            dispatcher.writeInline(record)
            guard queued else {
                // Nothing (more) to do in the background: don't hold the record in memory.
                if !hasBackground { counters.delivered += 1 }
                lock.unlock()
                return
            }
            items.append(.record(record, bytes: bytes))
        }
        queuedBytes += bytes
        let wake = workerIsWaiting
        lock.unlock()
        if wake { lock.broadcast() }
    }

    private func reportFullQueue() {
        diagnostics.reportOnce(
            key: "pipeline.full",
            "the log queue made no progress for \(configuration.fullQueueWait) s (a destination is stalled); dropping events for the background destinations and counting them"
        )
    }

    private func hasRoom(for bytes: Int) -> Bool {
        items.count - head < configuration.capacity && (queuedBytes == 0 || queuedBytes + bytes <= configuration.maximumQueuedBytes)
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

    /// Appends a control item; `false` (and nothing appended) once the queue has stopped.
    private func enqueueControl(_ item: Item) -> Bool {
        lock.lock()
        guard state != .stopped else {
            lock.unlock()
            return false
        }
        items.append(item)
        let wake = workerIsWaiting
        lock.unlock()
        if wake { lock.broadcast() }
        return true
    }

    func performInOrder(_ action: @escaping @Sendable () -> Void) {
        if !enqueueControl(.action(action)) { action() }
    }

    // MARK: - Flushing and stopping

    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        if !enqueueControl(.flush(FlushBarrier(completion: completion))) {
            completion(JustLogError(.shutdown, "the logger was shut down"))
        }
    }

    func flush(timeout: Double) -> (any Error)? {
        requestFlush().wait(timeout: timeout, restartingOnProgress: false)
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

    /// Counts the worker's batches: it moves whenever the destinations make progress.
    var progress: UInt64 { lock.withLock { batchesTaken } }

    /// Events waiting in the queue (not yet taken by the worker).
    var waitingEvents: Int {
        lock.withLock { items[head...].lazy.filter(\.isEvent).count }
    }

    /// Flushes (at most `timeout`), then stops the worker, which shuts the destinations down after the
    /// last item: a destination is never shut down while the worker may still write to it.
    func shutdown(timeout: Double) -> (any Error)? {
        let first = lock.withLock { () -> Bool in
            guard state == .running else { return false }
            state = .stopping
            lock.broadcast()
            return true
        }
        guard first else { return nil }
        let deadline = Date().addingTimeInterval(timeout)
        var error = flush(timeout: timeout)
        let (finished, failure) = lock.withLock { () -> (Bool, (any Error)?) in
            state = .stopped
            lock.broadcast()
            while !workerFinished {
                let remaining = deadline.timeIntervalSinceNow
                if remaining <= 0 { return (false, nil) }
                _ = lock.wait(seconds: remaining)
            }
            return (true, destinationFailure)
        }
        if !finished, error == nil {
            error = JustLogError(.timeout, "shutdown did not finish within \(timeout) s; the destinations are closed when the worker finishes")
        }
        if error == nil { error = failure }
        ExitFlusher.shared.unregister(self)
        return error
    }

    // MARK: - Worker

    private func runWorker() {
        var batch: [Item] = []
        batch.reserveCapacity(min(configuration.capacity, 4096))
        while true {
            lock.lock()
            if head == items.count && state != .stopped {
                while head == items.count && state != .stopped {
                    workerIsWaiting = true
                    lock.wait()
                    workerIsWaiting = false
                }
                // Woken by the first event of a burst: linger briefly, without asking to be woken, so the
                // rest of the burst is queued without a wake-up syscall per event.
                if items.count - head < Self.batchLimit && state == .running {
                    _ = lock.wait(seconds: Self.linger)
                }
            }
            if head == items.count && state == .stopped {
                lock.unlock()
                let failure = dispatcher.shutdownDestinations()
                lock.withLock {
                    destinationFailure = failure
                    workerFinished = true
                    lock.broadcast()
                }
                return
            }
            let end = min(items.count, head + (exiting ? Self.exitBatchLimit : Self.batchLimit))
            batch.append(contentsOf: items[head..<end])
            for item in batch { queuedBytes -= item.bytes }
            head = end
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
                queuedBytes = 0
            } else if head >= 4 * Self.batchLimit {
                items.removeFirst(head)
                head = 0
            }
            batchesTaken += 1
            let drops = unreportedDrops
            unreportedDrops = 0
            if producersWaiting > 0 { lock.broadcast() }
            lock.unlock()

            process(batch, reportingDrops: drops)
            batch.removeAll(keepingCapacity: true)
        }
    }

    private func process(_ batch: [Item], reportingDrops drops: UInt64) {
        var records: [LogRecord] = []
        records.reserveCapacity(batch.count + 1)
        if drops > 0 {
            let report = dropReport(drops)
            // Inline destinations are written under the lock, in order with the callers' writes.
            lock.withLock { dispatcher.writeInline(report) }
            records.append(report)
        }
        func deliver() {
            guard !records.isEmpty else { return }
            dispatcher.writeBackground(records)
            let count = UInt64(records.count)
            lock.withLock { counters.delivered += count }
            records.removeAll(keepingCapacity: true)
        }
        for item in batch {
            switch item {
            case .event(let event, let sequence, _):
                records.append(dispatcher.record(event, sequence: sequence))
            case .record(let record, _):
                records.append(record)
            case .flush(let barrier):
                deliver()
                dispatcher.flush(barrier)
            case .action(let action):
                deliver()
                action()
            }
        }
        deliver()
    }

    private func dropReport(_ count: UInt64) -> LogRecord {
        let event = LogEvent.report(
            "JustLog dropped \(count) event(s): the log queue made no progress for \(configuration.fullQueueWait) s",
            userInfo: ["dropped_events": .uint(count)],
            timestamp: now()
        )
        let sequence = lock.withLock { () -> UInt64 in
            defer { nextSequence += 1 }
            return nextSequence
        }
        return dispatcher.record(event, sequence: sequence)
    }
}

/// A flush that was queued, and the means to wait for it.
final class PendingFlush: @unchecked Sendable {
    private let queue: PipelineQueue
    private let done = ConditionLock()
    private var finished = false
    private var error: (any Error)?

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
    /// progress: the wait restarts whenever the worker takes a batch, so a slow but moving destination (a loaded
    /// machine, a slow disk) is waited for, and only a stalled one is given up on. Without it, `timeout` is a
    /// fixed bound. Returns the flush's error, or a timeout error.
    func wait(timeout: Double, restartingOnProgress: Bool) -> (any Error)? {
        var seen = queue.progress
        var deadline = Date().addingTimeInterval(timeout)
        while true {
            let outcome: (finished: Bool, error: (any Error)?) = done.withLock {
                // Wake at least every 100 ms to look at the worker's progress (read outside this lock).
                let remaining = max(0, deadline.timeIntervalSinceNow)
                if !finished { _ = done.wait(seconds: restartingOnProgress ? min(remaining, 0.1) : remaining) }
                return (finished, error)
            }
            if outcome.finished { return outcome.error }
            if restartingOnProgress {
                let now = queue.progress
                if now != seen {
                    seen = now
                    deadline = Date().addingTimeInterval(timeout)
                    continue
                }
            }
            if deadline.timeIntervalSinceNow <= 0 {
                return JustLogError(
                    .timeout,
                    restartingOnProgress ? "flush made no progress for \(timeout) s" : "flush did not complete within \(timeout) s"
                )
            }
        }
    }
}
