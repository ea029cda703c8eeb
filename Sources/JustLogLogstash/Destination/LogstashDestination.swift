import Foundation
public import JustLogCore
public import CoreMetrics
public import NIOCore

/// Sends every record, in the flattened form, to a Logstash-compatible collector (SPEC §3, §4).
///
/// - **Crash-safe on the caller's thread.** `delivery` is ``DestinationDelivery/inline``: each record is
///   encoded and copied into the memory-mapped ``LogstashSpool`` before the log call returns — a `memcpy`,
///   no syscall — so a program killed right after logging still has the event on disk.
/// - **Batched in the background.** A ``LogstashClient`` drains the spool over one TCP or TLS connection,
///   every `sendInterval` or as soon as a batch is full, reconnecting with backoff, resending what was not
///   proven delivered.
/// - **Bounded.** Records larger than the collector's line limit are truncated (and say so); the spool has
///   a size cap past which the oldest records are dropped, counted, reported once on the diagnostics sink
///   and then as an event when delivery resumes.
///
/// ```swift
/// var configuration = LogstashDestination.Configuration(
///     client: .init(host: "listener.logz.io", port: 5052),
///     spoolDirectory: "/var/cache/billing/billing.log.spool"
/// )
/// configuration.token = "<token>"
/// let logstash = try LogstashDestination(configuration: configuration)
/// ```
public final class LogstashDestination: LogDestination {
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

        public init(client: LogstashClient.Configuration, spoolDirectory: String, token: String? = nil, flushTimeout: Double = 30) {
            self.client = client
            self.spool = LogstashSpool.Configuration(directory: spoolDirectory, maxRecordBytes: client.maxLineBytes)
            self.token = token
            self.flushTimeout = flushTimeout
        }
    }

    public let configuration: Configuration
    public let delivery = DestinationDelivery.inline
    /// The spool between log calls and the connection.
    public let spool: LogstashSpool
    /// The sender.
    public let client: LogstashClient
    private let diagnostics: DiagnosticSink
    private let limiter: RecordSizeLimiter
    private let metrics: LogstashMetrics
    private let lastDropCount = LockedValue<UInt64>(0)
    private let failedAppends = LockedValue<UInt64>(0)
    private let shutdownError = LockedValue<LogstashError?>(nil)
    private let reports: ReportAppender

    /// Opens (or recovers) the spool and starts the sender.
    ///
    /// - Parameters:
    ///   - activity: receives connection activity lines (never a token or a record); `nil` shows none.
    ///   - diagnostics: where drops and failures are reported.
    ///   - metrics: where counters go (see ``LogstashMetrics``); default: the bootstrapped `MetricsSystem`.
    /// - Throws: ``LogstashError`` if the spool folder cannot be used or the TLS settings are invalid.
    public init(
        configuration: Configuration,
        eventLoopGroup: (any EventLoopGroup)? = nil,
        activity: (@Sendable (String) -> Void)? = nil,
        diagnostics: DiagnosticSink = .standardError,
        metrics metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) throws {
        let window = configuration.client.resendWindowBytes
        guard configuration.spool.maxTotalBytes >= window + 2 * configuration.spool.segmentBytes else {
            // Records are forgotten only after `window` more bytes were sent: a smaller spool would delete
            // delivered records at its cap and report them as dropped.
            throw LogstashError(
                code: .invalidConfiguration,
                message: "the spool cap (\(configuration.spool.maxTotalBytes) bytes) must be at least the resend window (\(window) bytes) plus two segments (\(2 * configuration.spool.segmentBytes) bytes); raise the spool capacity"
            )
        }
        self.configuration = configuration
        self.diagnostics = diagnostics
        self.limiter = RecordSizeLimiter(maximumBytes: configuration.spool.maxRecordBytes)
        let spool = try LogstashSpool(configuration: configuration.spool)
        self.spool = spool
        self.metrics = LogstashMetrics(factory: metricsFactory)
        let reports = ReportAppender(spool: spool, limiter: limiter, token: configuration.token,
                                     builder: RecordBuilder(defaultUserInfo: configuration.reportUserInfo))
        self.reports = reports
        do {
            self.client = try LogstashClient(
                configuration: configuration.client,
                spool: spool,
                eventLoopGroup: eventLoopGroup,
                activity: activity,
                warning: { line in diagnostics.report(line) },
                onDeliveryResumed: { count in
                    reports.append(
                        "JustLog dropped \(count) event(s) for Logstash: the spool reached its size cap while the collector was away",
                        userInfo: ["dropped_events": .uint(count)]
                    )
                }
            )
        } catch {
            spool.close()
            throw error
        }
        reports.client = client
        client.start()
        metrics.start(client: client, interval: configuration.client.sendInterval)
    }

    // MARK: - LogDestination

    public func write(_ batch: LogBatch) {
        var appended = 0
        for record in batch.records {
            let bytes = limiter.encode(record, token: configuration.token)
            do {
                try spool.append(bytes)
                appended += 1
                if failedAppends.current > 0 { reportSpoolRecovered() }
            } catch {
                metrics.failedAppend()
                failedAppends.withLock { $0 += 1 }
                diagnostics.reportOnce(key: "logstash.spool", "cannot spool events for Logstash: \(error); they are dropped and counted until the spool works again")
            }
        }
        if appended > 0 {
            metrics.appended(appended)
            client.recordsAppended(appended)
        }
        reportSpoolDrops()
    }

    /// Completes once everything spooled before the call — including what an earlier run left — has been
    /// written to the collector, or with the error that says why not (at most ``Configuration/flushTimeout``).
    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        let once = CompletionOnce(completion)
        let timeout = configuration.flushTimeout
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            once.complete(LogstashError(code: .timedOut, message: "Logstash flush did not finish within \(timeout) s; the events stay spooled"))
        }
        client.flush { error in once.complete(error) }
    }

    /// Sends what it can within the client's shutdown timeout, closes the connection and the spool. What
    /// was not sent stays in the spool for the next run.
    public func shutdown() {
        let done = DispatchSemaphore(value: 0)
        let outcome = LockedValue<LogstashError?>(nil)
        client.shutdown(reporting: { error in
            outcome.withLock { $0 = error }
            done.signal()
        })
        let seconds = Double(configuration.client.shutdownTimeout.components.seconds) + 1
        var failure: LogstashError?
        if done.wait(timeout: .now() + seconds) == .timedOut {
            failure = LogstashError(code: .timedOut, message: "the Logstash client did not shut down within \(seconds) s; unconfirmed events stay spooled")
        } else {
            failure = outcome.withLock { $0 }
        }
        // A shutdown that could not confirm anything it had left to confirm lost nothing: not a failure.
        let queued = spool.counterSnapshot.queuedRecords
        if queued == 0 { failure = nil }
        if let failure {
            diagnostics.report("Logstash: \(failure)\(queued > 0 ? " (\(queued) event(s) stay spooled for the next run)" : "")")
        }
        shutdownError.withLock { $0 = failure }
        metrics.stop()
        spool.close()
    }

    /// After ``shutdown()``: why the connection did not end cleanly, or `nil`.
    public var shutdownFailure: (any Error)? { shutdownError.withLock { $0 } }

    /// The client's and spool's counters: queued, spooled bytes, sent, resent, dropped.
    public func counters() async -> LogstashClient.Counters {
        await client.counters()
    }

    /// The spool works again after failing (a disk that was full): say how many events were lost, on the
    /// diagnostics sink and to the collector, and report the next failure again.
    private func reportSpoolRecovered() {
        let lost = failedAppends.withLock { count -> UInt64 in
            defer { count = 0 }
            return count
        }
        guard lost > 0 else { return }
        diagnostics.reset(key: "logstash.spool")
        diagnostics.report("spooling events for Logstash works again; \(lost) event(s) could not be spooled and were lost")
        reports.append(
            "JustLog lost \(lost) event(s) for Logstash: they could not be written to the spool",
            userInfo: ["lost_events": .uint(lost)]
        )
    }

    private func reportSpoolDrops() {
        let dropped = spool.counterSnapshot.droppedRecords
        let isNew = lastDropCount.withLock { last -> Bool in
            defer { last = max(last, dropped) }
            return dropped > last
        }
        if isNew {
            metrics.dropped(total: dropped)
            diagnostics.reportOnce(
                key: "logstash.spool.cap",
                "the Logstash spool reached its cap (\(configuration.spool.maxTotalBytes) bytes) while the collector is away; the oldest events are dropped and counted (\(dropped) so far), and the count is sent when delivery resumes"
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

/// Appends JustLog's own report events (drops, losses) to the spool and wakes the sender.
final class ReportAppender: @unchecked Sendable {
    let spool: LogstashSpool
    let limiter: RecordSizeLimiter
    let token: String?
    let builder: RecordBuilder
    weak var client: LogstashClient?

    init(spool: LogstashSpool, limiter: RecordSizeLimiter, token: String?, builder: RecordBuilder) {
        self.spool = spool
        self.limiter = limiter
        self.token = token
        self.builder = builder
    }

    func append(_ message: String, userInfo: [String: LogValue]) {
        let record = builder.record(for: .report(message, userInfo: userInfo), sequence: 0)
        if (try? spool.append(limiter.encode(record, token: token))) != nil {
            client?.recordsAppended(1)
        }
    }
}
