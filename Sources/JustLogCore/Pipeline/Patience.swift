#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Android)
import Android
#endif

/// How long a wait goes on while the destinations make no progress, counting only the time the program ran.
///
/// A wait that wakes later than it asked to, by more than ``lateness``, did not run meanwhile: the process was
/// stopped (SIGSTOP, a debugger, a frozen container) or the machine starved it. The destinations' threads were held
/// back alike, so that time is not held against them: the deadline moves on by it. A wait still ends once the
/// destinations made no progress for `seconds` of the program's running time — an exit flush through a stalled
/// destination gives up as before; a program stopped for longer than its patience during one loses nothing.
///
/// The owner waits in a loop: ``nextWait(atMost:)`` says how long (`nil`: the patience ran out), ``woke()`` follows
/// each wait, ``restart()`` each sign of progress.
package struct Patience {
    /// Nanoseconds on a monotonic clock: one that neither jumps when the wall clock is set nor runs while the machine
    /// sleeps.
    package typealias Clock = @Sendable () -> UInt64

    /// `CLOCK_MONOTONIC`, the clock ``ConditionLock``'s timed waits measure.
    package static let monotonic: Clock = {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// How much later than asked a wait may wake and still count as running: a loaded machine's scheduling delay.
    package static let lateness: UInt64 = 50_000_000

    /// How long the destinations may go without progress, in seconds of the program's running time.
    package let seconds: Double
    private let clock: Clock
    private var deadline: UInt64
    /// When the wait that ``nextWait(atMost:)`` allowed should end at the latest.
    private var wakeDue: UInt64?
    /// Nanoseconds the program did not run while it waited, and that were not counted.
    package private(set) var notRunning: UInt64 = 0

    package init(seconds: Double, clock: @escaping Clock = Patience.monotonic) {
        self.seconds = seconds
        self.clock = clock
        deadline = clock() &+ Self.nanoseconds(seconds)
    }

    /// The destinations made progress: the whole patience again.
    package mutating func restart() {
        deadline = clock() &+ Self.nanoseconds(seconds)
    }

    /// How long the next wait may sleep, in seconds (at most `limit`); `nil` once the patience ran out.
    package mutating func nextWait(atMost limit: Double = .infinity) -> Double? {
        let now = clock()
        guard now < deadline else { return nil }
        let wait = min(Double(deadline - now) / 1e9, limit)
        wakeDue = now &+ Self.nanoseconds(wait)
        return wait
    }

    /// The wait ``nextWait(atMost:)`` allowed has ended, woken or timed out. One that ended more than ``lateness``
    /// after it was due did not run for that long: the deadline moves on by it.
    package mutating func woke() {
        guard let due = wakeDue else { return }
        wakeDue = nil
        let now = clock()
        guard now > due, now - due > Self.lateness else { return }
        deadline &+= now - due
        notRunning &+= now - due
    }

    /// Words for a message: ", not counting N s when the program did not run", or nothing.
    package var notRunningNote: String {
        guard notRunning > 0 else { return "" }
        let tenths = (notRunning + 50_000_000) / 100_000_000
        return ", not counting \(tenths / 10).\(tenths % 10) s when the program did not run"
    }

    /// At most a year: an infinite or huge patience must not trap converting to an integer (callers loop).
    private static func nanoseconds(_ seconds: Double) -> UInt64 {
        let bounded = seconds.isNaN ? 0 : min(max(0, seconds), 365 * 86_400)
        return UInt64(bounded * 1e9)
    }
}
