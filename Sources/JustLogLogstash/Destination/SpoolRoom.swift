import JustLogCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Holds writes to a Logstash spool back while the spool is close to its cap, the collector is taking events and
/// the pipeline may wait (``PipelineHoldingBack``: its journal is less than half full and takes any call's record),
/// so that a burst faster than the collector waits in the journal instead of making the spool drop its oldest
/// events. Otherwise writes go through, and the spool drops and counts its oldest events: while the collector takes
/// nothing (no write to it completed for ``patience``: it is away, or stalled and the connection's buffers are full)
/// its cap bounds the disk an outage may take; and a collector slower than the program for longer than the journal
/// can hold must not hold back the other destinations (the file) and the calls.
final class SpoolRoom: Sendable {
    /// How long no write to the collector may complete before it counts as taking nothing.
    let patience: Duration
    private let spool: LogstashSpool
    private let progress: @Sendable () -> UInt64
    /// Whether the pipeline may wait now; `nil` until a pipeline with a journal attached the destination (a
    /// destination written on the caller's thread, or on its own, does not wait).
    private let mayWait = LockedValue<(@Sendable () -> Bool)?>(nil)
    private let now: @Sendable () -> ContinuousClock.Instant
    private let pause: @Sendable () -> Void
    /// The progress last seen, and when it was first seen if it had grown (`nil`: never seen growing).
    private let seen: LockedValue<(progress: UInt64, grewAt: ContinuousClock.Instant?)>

    /// - Parameters:
    ///   - progress: grows while the collector takes events: the client's ``LogstashClient/completedWrites``.
    ///   - now: the clock the patience is measured by.
    ///   - pause: sleeps between looks at the spool while a write waits (a millisecond).
    init(
        spool: LogstashSpool,
        progress: @escaping @Sendable () -> UInt64,
        patience: Duration = .seconds(2),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        pause: @escaping @Sendable () -> Void = { usleep(1_000) }
    ) {
        self.spool = spool
        self.progress = progress
        self.patience = patience
        self.now = now
        self.pause = pause
        self.seen = LockedValue((progress(), nil))
    }

    /// Returns once `bytes` more fit in the spool without making it drop (at once if they do), once the collector
    /// has taken nothing for ``patience``, or once the pipeline may not wait (at once if no pipeline said it may).
    /// Bytes that would take nearly every segment wait only for one to be left.
    func waitForRoom(_ bytes: Int) {
        guard let mayWait = mayWait.current else { return }
        // The segment being appended to may be full: `bytes` may start a new one, and spill into more.
        let maxSegments = spool.configuration.maxSegments
        let needed = min(bytes / spool.configuration.segmentBytes + 1, maxSegments - 1)
        while spool.counterSnapshot.segmentCount + needed > maxSegments {
            guard mayWait(), isCollectorTakingEvents() else { return }
            pause()
        }
    }

    /// From now on, writes may wait while `mayWait` says so (see ``PipelineHoldingBack``).
    func allowWaiting(while mayWait: @escaping @Sendable () -> Bool) {
        self.mayWait.withLock { $0 = mayWait }
    }

    /// Whether a write to the collector completed within ``patience``: it is taking events.
    private func isCollectorTakingEvents() -> Bool {
        let progress = progress()
        let instant = now()
        return seen.withLock { seen in
            if seen.progress != progress {
                seen = (progress, instant)
            }
            guard let grewAt = seen.grewAt else { return false }
            return instant - grewAt < patience
        }
    }
}
