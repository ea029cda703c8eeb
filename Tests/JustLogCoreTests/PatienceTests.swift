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
        while let wait = patience.nextWait(atMost: 0.1) {
            #expect(wait > 0 && wait <= 0.1)
            // 40 ms late each time: scheduling delay, counted.
            clock.advance(seconds: wait + 0.04)
            waited += wait + 0.04
            patience.woke()
        }
        #expect(waited < 1.0 + 0.04 * 8, "gave up after \(waited) s")
        #expect(waited >= 1.0)
        #expect(patience.notRunning == 0)
        #expect(patience.notRunningNote == "")
    }

    /// A wait that wakes 3 s late, as a program stopped for 3 s does, leaves the patience where the stop found it.
    @Test func aWaitThatWokeLateDoesNotCountTheTimeItDidNotRun() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        clock.advance(seconds: 0.5)
        let wait = patience.nextWait(atMost: 0.1)
        #expect(wait == 0.1)
        clock.advance(seconds: 0.1 + 3)
        patience.woke()
        #expect(patience.notRunning == 3_000_000_000)
        #expect(patience.notRunningNote == ", not counting 3.0 s when the program did not run")
        // 0.4 s of patience left, as before the stop.
        let left = patience.nextWait()
        #expect(left.map { abs($0 - 0.4) < 1e-6 } == true, "\(String(describing: left))")
        clock.advance(seconds: 0.4)
        patience.woke()
        #expect(patience.nextWait() == nil)
    }

    /// Even when every wait wakes late, the patience runs out after `seconds` of the waits' own time: a program that
    /// runs only now and then still gives up on a stalled destination.
    @Test func aStarvedWaitStillEnds() {
        let clock = ManualClock()
        var patience = Patience(seconds: 1, clock: clock.read)
        var rounds = 0
        while let wait = patience.nextWait(atMost: 0.1), rounds < 1_000 {
            clock.advance(seconds: wait + 2)
            patience.woke()
            rounds += 1
        }
        #expect(rounds >= 10 && rounds <= 11, "\(rounds) waits")
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

    /// A huge or infinite patience does not trap.
    @Test func anInfinitePatienceWaitsAtMostAYearAtATime() {
        var patience = Patience(seconds: .infinity)
        let wait = patience.nextWait()
        #expect(wait.map { $0 > 364 * 86_400 && $0 <= 365 * 86_400 } == true)
        var nan = Patience(seconds: .nan)
        #expect(nan.nextWait() == nil)
    }
}
