public import CoreMetrics
import Foundation
public import JustLogCore
public import NIOCore

/// Sends every record, in the flattened form, to a Logstash-compatible collector (SPEC §3, §4).
///
/// - **Crash-safe before the log call returns.** `delivery` is ``DestinationDelivery/durable``. In a pipeline
///   with an ``EventJournal`` (the `Logger` facade's default), the journal makes each event crash-safe on the
///   caller's thread and this destination encodes in the background; what it had not spooled when the program
///   was killed is given to it again at the next start, with the same `event_id`s (at least once: a collector
///   drops duplicates with `document_id => "%{event_id}"`). Without a journal it is inline: each record is
///   encoded and copied into the memory-mapped ``LogstashSpool`` before the log call returns — a `memcpy`,
///   no syscall — so a program killed right after logging still has the event on disk.
/// - **Batched in the background.** A ``LogstashClient`` drains the spool over one TCP or TLS connection
///   (json_lines or Beats, to one of several collectors with failover), every `sendInterval` or as soon as a
///   batch is full, reconnecting with backoff, resending what was not proven delivered (with Beats: what the
///   collector did not acknowledge).
/// - **Bounded.** Records larger than the collector's line limit are truncated (and say so); the spool has
///   a size cap past which the oldest records are dropped, counted, reported once on the diagnostics sink
///   and then as an event when delivery resumes.
/// - **Never silently absent.** If the spool can't be used — its folder can't be created or locked, the
///   disk is full, a file-size limit is reached — the destination still exists: it holds events in memory
///   (up to ``Configuration/unspooledMemoryLimit``; past it they are dropped and counted), tries the spool
///   again every ``Configuration/spoolRetryInterval``, says so on the diagnostics sink, and fails every
///   ``flush(completion:)`` with the reason and the number of events waiting. Once the spool works, the held
///   events are spooled in order and delivered, and what was dropped meanwhile is reported as an event.
/// - **Damage reported.** Records the spool could not read when it was opened (a damaged file) are counted
///   and reported as an event to the collector.
///
/// ```swift
/// var configuration = LogstashDestination.Configuration(
///     client: .init(host: "listener.logz.io", port: 5052),
///     spoolDirectory: "/var/cache/billing/billing.log.spool"
/// )
/// configuration.token = "<token>"
/// let logstash = try LogstashDestination(configuration: configuration)
/// ```
public final class LogstashDestination: LogDestination, PlainBatchWriting, PipelineHoldingBack, MemoryHolding {
    /// What the destination needs; defaults are documented on each member.
    public struct Configuration: Sendable {
        /// Where and how to connect: host, port, TLS, backoff, batch sizes.
        public var client: LogstashClient.Configuration
        /// The spool: its folder, size cap and segment size.
        public var spool: LogstashSpool.Configuration
        /// A logz.io token, added as `"token"` to every event. Default `nil`.
        public var token: String?
        /// The longest a flush (`forceSend`) waits before it completes with a timeout error. Default 30 s.
        public var flushTimeout: Double
        /// Added to JustLog's own report events (drops, losses), so that dashboards filtered by, say, `app`
        /// show them. The facade sets it to the logger's `defaultUserInfo`. Default empty.
        public var reportUserInfo: [String: LogValue] = [:]
        /// The most bytes of events held in memory while the spool can't be used; past it events are
        /// dropped and counted. Default 4 MiB.
        public var unspooledMemoryLimit: Int = 4 << 20
        /// Seconds between attempts to use a spool that can't be used. Default 1.
        public var spoolRetryInterval: Double = 1
        /// Near the spool's cap, how long no write to the collector may complete before writes stop waiting for
        /// room (the collector counts as taking nothing, and the cap drops the oldest). Default 2 s; tests on a
        /// loaded machine, whose collector thread may not run for longer, raise it.
        package var roomPatience: Duration = .seconds(2)

        public init(
            client: LogstashClient.Configuration,
            spoolDirectory: String,
            token: String? = nil,
            flushTimeout: Double = 30
        ) {
            self.client = client
            self.spool = LogstashSpool.Configuration(directory: spoolDirectory, maxRecordBytes: client.maxLineBytes)
            self.token = token
            self.flushTimeout = flushTimeout
        }
    }

    public let configuration: Configuration
    public let delivery = DestinationDelivery.durable
    /// The spool between log calls and the connection (it may not be open: see the type's discussion).
    public let spool: LogstashSpool
    /// The sender.
    public let client: LogstashClient
    private let diagnostics: DiagnosticSink
    private let limiter: RecordSizeLimiter
    private let metrics: LogstashMetrics
    private let appender: SpoolAppender
    private let lastDropCount = LockedValue<UInt64>(0)
    private let shutdownError = LockedValue<LogstashError?>(nil)
    private let reports: ReportAppender
    private let room: SpoolRoom
    private let retryScheduled = LockedValue(false)
    private let isShutDown = LockedValue(false)
    /// What writing plain journal records straight from their bytes reuses from one batch to the next.
    private let direct = LockedValue(DirectState())

    private struct DirectState {
        /// The format of the latest batch.
        var format: DirectFormat?
        /// The flattened lines of the call sites met last (see ``LineTemplates``), with the format's presets and
        /// this destination's `token`; `nil` when the token collides with a default: the general path renames.
        var templates: LineTemplates?
        var times = TimeTextCache(.rfc3339)
        /// The batch's lines end to end, and each one's length: spooled together.
        var lines = OutputBuffer()
        var lengths: [Int] = []
    }

    /// Opens (or recovers) the spool and starts the sender. A spool that can't be opened does not make this
    /// throw: the destination starts without it and keeps trying (see the type's discussion).
    ///
    /// - Parameters:
    ///   - activity: receives connection activity lines (never a token or a record); `nil` shows none.
    ///   - diagnostics: where drops and failures are reported.
    ///   - metrics: where counters go (see ``LogstashMetrics``); default: the bootstrapped `MetricsSystem`.
    /// - Throws: ``LogstashError`` for sizes that can't work together or invalid TLS settings.
    public init(
        configuration: Configuration,
        eventLoopGroup: (any EventLoopGroup)? = nil,
        activity: (@Sendable (String) -> Void)? = nil,
        diagnostics: DiagnosticSink = .standardError,
        metrics metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) throws {
        // json_lines forgets records only after `window` more bytes were sent; Beats once they are acknowledged,
        // so at most one window is unconfirmed. A smaller spool would delete delivered records at its cap and
        // report them as dropped.
        try configuration.client.validate()
        // The shorter of the collector's line limit and the spool's record limit holds: they are one limit, and a
        // program may set one after the configuration copied it into the other (review, helper-49).
        var configuration = configuration
        configuration.spool.maxRecordBytes = min(configuration.spool.maxRecordBytes, configuration.client.maxLineBytes)
        let isBeats = configuration.client.transport.isBeats
        let window = isBeats ? configuration.client.maxBatchBytes : configuration.client.resendWindowBytes
        // Checked for overflow: a segment size near `Int.max` is refused, not a trap (review, helper-48).
        let (segments, segmentsOverflow) = configuration.spool.segmentBytes.multipliedReportingOverflow(by: 2)
        let (needed, neededOverflow) = window.addingReportingOverflow(segments)
        guard !segmentsOverflow, !neededOverflow, configuration.spool.maxTotalBytes >= needed else {
            throw LogstashError(
                code: .invalidConfiguration,
                message:
                    "the spool cap (\(configuration.spool.maxTotalBytes) bytes) must be at least the \(isBeats ? "largest window" : "resend window") (\(window) bytes) plus two segments of \(configuration.spool.segmentBytes) bytes; raise the spool capacity"
            )
        }
        self.configuration = configuration
        // Its own once-only reports (and its spool's, client's): another destination's don't silence them.
        let diagnostics = diagnostics.withOwnReports()
        self.diagnostics = diagnostics
        self.limiter = RecordSizeLimiter(maximumBytes: configuration.spool.maxRecordBytes)
        let spool = try LogstashSpool(unopened: configuration.spool, diagnostics: diagnostics)
        self.spool = spool
        self.appender = SpoolAppender(spool: spool, memoryLimit: configuration.unspooledMemoryLimit)
        self.metrics = LogstashMetrics(factory: metricsFactory)
        let reports = ReportAppender(
            limiter: limiter,
            token: configuration.token,
            builder: RecordBuilder(defaultUserInfo: configuration.reportUserInfo)
        )
        self.reports = reports
        self.client = try LogstashClient(
            configuration: configuration.client,
            spool: spool,
            eventLoopGroup: eventLoopGroup,
            activity: activity,
            warning: { line in diagnostics.report(line) },
            onDeliveryResumed: { count in reports.appendDropReport(count) }
        )
        let client = self.client
        self.room = SpoolRoom(spool: spool, progress: { client.completedWrites }, patience: configuration.roomPatience)
        reports.destination = self
        let metrics = self.metrics
        // Before anything is appended: an append may wake the client's loop, which reads the observer.
        client.observeDelivery { [spool] sent, resent in
            metrics.delivered(sent: sent, resent: resent)
            metrics.spoolChanged(spool)
        }
        handle(appender.open(lockWait: .seconds(1)))
        client.start()
    }

    // MARK: - LogDestination

    public func write(_ batch: LogBatch) {
        var appended = 0
        for record in batch.records {
            let line = limiter.encode(record, token: configuration.token)
            room.waitForRoom(line.count + 1)
            spool(line, appended: &appended)
        }
        finishWriting(appended: appended)
    }

    /// Near the spool's cap, writes wait for room while the collector takes events and `mayWait` says so (see
    /// ``SpoolRoom``); until this is called, they don't wait.
    package func pipelineAttached(mayWait: @escaping @Sendable () -> Bool) {
        room.allowWaiting(while: mayWait)
    }

    /// While the spool can't be used, the events given since are only in memory (held, or dropped and counted):
    /// with a journal, the pipeline keeps them there for the next start should the program be killed.
    package var holdsRecordsOnlyInMemory: Bool { appender.isHoldingInMemory }

    /// Writes plain journal records straight from their bytes: the same lines as ``write(_:)`` writes for their
    /// records. A line past the collector's limit is left to the ``RecordSizeLimiter``.
    package func write(_ batch: PlainBatch) {
        var appended = 0
        direct.withLock { state in
            if state.format !== batch.format {
                state.format = batch.format
                let presets =
                    if let token = configuration.token {
                        batch.format.presets(addingOwn: "token", .string(token))
                    } else {
                        Optional(batch.format.presets)
                    }
                state.templates = presets.map(LineTemplates.flattened(presets:))
            }
            // Spooled a megabyte at a time (one lock for the lot): a batch of large messages is not held whole.
            func spoolLines() {
                room.waitForRoom(state.lines.count + state.lengths.count)
                let outcome = state.lines.withUnsafeBytes { appender.append(lines: $0, lengths: state.lengths) }
                appended += outcome.spooled
                handle(outcome, counting: false)
                state.lines.removeAll()
                state.lengths.removeAll(keepingCapacity: true)
            }
            for index in 0..<batch.count where batch.isIncluded(index) {
                let start = state.lines.count
                var flattened = false
                if state.templates != nil {
                    flattened = batch.writeFlattened(
                        at: index,
                        times: &state.times,
                        templates: &state.templates!,
                        into: &state.lines
                    )
                }
                if !flattened || state.lines.count - start > limiter.maximumBytes {
                    state.lines.removeAll(after: start)
                    state.lines.append(limiter.encode(batch.record(at: index), token: configuration.token))
                }
                state.lengths.append(state.lines.count - start)
                if state.lines.count >= 1 << 20 { spoolLines() }
            }
            if !state.lengths.isEmpty { spoolLines() }
            if state.lines.capacity > 4 << 20 { state.lines = OutputBuffer() }
        }
        finishWriting(appended: appended)
    }

    private func spool(_ line: [UInt8], appended: inout Int) {
        line.withUnsafeBytes { spool($0, appended: &appended) }
    }

    private func spool(_ line: UnsafeRawBufferPointer, appended: inout Int) {
        let outcome = appender.append(line)
        appended += outcome.spooled
        if outcome.spooled == 0 {
            handle(outcome, counting: false)
        }
    }

    private func finishWriting(appended: Int) {
        if appended > 0 {
            metrics.appended(appended)
            client.recordsAppended(appended)
        }
        reportSpoolDrops()
    }

    /// Completes once everything spooled before the call — including what an earlier run left — has been
    /// written to the collector, or with the error that says why not (at most ``Configuration/flushTimeout``).
    /// While the spool can't be used, it completes at once with an error that says why and how many events
    /// are waiting in memory (what the spool holds is still sent).
    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        handle(appender.retry())
        // (An infinite or NaN timeout waits as long as it takes.)
        let seconds = configuration.flushTimeout.isFinite ? min(max(configuration.flushTimeout, 0), 1e9) : nil
        let timeout = seconds.map { Duration.milliseconds(Int64(($0 * 1000).rounded())) }
        if let problem = appender.unavailability {
            client.flush(within: timeout) { _ in }
            completion(unavailableError(problem))
            return
        }
        // The client gives up at the timeout (and forgets the flush); this timer only answers for a client that
        // can't answer at all (its event loop group shut down).
        let once = CompletionOnce(completion)
        if let seconds {
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds + 1) {
                once.complete(
                    LogstashError(
                        code: .timeout,
                        message:
                            "the Logstash client did not answer a flush within \(seconds + 1) s; the events stay spooled"
                    )
                )
            }
        }
        client.flush(within: timeout) { error in once.complete(error) }
    }

    /// Sends what it can within the client's shutdown timeout, closes the connection and the spool. What
    /// was not sent stays in the spool for the next run; events still held in memory (the spool could not
    /// be used) are lost, and reported.
    public func shutdown() {
        isShutDown.withLock { $0 = true }
        handle(appender.retry())
        var heldLoss: LogstashError?
        if let problem = appender.unavailability, problem.held > 0 || problem.dropped > 0 {
            heldLoss = LogstashError(
                code: .spoolUnavailable,
                message:
                    "\(problem.held + Int(problem.dropped)) event(s) for Logstash are lost (\(problem.held) held in memory at shutdown, \(problem.dropped) dropped earlier): the spool at \(configuration.spool.directory) can't take them",
                cause: problem.error.description
            )
            diagnostics.report("\(heldLoss!)")
        }
        let done = DispatchSemaphore(value: 0)
        let outcome = LockedValue<LogstashError?>(nil)
        client.shutdown(reporting: { error in
            outcome.withLock { $0 = error }
            done.signal()
        })
        // The client's own timeout and a second (not its whole seconds alone: 2.9 s waited 3 s, leaving 0.1 s).
        let seconds = configuration.client.shutdownTimeout.totalSeconds + 1
        var failure: LogstashError?
        if done.wait(timeout: .now() + seconds) == .timedOut {
            failure = LogstashError(
                code: .timeout,
                message: "the Logstash client did not shut down within \(seconds) s; unconfirmed events stay spooled"
            )
        } else {
            failure = outcome.withLock { $0 }
        }
        // A shutdown that could not confirm anything it had left to confirm lost nothing: not a failure.
        let queued = spool.counterSnapshot.queuedRecords
        if queued == 0 { failure = nil }
        if let failure {
            diagnostics.report(
                "Logstash: \(failure)\(queued > 0 ? " (\(queued) event(s) stay spooled for the next run)" : "")"
            )
        }
        shutdownError.withLock { $0 = heldLoss ?? failure }
        spool.close()
    }

    /// After ``shutdown()``: events lost because the spool could not be used, or why the connection did not
    /// end cleanly; `nil` if neither.
    public var shutdownFailure: (any Error)? { shutdownError.withLock { $0 } }

    /// The client's and spool's counters: queued, spooled bytes, sent, resent, dropped.
    public func counters() async -> LogstashClient.Counters {
        await client.counters()
    }

    // MARK: - Spool availability

    /// Appends one of JustLog's own report events (never itself reported when it can't be spooled).
    fileprivate func appendReport(_ bytes: [UInt8]) {
        let outcome = appender.append(bytes)
        if outcome.spooled > 0 { client.recordsAppended(outcome.spooled) }
        handle(outcome, counting: false, reportingRejections: false)
    }

    /// Turns what the appender did into metrics, diagnostics, report events and retries.
    private func handle(_ outcome: SpoolAppender.Outcome, counting: Bool = true, reportingRejections: Bool = true) {
        if counting, outcome.spooled > 0 {
            metrics.appended(outcome.spooled)
            client.recordsAppended(outcome.spooled)
        }
        if let error = outcome.becameUnavailable {
            diagnostics.report(
                "can't spool events for Logstash: \(error); holding up to \(configuration.unspooledMemoryLimit) bytes of them in memory and trying again every \(configuration.spoolRetryInterval) s (past that, events are dropped and counted)"
            )
            scheduleRetry()
        }
        if outcome.droppedForMemory > 0 {
            for _ in 0..<outcome.droppedForMemory { metrics.failedAppend() }
            diagnostics.reportOnce(
                key: "logstash.memory",
                "the spool for Logstash still can't be used and \(configuration.unspooledMemoryLimit) bytes of events are held in memory: further events are dropped and counted until it works again"
            )
        }
        if !outcome.rejected.isEmpty {
            for _ in outcome.rejected { metrics.failedAppend() }
            let reason = outcome.rejected[0]
            diagnostics.reportOnce(
                key: "logstash.rejected",
                "an event for Logstash could not be spooled and is lost: \(reason); such events are counted"
            )
            if reportingRejections, reason.code != .spoolClosed {
                reports.append(
                    "JustLog lost \(outcome.rejected.count) event(s) for Logstash: they could not be written to the spool (\(reason))",
                    userInfo: ["lost_events": .uint(UInt64(outcome.rejected.count))]
                )
            }
        }
        if outcome.opened {
            let lost = spool.takeLossesToReport()
            if lost > 0 {
                reports.append(
                    "JustLog lost \(lost) event(s) for Logstash: the spool in \(configuration.spool.directory) was damaged and they could not be read",
                    userInfo: ["lost_events": .uint(lost)]
                )
            }
            // (Not `lost_events` with another type: a collector's index maps each field to one type.)
            for damage in spool.takeUncountedLossesToReport() {
                reports.append(
                    "JustLog lost event(s) for Logstash, how many is unknown: the spool in \(configuration.spool.directory) was damaged: \(damage)",
                    userInfo: ["lost_events_unknown": .bool(true)]
                )
            }
        }
        if let recovery = outcome.recovered {
            diagnostics.reset(key: "logstash.memory")
            let dropped = recovery.dropped > 0 ? "; \(recovery.dropped) were dropped, the memory buffer being full" : ""
            diagnostics.report(
                "spooling events for Logstash works again: \(recovery.heldAndSpooled) event(s) held in memory were spooled\(dropped)"
            )
            if recovery.dropped > 0 {
                reports.append(
                    "JustLog dropped \(recovery.dropped) event(s) for Logstash: the spool could not be used (\(recovery.error)) and the memory buffer was full",
                    userInfo: ["dropped_events": .uint(recovery.dropped)]
                )
            }
        }
    }

    /// Tries the spool again after ``Configuration/spoolRetryInterval``, and again while it can't be used.
    private func scheduleRetry() {
        let first = retryScheduled.withLock { scheduled -> Bool in
            defer { scheduled = true }
            return !scheduled
        }
        guard first else { return }
        let interval =
            configuration.spoolRetryInterval.isFinite ? min(max(configuration.spoolRetryInterval, 0.01), 3600) : 1
        DispatchQueue.global().asyncAfter(deadline: .now() + interval) { [weak self] in
            guard let self else { return }
            self.retryScheduled.withLock { $0 = false }
            guard !self.isShutDown.current else { return }
            self.handle(self.appender.retry())
            if self.appender.unavailability != nil { self.scheduleRetry() }
        }
    }

    /// The error a flush completes with while the spool can't be used.
    private func unavailableError(_ problem: SpoolAppender.Unavailability) -> LogstashError {
        let dropped = problem.dropped > 0 ? "; \(problem.dropped) more were dropped, the memory buffer being full" : ""
        return LogstashError(
            code: .spoolUnavailable,
            message:
                "the Logstash spool at \(configuration.spool.directory) can't take events: \(problem.error); \(problem.held) event(s) are waiting in memory and are spooled and sent once it works again\(dropped)"
        )
    }

    /// Also records the spool's gauges (``LogstashMetrics/spoolChanged(_:)``): after every batch appended.
    private func reportSpoolDrops() {
        let dropped = metrics.spoolChanged(spool).droppedRecords
        let isNew = lastDropCount.withLock { last -> Bool in
            defer { last = max(last, dropped) }
            return dropped > last
        }
        if isNew {
            diagnostics.reportOnce(
                key: "logstash.spool.cap",
                "the Logstash spool reached its cap (\(configuration.spool.maxTotalBytes) bytes) while the collector is away, stalled or slower than the program for longer than the log journal can hold; the oldest events are dropped and counted (\(dropped) so far), and the count is sent when delivery resumes"
            )
        }
    }
}

// MARK: - Helpers

/// Calls a completion at most once: the first of the client's answer and the timeout wins.
final class CompletionOnce: Sendable {
    private let completion: LockedValue<(@Sendable ((any Error)?) -> Void)?>

    init(_ completion: @escaping @Sendable ((any Error)?) -> Void) {
        self.completion = LockedValue(completion)
    }

    func complete(_ error: (any Error)?) {
        let taken = completion.withLock { stored -> (@Sendable ((any Error)?) -> Void)? in
            defer { stored = nil }
            return stored
        }
        taken?(error)
    }
}

/// Builds JustLog's own report events (drops, losses) and appends them through the destination, in order
/// with the other records.
final class ReportAppender: @unchecked Sendable {
    let limiter: RecordSizeLimiter
    let token: String?
    let builder: RecordBuilder
    weak var destination: LogstashDestination?

    init(limiter: RecordSizeLimiter, token: String?, builder: RecordBuilder) {
        self.limiter = limiter
        self.token = token
        self.builder = builder
    }

    /// The report of `count` events the spool dropped at its cap.
    func appendDropReport(_ count: UInt64) {
        append(
            "JustLog dropped \(count) event(s) for Logstash: the spool reached its size cap while the collector was away, stalled or slower than the program for longer than the log journal could hold",
            userInfo: ["dropped_events": .uint(count)]
        )
    }

    func append(_ message: String, userInfo: [String: LogValue]) {
        let record = builder.record(for: .report(message, userInfo: userInfo), sequence: 0)
        destination?.appendReport(limiter.encode(record, token: token))
    }
}
