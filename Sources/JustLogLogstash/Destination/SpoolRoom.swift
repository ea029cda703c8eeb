import JustLogCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Holds writes to a Logstash spool back while the spool is close to its cap and the collector is taking events,
/// so that a burst faster than the collector slows the pipeline's thread — and, through the journal, the log calls —
/// instead of making the spool drop its oldest events. While the collector takes nothing (no write to it completed
/// for ``patience``: it is away, or stalled and the connection's buffers are full), writes go through, and the spool
/// drops and counts its oldest events: its cap bounds the disk an outage may take.
///
/// The destination writes on the pipeline's thread, and a wait blocks only that thread — or, for a logger without a
/// journal, on the caller's: then the caller waits, at the collector's pace.
final class SpoolRoom: Sendable {
    /// How long no write to the collector may complete before it counts as taking nothing.
    let patience: Duration
    private let spool: LogstashSpool
    private let progress: @Sendable () -> UInt64
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

    /// Returns once `bytes` more fit in the spool without making it drop (at once if they do), or once the collector
    /// has taken nothing for ``patience``. Bytes that would take nearly every segment wait only for one to be left.
    func waitForRoom(_ bytes: Int) {
        // The segment being appended to may be full: `bytes` may start a new one, and spill into more.
        let maxSegments = spool.configuration.maxSegments
        let needed = min(bytes / spool.configuration.segmentBytes + 1, maxSegments - 1)
        while spool.counterSnapshot.segmentCount + needed > maxSegments {
            guard isCollectorTakingEvents() else { return }
            pause()
        }
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
