import Foundation
import JustLogTestSupport
import Testing

@testable import JustLogCore

/// `ConditionLock` is a futex lock on Linux (see `CJustLogAtomics.h`): every log call takes the queue's. These
/// tests run its contended paths on real threads (a sleeping `lock`, a woken `wait`), not only the uncontended one
/// every other test takes.
@Suite(.timeLimit(.minutes(2))) struct ConditionLockTests {
    /// Runs `body(index)` on `count` threads at once; returns when every one has returned.
    private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
        let finished = LockedValue(0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for index in 0..<count {
                Thread {
                    body(index)
                    let finishedNow = finished.withLock { count in
                        count += 1
                        return count
                    }
                    if finishedNow == count { done.resume() }
                }.start()
            }
        }
    }

    @Test func theLockExcludesEveryOtherThread() async {
        final class Counter: @unchecked Sendable {
            let lock = ConditionLock()
            var value = 0  // under `lock`
        }
        let counter = Counter()
        let threads = 4
        let rounds = 20_000
        await onThreads(threads) { _ in
            for round in 0..<rounds {
                counter.lock.withLock {
                    // Read, let the others run now and then, write: without exclusion, increments are lost.
                    let value = counter.value
                    if round % 512 == 0 { sched_yield() }
                    counter.value = value + 1
                }
            }
        }
        #expect(counter.lock.withLock { counter.value } == threads * rounds)
    }

    @Test func aBroadcastWakesEveryWaiter() async {
        final class Gate: @unchecked Sendable {
            let lock = ConditionLock()
            var open = false  // under `lock`
            var openedAt: UInt64 = 0  // under `lock`: when it opened, monotonic nanoseconds
            var waiting = 0  // under `lock`
            var lostWakeUps = 0  // under `lock`
        }
        let gate = Gate()
        let waiters = 3
        async let woken: Void = onThreads(waiters) { _ in
            gate.lock.lock()
            gate.waiting += 1
            while !gate.open {
                // A wait that ends by time more than a second after the gate opened (and was broadcast) slept
                // through the broadcast: a lost wake-up. One that ends by time before the gate opens only met a
                // slow opener, and waits again.
                if !gate.lock.wait(seconds: 30), gate.open,
                    DispatchTime.now().uptimeNanoseconds - gate.openedAt > 1_000_000_000
                {
                    gate.lostWakeUps += 1
                }
            }
            gate.lock.unlock()
        }
        // The opener on a plain thread of its own: other tests' waits on the shared pool once held it back for over
        // 30 s (a CI run in part 17), and the waiters' timeouts then counted a slow opener as lost wake-ups. Not a
        // task on a thread of its own: each `Task.sleep` resumes through the shared pool (part 34: a CI run starved
        // it past the test's 120 s limit). The test needs the pool only to start and to resume.
        await onThreads(1) { _ in
            // Every waiter is in `wait` (it released the lock there) before the gate opens.
            for _ in 0..<10_000 where gate.lock.withLock({ gate.waiting }) < waiters {
                usleep(1_000)
            }
            usleep(20_000)
            gate.lock.withLock {
                gate.open = true
                gate.openedAt = DispatchTime.now().uptimeNanoseconds
            }
            gate.lock.broadcast()
        }
        await woken
        #expect(gate.lock.withLock { gate.lostWakeUps } == 0)
    }

    /// Two threads hand a turn back and forth 20,000 times, each waking the other just after it releases the lock
    /// (as the pipeline's callers wake its thread): a wake-up lost between a waiter's release of the lock and its
    /// sleep would leave it asleep until its timeout, which counts. (It counted a timeout before the turn came —
    /// a partner the machine held back for 0.5 s, under ThreadSanitizer — and not one after it, the lost wake-up.)
    @Test func aWakeUpBetweenTheWaitersReleaseAndItsSleepIsNotLost() async {
        final class Turn: @unchecked Sendable {
            let lock = ConditionLock()
            var holder = 0  // under `lock`
            var handedAt: UInt64 = 0  // under `lock`: when the turn was last handed over, monotonic nanoseconds
            var lostWakeUps = 0  // under `lock`
        }
        let turn = Turn()
        let handoffs = 20_000
        await onThreads(2) { player in
            for _ in 0..<(handoffs / 2) {
                turn.lock.lock()
                // A 2 s wait that ends by time though the turn was handed over (and broadcast) within its first second
                // slept through the broadcast: a lost wake-up. One that ends by time before its turn only met a slow
                // partner, and waits again. The first lost wake-up ends the game (both players see it).
                while turn.holder != player, turn.lostWakeUps == 0 {
                    let asleepAt = DispatchTime.now().uptimeNanoseconds
                    if !turn.lock.wait(seconds: 2), turn.holder == player, turn.handedAt < asleepAt + 1_000_000_000 {
                        turn.lostWakeUps += 1
                    }
                }
                let over = turn.lostWakeUps > 0
                turn.holder = 1 - player
                turn.handedAt = DispatchTime.now().uptimeNanoseconds
                turn.lock.unlock()
                turn.lock.broadcast()
                if over { break }
            }
        }
        #expect(turn.lock.withLock { turn.lostWakeUps } == 0)
    }

    @Test func aWaitNobodyEndsTimesOutHoldingTheLock() {
        let lock = ConditionLock()
        lock.lock()
        #expect(lock.wait(seconds: 0.02) == false)
        #expect(lock.wait(seconds: 0) == false)
        #expect(lock.wait(seconds: -1) == false)
        #expect(lock.wait(seconds: .nan) == false)
        // Held after the waits: another thread can't take it until it is released.
        let taken = LockedValue(false)
        let thread = Thread { lock.withLock { taken.withLock { $0 = true } } }
        thread.start()
        usleep(50_000)
        #expect(!taken.current)
        lock.unlock()
        for _ in 0..<5_000 where !taken.current { usleep(1_000) }
        #expect(taken.current)
    }
}
