import Foundation
public import JustLogCore

/// A clock that only moves when a test calls ``advance(by:)``; `sleep` resumes when the time is reached. Give it
/// to a logger as its clock (``logClock``) to pin the timestamps of your events, or to anything that takes a Swift
/// `Clock` (a file destination's retry interval) to test timing without waiting on real time.
///
/// ```swift
/// let clock = ManualClock(start: LogTimestamp(nanosecondsSinceEpoch: 1_700_000_000_000_000_000))
/// let logger = StructuredLogger(configuration: .init(destinations: [.init(capture)], clock: clock.logClock))
/// logger.info("first")
/// clock.advance(by: .seconds(2))
/// logger.info("two seconds later")
/// ```
public final class ManualClock: Clock, @unchecked Sendable {
    /// The wall-clock time that ``Instant`` zero stands for, in ``timestamp``.
    public let start: LogTimestamp

    public init(start: LogTimestamp = LogTimestamp(nanosecondsSinceEpoch: 1_482_582_698_475_000_000)) {
        self.start = start
    }

    /// The current time as a log timestamp: ``start`` plus how far the clock was advanced.
    public var timestamp: LogTimestamp {
        let offset = now.offset.components
        let nanoseconds = offset.seconds * 1_000_000_000 + offset.attoseconds / 1_000_000_000
        return LogTimestamp(nanosecondsSinceEpoch: start.nanosecondsSinceEpoch + nanoseconds)
    }

    /// A logger's clock (`StructuredLogger.Configuration.clock`, `Logger.Configuration.clock`) reading this one.
    public var logClock: @Sendable () -> LogTimestamp {
        { [self] in self.timestamp }
    }

    public struct Instant: InstantProtocol {
        public var offset: Duration
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let lock = NSLock()
    private var current = Instant(offset: .zero)
    private var sleepers: [(deadline: Instant, continuation: CheckedContinuation<Void, Never>)] = []

    public var now: Instant { lock.withLock { current } }
    public var minimumResolution: Duration { .zero }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        await withCheckedContinuation { continuation in
            let resumeNow = lock.withLock {
                if deadline <= current { return true }
                sleepers.append((deadline, continuation))
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Moves time forward and wakes the sleepers whose deadline has come.
    public func advance(by duration: Duration) {
        let due = lock.withLock {
            current = current.advanced(by: duration)
            let now = current
            let due = sleepers.filter { $0.deadline <= now }
            sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
