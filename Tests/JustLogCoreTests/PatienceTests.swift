import JustLogCore
import JustLogTestSupport
import Testing

/// ``Patience`` on a clock the test moves: what a wait counts, and that it ends.
@Suite struct PatienceTests {
    /// A clock that reads what the test set.
    final class ManualClock: Sendable {
        private let nanoseconds = LockedValue<UInt64>(1_000_000_000)
        func advance(seconds: Double) { nanoseconds.withLock { $0 += UInt64(seconds * 1e9) } }
        var read: Patience.Clock { { self.nanoseconds.current } }
    }

    /// Waits that wake when asked (or a little later, as on a loaded machine) use up the patience in `seconds`.
    @Test func wakesOnTimeUseUpThePatience() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        var waited = 0.0
        while let wait = patience.nextWait() {
            #expect(wait > 0 && wait <= Patience.poll)
            // 40 ms late each time: scheduling delay, counted.
            clock.advance(seconds: wait + 0.04)
            waited += wait + 0.04
            patience.woke()
        }
        #expect(waited >= 1.0 && waited < 1.0 + 0.04 * 8, "gave up after \(waited) s")
        #expect(patience.notRunning == 0)
        #expect(patience.notRunningNote == "")
    }

    /// A program stopped for 3 s in the middle of a wait: the patience counts at most the wait's `poll`, and what
    /// was left before the stop is left after it.
    @Test func aStopWithinAWaitCountsAtMostOnePoll() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        clock.advance(seconds: 0.5)
        #expect(patience.nextWait() == Patience.poll)
        // Stopped 0.05 s into the wait, for 3 s; it returns as the program continues.
        clock.advance(seconds: 3.05)
        patience.woke()
        #expect(patience.notRunning == 2_950_000_000)
        #expect(patience.notRunningNote == ", not counting 3.0 s when the program did not run")
        // 0.5 s were left at the wait; it counted its 0.1 s, no more.
        let left = patience.remainingForTest(clock)
        #expect(abs(left - 0.4) < 1e-6, "\(left) s left")
    }

    /// A program stopped for 3 s between two waits (the owner reading the destinations' progress, or taking a lock,
    /// when ThreadSanitizer paused every thread) does not count that stop either: it had only measured its waits,
    /// and the exit flush's 3 s patience ran out at once in CI while the destinations were still writing.
    @Test func aStopBetweenWaitsIsNotCountedEither() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        clock.advance(seconds: 0.5)
        #expect(patience.nextWait() == Patience.poll)
        clock.advance(seconds: Patience.poll)
        patience.woke()
        #expect(patience.notRunning == 0)
        // Stopped for 3 s after the wait, before the next.
        clock.advance(seconds: 3)
        #expect(patience.nextWait() == Patience.poll)
        #expect(patience.notRunning == 3_000_000_000)
        // 0.5 s were left at the first wait; it counted its 0.1 s, and nothing of the stop.
        let left = patience.remainingForTest(clock)
        #expect(abs(left - 0.4) < 1e-6, "\(left) s left")
        // The owner's own quick work between waits is counted, as a wait's small lateness is.
        var quick = Patience(seconds: 1, clock: clock.read)
        var waited = 0.0
        while let wait = quick.nextWait() {
            clock.advance(seconds: wait)
            quick.woke()
            clock.advance(seconds: 0.01)
            waited += wait + 0.01
        }
        #expect(quick.notRunning == 0)
        #expect(waited >= 1.0 && waited < 1.1, "gave up after \(waited) s")
    }

    /// Stalls between waits longer than the patience (the owner blocked on a lock another thread holds for long, as
    /// the exit flush's read of the progress may be) are capped like short late wakes: the wait still ends.
    @Test func longStallsBetweenWaitsStillEnd() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        var rounds = 0
        var waited = 0.0
        while let wait = patience.nextWait(), rounds < 10_000 {
            clock.advance(seconds: wait)
            patience.woke()
            // Blocked 5 s after each wait.
            clock.advance(seconds: 5)
            waited += wait + 5
            rounds += 1
        }
        #expect(rounds < 10_000, "the wait never ended")
        #expect(patience.notRunning == 9_000_000_000)
        #expect(waited < 1 + 9 + 5 + 5, "gave up after \(waited) s, \(rounds) waits")
    }

    /// Even when every wait wakes late, the patience runs out after `seconds` of the waits' own time: a program that
    /// runs only now and then still gives up on a stalled destination — and within ~10 times its patience however
    /// late each wake (uncapped, a wake 0.95 s late on each 0.1 s wait would stretch it tenfold, and more for more).
    @Test func aStarvedWaitStillEnds() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        var rounds = 0
        var waited = 0.0
        while let wait = patience.nextWait(), rounds < 10_000 {
            // 0.95 s late each time: held back, not stopped for longer than the patience.
            clock.advance(seconds: wait + 0.95)
            waited += wait + 0.95
            patience.woke()
            rounds += 1
        }
        // 9 s of late wakes not counted (`starvedLimit`), the rest counted.
        #expect(waited > 9 && waited < 1 + 9 + 1.05, "gave up after \(waited) s, \(rounds) waits")
        #expect(patience.notRunning == 9_000_000_000)
    }

    /// A stop longer than the patience is never capped, however many there were.
    @Test func stopsLongerThanThePatienceAreNeverCounted() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        // Five minutes in all, far past `starvedLimit`'s 9 s.
        for _ in 0..<5 {
            #expect(patience.nextWait() != nil)
            clock.advance(seconds: 60)
            patience.woke()
        }
        #expect(patience.nextWait() != nil)
        #expect(patience.notRunningNote == ", not counting 299.5 s when the program did not run")
    }

    /// Progress gives the whole patience again; without it, the patience runs out.
    @Test func progressRestartsThePatience() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        clock.advance(seconds: 0.9)
        patience.restart()
        clock.advance(seconds: 0.9)
        #expect(patience.nextWait() != nil)
        clock.advance(seconds: 0.1)
        #expect(patience.nextWait() == nil)
    }

    /// Without `woke()` (a fixed bound), a late wake is counted like any other time.
    @Test func aFixedBoundCountsEverything() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        _ = patience.nextWait()
        clock.advance(seconds: 5)
        #expect(patience.nextWait() == nil)
    }

    /// A huge or infinite patience does not trap; a NaN one is none.
    @Test func anInfinitePatienceDoesNotTrap() {
        var patience = Patience(seconds: .infinity)
        #expect(patience.nextWait() == Patience.poll)
        var nan = Patience(seconds: .nan)
        #expect(nan.nextWait() == nil)
    }
}

extension Patience {
    /// Seconds left on `clock` before the patience runs out, found by waiting on time (no stop) until it does.
    mutating func remainingForTest(_ clock: PatienceTests.ManualClock) -> Double {
        var left = 0.0
        while let wait = nextWait() {
            clock.advance(seconds: wait)
            left += wait
            woke()
        }
        return left
    }
}
