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
/// stopped (SIGSTOP, a debugger, a frozen container) or held back (a throttled or starved machine). The
/// destinations' threads were held back alike, so that time is not held against them: the deadline moves on by it.
/// Each wait sleeps at most ``poll``, so that at most that much of a stop is counted. A wait still ends once the
/// destinations made no progress for `seconds` of the program's running time: an exit flush through a stalled
/// destination gives up as before; a program stopped for longer than its patience during one loses nothing.
///
/// The owner's own work between two waits (reading the destinations' progress, taking a lock) is held to the same
/// measure: a stall there (a stop, a sanitizer's pause of every thread) is not counted either, within
/// ``starvedLimit`` however long — a lock held for long by someone else must not make the wait endless. Before,
/// only the waits were measured: under ThreadSanitizer in CI, a pause while the exit flush read the progress used up
/// its whole 3 s patience at once, and it gave up on destinations that were still writing.
///
/// Short late wakes add up to at most ``starvedLimit`` times `seconds`: a program held back on every wake (a
/// container throttled to a sliver of a core) still gives up on a stalled destination within about ten times its
/// patience. A single late wake longer than the patience itself (a stop) is never capped.
///
/// The owner waits in a loop: ``nextWait()`` says how long (`nil`: the patience ran out), ``woke()`` follows each
/// wait, ``restart()`` each sign of progress. Without ``woke()`` the patience is a fixed bound.
package struct Patience {
    /// Nanoseconds on a monotonic clock: one that does not jump when the wall clock is set, nor run while the
    /// machine is suspended.
    package typealias Clock = @Sendable () -> UInt64

    /// `CLOCK_MONOTONIC` (on Linux, the clock ``ConditionLock``'s timed waits measure); on Apple platforms
    /// `CLOCK_UPTIME_RAW`, which stops while the machine sleeps as Linux's does.
    package static let monotonic: Clock = {
        var now = timespec()
        #if canImport(Darwin)
        clock_gettime(CLOCK_UPTIME_RAW, &now)
        #else
        clock_gettime(CLOCK_MONOTONIC, &now)
        #endif
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// How much later than asked a wait may wake and still count as running: a loaded machine's scheduling delay.
    package static let lateness: UInt64 = 50_000_000

    /// The longest a wait sleeps, in seconds: at most this much of a stop that falls within it is counted.
    package static let poll = 0.1

    /// Short late wakes (each shorter than the patience) are not counted up to this many times the patience.
    package static let starvedLimit: UInt64 = 9

    /// How long the destinations may go without progress, in seconds of the program's running time.
    package let seconds: Double
    private let clock: Clock
    private let patience: UInt64
    private var deadline: UInt64
    /// When the wait that ``nextWait()`` allowed should end at the latest.
    private var wakeDue: UInt64?
    /// When ``woke()`` last measured a wait: the owner's work since, up to the next ``nextWait()``, is measured too.
    private var wokeAt: UInt64?
    /// Nanoseconds of short late wakes not counted (see ``starvedLimit``).
    private var starved: UInt64 = 0
    /// Nanoseconds the program did not run while it waited, and that were not counted.
    package private(set) var notRunning: UInt64 = 0

    package init(seconds: Double, clock: @escaping Clock = Patience.monotonic) {
        self.seconds = seconds
        self.clock = clock
        patience = Self.nanoseconds(seconds)
        deadline = clock() &+ patience
    }

    /// The destinations made progress: the whole patience again.
    package mutating func restart() {
        deadline = clock() &+ patience
        wakeDue = nil
        wokeAt = nil
    }

    /// How long the next wait may sleep, in seconds (at most ``poll``); `nil` once the patience ran out.
    package mutating func nextWait() -> Double? {
        let now = clock()
        // The owner's work since the last wait took longer than a loaded machine's delay: it did not run.
        if let since = wokeAt {
            wokeAt = nil
            if now > since { notCounting(now - since, alwaysCapped: true) }
        }
        guard now < deadline else {
            wakeDue = nil
            return nil
        }
        let wait = min(Double(deadline - now) / 1e9, Self.poll)
        wakeDue = now &+ Self.nanoseconds(wait)
        return wait
    }

    /// The wait ``nextWait()`` allowed has ended, woken or timed out. One that ended more than ``lateness`` after it
    /// was due did not run for that long: the deadline moves on by it (within ``starvedLimit``).
    package mutating func woke() {
        guard let due = wakeDue else { return }
        wakeDue = nil
        let now = clock()
        wokeAt = now
        if now > due { notCounting(now - due) }
    }

    /// `late` nanoseconds passed where the program should have run at once: beyond ``lateness``, the program did not
    /// run, and the deadline moves on by them — within ``starvedLimit`` when shorter than the patience, or
    /// `alwaysCapped` (a stall outside a wait may be a lock held by a stalled thread, not a stop).
    private mutating func notCounting(_ late: UInt64, alwaysCapped: Bool = false) {
        guard late > Self.lateness else { return }
        var late = late
        if late < patience || alwaysCapped {
            late = min(late, Self.starvedLimit &* patience &- starved)
            starved &+= late
        }
        deadline &+= late
        notRunning &+= late
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
