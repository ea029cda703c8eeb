import CoreMetrics
import JustLogCore

/// Exports the Logstash destination's counters through swift-metrics — through the factory it is given,
/// by default the one the program bootstrapped (`MetricsSystem.factory`; without a bootstrap, no-ops):
///
/// | metric | kind | meaning |
/// |---|---|---|
/// | `justlog_logstash_spooled_total` | counter | events appended to the spool |
/// | `justlog_logstash_spool_failures_total` | counter | events that could not be spooled |
/// | `justlog_logstash_sent_total` | counter | events written to the collector (resends included) |
/// | `justlog_logstash_resent_total` | counter | events written again after a connection error |
/// | `justlog_logstash_dropped_total` | counter | events dropped at the spool's size cap |
/// | `justlog_logstash_queued` | gauge | events in the spool not yet proven delivered |
/// | `justlog_logstash_spooled_bytes` | gauge | their size |
final class LogstashMetrics: Sendable {
    private let spooled: Counter
    private let spoolFailures: Counter
    private let sent: Counter
    private let resent: Counter
    private let droppedCounter: Counter
    private let queued: Gauge
    private let spooledBytes: Gauge
    private let last = LockedValue(Last())
    private let poller = LockedValue<Task<Void, Never>?>(nil)

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        spooled = Counter(label: "justlog_logstash_spooled_total", factory: factory)
        spoolFailures = Counter(label: "justlog_logstash_spool_failures_total", factory: factory)
        sent = Counter(label: "justlog_logstash_sent_total", factory: factory)
        resent = Counter(label: "justlog_logstash_resent_total", factory: factory)
        droppedCounter = Counter(label: "justlog_logstash_dropped_total", factory: factory)
        queued = Gauge(label: "justlog_logstash_queued", factory: factory)
        spooledBytes = Gauge(label: "justlog_logstash_spooled_bytes", factory: factory)
    }

    private struct Last {
        var sent: UInt64 = 0
        var resent: UInt64 = 0
        var dropped: UInt64 = 0
    }

    func appended(_ count: Int) { spooled.increment(by: Int64(count)) }
    func failedAppend() { spoolFailures.increment() }

    func dropped(total: UInt64) {
        let delta = last.withLock { last -> UInt64 in
            defer { last.dropped = max(last.dropped, total) }
            return total > last.dropped ? total - last.dropped : 0
        }
        if delta > 0 { droppedCounter.increment(by: Int64(delta)) }
    }

    /// Polls the client's counters every `interval` until ``stop()``.
    func start(client: LogstashClient, interval: Duration) {
        let task = Task { [weak client] in
            while !Task.isCancelled {
                try? await Task.sleep(for: max(interval, .milliseconds(100)))
                guard let client else { return }
                self.update(await client.counters())
            }
        }
        poller.withLock { $0 = task }
    }

    func stop() {
        poller.withLock { task in
            task?.cancel()
            task = nil
        }
    }

    private func update(_ counters: LogstashClient.Counters) {
        queued.record(counters.queued)
        spooledBytes.record(counters.spooledBytes)
        let (sentDelta, resentDelta) = last.withLock { last -> (UInt64, UInt64) in
            defer {
                last.sent = max(last.sent, counters.sent)
                last.resent = max(last.resent, counters.resent)
            }
            return (
                counters.sent > last.sent ? counters.sent - last.sent : 0,
                counters.resent > last.resent ? counters.resent - last.resent : 0
            )
        }
        if sentDelta > 0 { sent.increment(by: Int64(sentDelta)) }
        if resentDelta > 0 { resent.increment(by: Int64(resentDelta)) }
        dropped(total: counters.dropped)
    }
}
