import Foundation

/// A clock that stands still until a test moves it with ``advance(by:)``: for retry intervals without waiting.
final class ManualClock: Clock, @unchecked Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let lock = NSLock()
    private var current = Instant(offset: .zero)

    var now: Instant { lock.withLock { current } }
    var minimumResolution: Duration { .zero }

    /// Nothing in these tests sleeps on this clock: a sleeper moves it to `deadline` and returns at once.
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        lock.withLock { current = max(current, deadline) }
    }

    func advance(by duration: Duration) {
        lock.withLock { current = current.advanced(by: duration) }
    }
}
