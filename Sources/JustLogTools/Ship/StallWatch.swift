/// Tells when delivery has stopped moving: no record written to the connection and none leaving the spool for
/// `timeout`. A collector that accepts a connection and then stops reading never makes a write fail, so this is
/// the only way `ship` can tell it from a slow one.
struct StallWatch {
    let timeout: Duration
    private var lastSent: UInt64?
    private var lastQueued: Int?
    private var since = ContinuousClock.now

    init(timeout: Duration) {
        self.timeout = timeout
    }

    /// Records the counters; `true` once neither has moved for `timeout`.
    mutating func isStalled(sent: UInt64, queued: Int, now: ContinuousClock.Instant = .now) -> Bool {
        if sent != lastSent || queued != lastQueued {
            lastSent = sent
            lastQueued = queued
            since = now
            return false
        }
        return since.duration(to: now) >= timeout
    }
}
