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
    private let lastDropped = LockedValue<UInt64>(0)
    private let gaugeLock = ConditionLock()

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        spooled = Counter(label: "justlog_logstash_spooled_total", factory: factory)
        spoolFailures = Counter(label: "justlog_logstash_spool_failures_total", factory: factory)
        sent = Counter(label: "justlog_logstash_sent_total", factory: factory)
        resent = Counter(label: "justlog_logstash_resent_total", factory: factory)
        droppedCounter = Counter(label: "justlog_logstash_dropped_total", factory: factory)
        queued = Gauge(label: "justlog_logstash_queued", factory: factory)
        spooledBytes = Gauge(label: "justlog_logstash_spooled_bytes", factory: factory)
    }

    func appended(_ count: Int) { spooled.increment(by: Int64(count)) }
    func failedAppend() { spoolFailures.increment() }

    private func dropped(total: UInt64) {
        let delta = lastDropped.withLock { last -> UInt64 in
            defer { last = max(last, total) }
            return total > last ? total - last : 0
        }
        if delta > 0 { droppedCounter.increment(by: Int64(delta)) }
    }

    /// Records written to the collector since the client last said so, `resent` of them again (the client calls
    /// this on its event loop as it writes: no poller, so the counters never lag behind the wire).
    func delivered(sent: UInt64, resent: UInt64) {
        if sent > 0 { self.sent.increment(by: Int64(clamping: sent)) }
        if resent > 0 { self.resent.increment(by: Int64(clamping: resent)) }
    }

    /// Records the spool's gauges, and any drops it counted since the last call: after each batch the destination
    /// spools (its thread) and each change the client sees (its event loop). The spool is read under the lock the
    /// gauges are recorded under, so that a reading taken earlier is never recorded after a later one. Returns it.
    @discardableResult
    func spoolChanged(_ spool: LogstashSpool) -> SpoolCounters {
        gaugeLock.withLock {
            let counters = spool.counterSnapshot
            queued.record(counters.queuedRecords)
            spooledBytes.record(counters.queuedBytes)
            dropped(total: counters.droppedRecords)
            return counters
        }
    }
}
