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
///   file system — the event is dropped for the background destinations *and counted* (inline ones, such as
///   the Logstash spool, still get it): a program must not hang because logging stalls.
///   The count is reported once on the diagnostics sink and then as a warning record sent to every
///   destination when the queue moves again.
/// - **Flush.** ``flush(completion:)`` completes once every event submitted before it has been written and
///   every destination has flushed. At process exit (returning from `main`, or `exit()`), every live
///   pipeline is flushed; the exit handler waits while the destinations make progress and gives up only on
///   one that made none for ``Configuration/exitFlushTimeout`` (saying how many events it lost).
/// - **Lifetime.** ``shutdown(timeout:)`` flushes, shuts the destinations down and ends the worker thread;
///   a pipeline that is released without it does the same in `deinit`.
public final class LogPipeline: Sendable {
    /// Limits and timing of a pipeline; every default is a documented choice.
    public struct Configuration: Sendable {
        /// Events waiting in memory at most. Default 16 384.
        public var capacity: Int
        /// Message bytes waiting in memory at most (a few huge messages must not exhaust memory). Default 32 MiB.
        public var maximumQueuedBytes: Int
        /// How long a log call waits in a full queue for the destinations to make progress before its event is
        /// dropped and counted. The wait restarts whenever they do. Default 1 s.
        public var fullQueueWait: Double
        /// At process exit, how long the destinations may go *without progress* before the exit handler stops
        /// waiting for them (it waits as long as they keep writing); also the bound on the flush in `deinit`.
        /// Default 5 s.
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
        /// Events that missed destinations: the queue made no progress (they still reached the inline
        /// destinations, such as the Logstash spool), or the pipeline was shut down (they reached none).
        public var dropped: UInt64 = 0
        /// Records handed to the background destinations (including JustLog's own drop reports).
        public var delivered: UInt64 = 0
    }

    /// The lowest level any route receives: a cheaper call is filtered out before it is captured.
    public let minimumLevel: LogLevel
    /// The clock of log calls (injected so that tests can pin it).
    public let now: @Sendable () -> LogTimestamp
    let configuration: Configuration
    private let queue: PipelineQueue

    /// Creates a pipeline and starts its worker thread.
    public init(
        routes: [Route],
        builder: RecordBuilder = RecordBuilder(),
        sanitizer: Sanitizer? = nil,
        configuration: Configuration = Configuration(),
        diagnostics: DiagnosticSink = .standardError,
        now: @escaping @Sendable () -> LogTimestamp = { LogTimestamp.now() }
    ) {
        self.minimumLevel = routes.map(\.minimumLevel).min() ?? .error
        self.now = now
        self.configuration = configuration
        let dispatcher = RecordDispatcher(routes: routes, builder: builder, sanitizer: sanitizer)
        self.queue = PipelineQueue(dispatcher: dispatcher, configuration: configuration, diagnostics: diagnostics, now: now)
        queue.startWorker()
        ExitFlusher.shared.register(queue)
    }

    deinit {
        _ = queue.shutdown(timeout: configuration.exitFlushTimeout)
    }

    /// Accepts an event: writes it to inline destinations now and queues it for the others.
    public func submit(_ event: LogEvent) {
        queue.submit(event)
    }

    /// Runs `action` on the worker thread after every event submitted before this call has been handed to the
    /// background destinations, and before any submitted after it: for changes that must take effect in log
    /// order, such as switching a destination off.
    public func performInOrder(_ action: @escaping @Sendable () -> Void) {
        queue.performInOrder(action)
    }

    /// Calls `completion` once every event submitted before this call has been written and every destination
    /// has flushed; with an error if a destination could not (the first such error).
    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        queue.flush(completion: completion)
    }

    /// Flushes and waits at most `timeout` seconds; returns the error, or a timeout error.
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

    /// Flushes (waiting at most `timeout` seconds), shuts every destination down and ends the worker thread.
    /// Events logged afterwards are dropped and counted. Calling it again does nothing. Returns the flush's
    /// error, a timeout, or the first destination's ``LogDestination/shutdownFailure``.
    @discardableResult
    public func shutdown(timeout: Double = 5) -> (any Error)? {
        queue.shutdown(timeout: timeout)
    }

    /// ``shutdown(timeout:)`` for async code: the waiting happens on a dispatch queue, not on a thread of
    /// the concurrency pool (which has one thread per core, and which a blocking wait would starve).
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

    init(routes: [LogPipeline.Route], builder: RecordBuilder, sanitizer: Sanitizer?) {
        self.routes = routes
        self.inlineRoutes = routes.filter { $0.destination.delivery == .inline }
        self.backgroundRoutes = routes.filter { $0.destination.delivery == .background }
        self.builder = builder
        self.sanitizer = sanitizer
    }

    func record(_ event: LogEvent, sequence: UInt64) -> LogRecord {
        var record = builder.record(for: event, sequence: sequence)
        sanitizer?(&record)
        return record
    }

    func writeInline(_ record: LogRecord) {
        for route in inlineRoutes where record.level >= route.minimumLevel {
            route.destination.write(LogBatch(records: [record]))
        }
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

    /// Shuts every destination down; returns the first one's ``LogDestination/shutdownFailure``.
    func shutdownDestinations() -> (any Error)? {
        for route in routes { route.destination.shutdown() }
        return routes.lazy.compactMap { $0.destination.shutdownFailure }.first
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

/// Runs blocking `work` on a dispatch queue and resumes with its result, so that async callers never block a
/// thread of Swift's concurrency pool.
package func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: work()) }
    }
}

