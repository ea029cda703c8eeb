import JustLogTestSupport
import Testing

@testable import JustLogLogstash

private typealias Machine = ConnectionStateMachine<ManualClock>

private func configuration(_ change: (inout Machine.Configuration) -> Void = { _ in }) -> Machine.Configuration {
    var configuration = Machine.Configuration()
    configuration.sendInterval = .seconds(5)
    configuration.maxBatchRecords = 3
    configuration.maxBatchBytes = 1 << 20
    configuration.resendWindowBytes = 100
    configuration.endpoint = "127.0.0.1:5000"
    change(&configuration)
    return configuration
}

private func position(_ offset: Int) -> SpoolPosition { SpoolPosition(segment: 1, offset: offset) }

/// A batch of `records` records of 10 bytes each starting at `start`.
private func batch(from start: Int, records: Int) -> SpoolBatch {
    SpoolBatch(
        bytes: [UInt8](repeating: 0x61, count: records * 10),
        recordCount: records,
        start: position(start),
        end: position(start + records * 10)
    )
}

/// A shutting-down machine that asked to read from offset 16: two records are read, written, and the empty read
/// after them closes the connection gracefully; its close acknowledges them and completes the shutdown.
private func expectSendsTwoRecordsFrom16ClosesAndCompletes(_ machine: inout Machine) {
    _ = machine.batchRead(batch(from: 16, records: 2))
    #expect(reads(machine.writeCompleted()) == [position(36)])
    #expect(machine.batchRead(batch(from: 36, records: 0)).contains(.close(graceful: true)))
    let closed = machine.connectionClosed(error: nil)
    #expect(acks(closed) == [position(36)])
    #expect(closed.contains(.shutdownComplete))
}

private func reads(_ actions: [Machine.Action]) -> [SpoolPosition] {
    actions.compactMap { if case .readBatch(let from, _, _) = $0 { from } else { nil } }
}

private func timers(_ actions: [Machine.Action]) -> [ManualClock.Instant] {
    actions.compactMap { if case .scheduleTimer(let at) = $0 { at } else { nil } }
}

private func flushes(_ actions: [Machine.Action]) -> [(Int, LogstashError?)] {
    actions.compactMap { if case .completeFlush(let id, let error) = $0 { (id, error) } else { nil } }
}

private func acks(_ actions: [Machine.Action]) -> [SpoolPosition] {
    actions.compactMap {
        switch $0 {
        case .acknowledge(let upTo): upTo
        case .acknowledgeExtent(let extent): extent.end
        default: nil
        }
    }
}

private func extents(_ actions: [Machine.Action]) -> [SpoolExtent] {
    actions.compactMap { if case .acknowledgeExtent(let extent) = $0 { extent } else { nil } }
}

private let refused = LogstashError(code: .connectFailed, message: "connection refused")

@Suite struct ConnectionStateMachineTests {
    @Test func backoffDoublesFromTheMinimumAndCapsAtTheMaximum() {
        let clock = ManualClock()
        let machine = Machine(configuration: configuration { $0.backoffJitter = 0 }, clock: clock, random: { 0 })
        let delays = (0..<10).map { machine.backoffDelay(failures: $0) }
        #expect(
            delays.prefix(7) == [
                .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30),
            ]
        )
        #expect(delays.suffix(3).allSatisfy { $0 == .seconds(30) })
    }

    /// A minimum of zero or less, or a jitter of 1, gave a delay of nothing — a collector refusing at once was tried
    /// again in a busy loop — and a minimum of `Int64.min` seconds, or one near `Duration`'s range, overflowed its
    /// doubling (a trap; helper-51). Every delay is from ``ReconnectBackoff/floor`` (10 ms) to a year now, whatever
    /// the settings.
    @Test(arguments: [
        (Duration.zero, Duration.seconds(30), 0.2, 0.0),
        (Duration.milliseconds(-500), Duration.seconds(30), 0.2, 0.5),
        (Duration(secondsComponent: .min, attosecondsComponent: 0), Duration.zero, 0.0, 0.0),
        (Duration.milliseconds(500), Duration.seconds(30), 1.0, 0.999_999),
        (Duration.milliseconds(500), Duration(secondsComponent: .min, attosecondsComponent: 0), 0.2, 0.5),
        (Duration.seconds(Int64.max) * 18, Duration.seconds(30), 0.2, 0.0),
        (Duration.seconds(Int64.max) * 18, Duration.seconds(Int64.max) * 18, 0.0, 0.0),
        (Duration.milliseconds(500), Duration.seconds(Int64.max) * 18, 0.0, 0.0),
    ])
    func noReconnectDelayIsShorterThanTenMilliseconds(
        minimum: Duration,
        maximum: Duration,
        jitter: Double,
        random: Double
    ) {
        let machine = Machine(
            configuration: configuration {
                $0.backoffMinimum = minimum
                $0.backoffMaximum = maximum
                $0.backoffJitter = jitter
            },
            clock: ManualClock(),
            random: { random }
        )
        for failures in [0, 1, 5, 62, 100] {
            let delay = machine.backoffDelay(failures: failures)
            #expect(
                delay >= .milliseconds(10) && delay <= .seconds(365 * 86_400),
                "after \(failures) failures: \(delay)"
            )
        }
    }

    @Test(arguments: [0.0, 0.5, 0.999])
    func jitterShortensTheDelayByAtMostTheJitterFraction(random: Double) {
        let machine = Machine(
            configuration: configuration { $0.backoffJitter = 0.2 },
            clock: ManualClock(),
            random: { random }
        )
        let delay = machine.backoffDelay(failures: 3)
        #expect(delay <= .seconds(4))
        #expect(delay >= .seconds(4) * 0.8)
    }

    @Test func reconnectsAfterTheBackoffWithGrowingDelays() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.backoffJitter = 0 }, clock: clock, random: { 0 })
        #expect(machine.start(at: position(16)).contains(.connect))
        for delay: Duration in [.milliseconds(500), .seconds(1), .seconds(2)] {
            let actions = machine.connectFailed(refused)
            #expect(timers(actions) == [clock.now.advanced(by: delay)])
            #expect(
                actions.contains {
                    if case .reportActivity(let line) = $0 { line.contains("reconnecting in") } else { false }
                }
            )
            clock.advance(by: delay - .milliseconds(1))
            #expect(!machine.timerFired().contains(.connect))
            clock.advance(by: .milliseconds(1))
            #expect(machine.timerFired().contains(.connect))
        }
    }

    @Test func dispatchesTheBacklogOnConnectThenEverySendInterval() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration(), clock: clock)
        _ = machine.start(at: position(16))
        let onConnect = machine.connected()
        #expect(reads(onConnect) == [position(16)])
        #expect(timers(onConnect) == [clock.now.advanced(by: .seconds(5))])
        // A partial batch: nothing more until the interval.
        #expect(machine.batchRead(batch(from: 16, records: 2)) == [.write(batch(from: 16, records: 2))])
        #expect(reads(machine.writeCompleted()).isEmpty)
        clock.advance(by: .seconds(4))
        #expect(reads(machine.timerFired()).isEmpty)
        clock.advance(by: .seconds(1))
        #expect(reads(machine.timerFired()) == [position(36)])
    }

    @Test func dispatchesAtOnceWhenABatchIsFull() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration(), clock: clock)
        _ = machine.start(at: position(16))
        _ = machine.connected()
        _ = machine.batchRead(batch(from: 16, records: 0))
        #expect(reads(machine.recordsAvailable()) == [position(16)])
        _ = machine.batchRead(batch(from: 16, records: 3))
        // A full batch was written: read the next one without waiting for the timer.
        #expect(reads(machine.writeCompleted()) == [position(46)])
    }

    @Test func flushCompletesOnlyAfterEverythingQueuedBeforeItIsWritten() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration(), clock: clock)
        _ = machine.start(at: position(16))
        _ = machine.connected()
        _ = machine.batchRead(batch(from: 16, records: 0))
        // Five records queued (two batches' worth), then a flush.
        let onFlush = machine.flushRequested(id: 7, upTo: position(66))
        #expect(reads(onFlush) == [position(16)])
        _ = machine.batchRead(batch(from: 16, records: 3))
        let first = machine.writeCompleted()
        #expect(flushes(first).isEmpty)
        #expect(reads(first) == [position(46)])
        _ = machine.batchRead(batch(from: 46, records: 2))
        let second = machine.writeCompleted()
        #expect(flushes(second).map(\.0) == [7])
        #expect(flushes(second).allSatisfy { $0.1 == nil })
    }

    @Test func flushWithNothingQueuedCompletesAfterAnEmptyRead() {
        var machine = Machine(configuration: configuration(), clock: ManualClock())
        _ = machine.start(at: position(16))
        _ = machine.connected()
        _ = machine.batchRead(batch(from: 16, records: 0))
        #expect(reads(machine.flushRequested(id: 1, upTo: position(16))) == [position(16)])
        #expect(flushes(machine.batchRead(batch(from: 16, records: 0))).map(\.0) == [1])
    }

    @Test func aConnectErrorCompletesPendingFlushesWithAnErrorThatSaysWhy() {
        var machine = Machine(configuration: configuration(), clock: ManualClock())
        _ = machine.start(at: position(16))
        #expect(machine.flushRequested(id: 3, upTo: position(26)).isEmpty)
        let completed = flushes(machine.connectFailed(refused))
        #expect(completed.count == 1)
        let error = completed.first?.1
        #expect(error?.code == .connectFailed)
        #expect(error?.description.contains("connection refused") == true)
        #expect(error?.description.contains("127.0.0.1:5000") == true)
    }

    /// Another host to try: connect again at once, the flush still waiting, no backoff; the shutdown keeps the
    /// deadline of the first attempt.
    @Test func aConnectErrorWithAnotherHostToTryConnectsAtOnceAndKeepsFlushesAndTheShutdownWaiting() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.shutdownTimeout = .seconds(5) }, clock: clock)
        _ = machine.start(at: position(16))
        #expect(machine.flushRequested(id: 3, upTo: position(26)).isEmpty)
        #expect(!machine.shutdownRequested().contains(.shutdownComplete))
        clock.advance(by: .seconds(3))
        let actions = machine.connectFailed(refused, tryingAnotherHost: true)
        #expect(actions.contains(.connect))
        #expect(flushes(actions).isEmpty && timers(actions).isEmpty && !actions.contains(.shutdownComplete))
        #expect(machine.counters.connectionErrors == 1)
        clock.advance(by: .seconds(2))
        let deadline = machine.timerFired()
        #expect(deadline.contains(.shutdownComplete), "the shutdown's deadline")
        #expect(flushes(deadline).map(\.0) == [3])
    }

    /// A flush during a backoff connects at once — once an outage: a program flushing per request against a
    /// collector that is down connected (and handshook) at its request rate (review, helper-53: 98 connects for 98
    /// flushes). After that first try the flushes wait for the backoff's own timer; once a connection proves healthy
    /// (not one that ends at once: helper-55), the next outage's first flush tries at once again.
    @Test func aFlushDuringBackoffConnectsAtOnceOnceAnOutage() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration(), clock: clock)
        _ = machine.start(at: position(16))
        _ = machine.connectFailed(refused)
        #expect(machine.flushRequested(id: 1, upTo: position(16)).contains(.connect))
        _ = machine.connectFailed(refused)
        // Flushes, each connect they make refused at once (a collector that is down).
        var connects = 0
        for id in 2..<100 where machine.flushRequested(id: id, upTo: position(16)).contains(.connect) {
            connects += 1
            _ = machine.connectFailed(refused)
        }
        #expect(connects == 0, "flushes that connected at once")
        clock.advance(by: .seconds(3600))
        #expect(machine.timerFired().contains(.connect), "the backoff's timer still connects")
        // A connection that ends at once (a load balancer with no backend) proves nothing: still the same outage.
        _ = machine.connected()
        _ = machine.connectionClosed(error: refused)
        #expect(!machine.flushRequested(id: 100, upTo: position(16)).contains(.connect))
        clock.advance(by: .seconds(3600))
        #expect(machine.timerFired().contains(.connect))
        // One that lasted proves the collector healthy: the next outage's first flush tries at once.
        _ = machine.connected()
        clock.advance(by: .seconds(60))
        _ = machine.connectionClosed(error: refused)
        #expect(machine.flushRequested(id: 101, upTo: position(16)).contains(.connect), "a new outage")
    }

    @Test func aWriteTheCollectorDoesNotTakeInTimeEndsTheConnectionFailsTheFlushAndResends() {
        let clock = ManualClock()
        let start = clock.now
        var machine = Machine(
            configuration: configuration { $0.writeTimeout = .seconds(30) },
            clock: clock,
            random: { 0 }
        )
        _ = machine.start(at: position(16))
        _ = machine.connected()
        // The dispatch timer set on connecting comes first: a write sets none (a timer per batch cost the event loop's
        // other channels their turn: LogstashClientPlainTests.aBacklogSentAtFullSpeedLeaves…).
        #expect(timers(machine.batchRead(batch(from: 16, records: 3))).isEmpty)
        #expect(machine.flushRequested(id: 4, upTo: position(46)).isEmpty)
        // The dispatch timers before the deadline find the write still in flight and wait on, never past the deadline.
        clock.advance(by: .seconds(5))
        #expect(timers(machine.timerFired()).allSatisfy { $0 <= start.advanced(by: .seconds(30)) })
        clock.advance(by: .seconds(24))
        #expect(!machine.timerFired().contains(.close(graceful: false)))
        clock.advance(by: .seconds(1))
        let stalled = machine.timerFired()
        #expect(stalled.first == .close(graceful: false))
        #expect(flushes(stalled).map(\.0) == [4])
        #expect(flushes(stalled).first?.1?.description.contains("took no write for 30") == true)
        #expect(machine.counters.connectionErrors == 1)
        guard case .backingOff = machine.state else {
            Issue.record("expected a backoff after the stall, not \(machine.state)")
            return
        }
        // The batch that never went out is sent again on the next connection.
        clock.advance(by: .seconds(1))
        #expect(machine.timerFired().contains(.connect))
        #expect(reads(machine.connected()) == [position(16)])
    }

    /// A collector reading slower than a batch per timeout (20 KB/s against 1 MiB batches and 30 s) ended every
    /// connection at its first write past the socket buffers, before anything was proven, and the next connection
    /// resent the same first megabytes — forever (review, helper-71). After a write timeout batches are a sixteenth
    /// the size, and grow back only while writes complete within an eighth of the timeout.
    @Test func batchesShrinkAfterAWriteTimeoutAndGrowBackOnlyWhileWritesAreQuick() {
        let clock = ManualClock()
        var machine = Machine(
            configuration: configuration {
                $0.writeTimeout = .seconds(30)
                $0.maxBatchRecords = 100_000
            },
            clock: clock,
            random: { 0 }
        )
        func readLimits(_ actions: [Machine.Action]) -> [Int] {
            actions.compactMap { if case .readBatch(_, let maxBytes, _) = $0 { maxBytes } else { nil } }
        }
        _ = machine.start(at: position(16))
        #expect(readLimits(machine.connected()) == [1 << 20])
        _ = machine.batchRead(batch(from: 16, records: 100_000))  // ~1 MiB
        clock.advance(by: .seconds(30))
        let stalled = machine.timerFired()
        #expect(stalled.first == .close(graceful: false))
        #expect(
            stalled.contains { action in
                if case .reportActivity(let line) = action { return line.contains("batches of at most 64 KiB") }
                return false
            }
        )
        clock.advance(by: .seconds(1))
        #expect(machine.timerFired().contains(.connect))
        #expect(readLimits(machine.connected()) == [64 << 10])
        // Written at once, but nothing proven on this connection yet (its first writes go into empty socket
        // buffers, however slow the collector): no larger.
        _ = machine.batchRead(batch(from: 16, records: 6_500))  // ~64 KiB
        clock.advance(by: .seconds(1))
        #expect(readLimits(machine.writeCompleted()) == [64 << 10])
        // The second proves the first (the test's window is 100 bytes); the third, written within an eighth of the
        // timeout on a connection that proved progress, lets the next batch be twice as large.
        _ = machine.batchRead(batch(from: 65_016, records: 6_500))
        clock.advance(by: .seconds(1))
        #expect(readLimits(machine.writeCompleted()) == [64 << 10])
        _ = machine.batchRead(batch(from: 130_016, records: 6_500))
        clock.advance(by: .seconds(3))
        #expect(readLimits(machine.writeCompleted()) == [128 << 10])
        // Written slower (the collector's pace, once the buffers are full): no larger.
        _ = machine.batchRead(batch(from: 195_016, records: 13_100))  // ~128 KiB
        clock.advance(by: .seconds(6))
        #expect(readLimits(machine.writeCompleted()) == [128 << 10])
        #expect(machine.batchBytesLimit == 128 << 10)
    }

    @Test func aWriteTimeoutShorterThanTheSendIntervalSetsATimerOfItsOwn() {
        let clock = ManualClock()
        let start = clock.now
        var machine = Machine(configuration: configuration { $0.writeTimeout = .seconds(2) }, clock: clock)
        _ = machine.start(at: position(16))
        _ = machine.connected()
        let write = machine.batchRead(batch(from: 16, records: 3))
        #expect(timers(write) == [start.advanced(by: .seconds(2))])
        // A write that completes in time is not a stall.
        _ = machine.writeCompleted()
        clock.advance(by: .seconds(2))
        #expect(!machine.timerFired().contains(.close(graceful: false)))
    }

    @Test func anAbandonedFlushIsForgottenAndNeverCompleted() {
        var machine = Machine(configuration: configuration(), clock: ManualClock())
        _ = machine.start(at: position(16))
        _ = machine.flushRequested(id: 1, upTo: position(26))
        _ = machine.flushRequested(id: 2, upTo: position(26))
        machine.flushAbandoned(id: 1)
        #expect(machine.pendingFlushCount == 1)
        #expect(flushes(machine.connectFailed(refused)).map(\.0) == [2])
        #expect(machine.pendingFlushCount == 0)
    }

    @Test func afterAConnectionErrorResendsEverythingNotProvenDelivered() {
        let clock = ManualClock()
        // Window 100 bytes: a batch is acknowledged once 100 more bytes followed it on the connection.
        var machine = Machine(configuration: configuration { $0.maxBatchRecords = 5 }, clock: clock, random: { 0 })
        _ = machine.start(at: position(16))
        _ = machine.connected()
        var start = 16
        var acknowledged: [SpoolPosition] = []
        for _ in 0..<4 {
            _ = machine.batchRead(batch(from: start, records: 5))  // 50 bytes each
            acknowledged += acks(machine.writeCompleted())
            start += 50
        }
        // After 200 bytes: the first two batches (ending at 66 and 116) are followed by ≥ 100 bytes.
        #expect(acknowledged == [position(66), position(116)])
        let onError = machine.connectionClosed(error: LogstashError(code: .connectionLost, message: "reset by peer"))
        #expect(acks(onError).isEmpty)
        clock.advance(by: .seconds(1))
        #expect(machine.timerFired().contains(.connect))
        // The resend starts at the last acknowledged position, not where sending stopped.
        #expect(reads(machine.connected()) == [position(116)])
        _ = machine.batchRead(batch(from: 116, records: 5))
        _ = machine.writeCompleted()
        #expect(machine.counters.resentRecords == 5)
    }

    @Test func batchesProvenTogetherAreAcknowledgedAsOneCountedExtentFromTheLastAcknowledgement() {
        // Window 100 bytes. Three one-record batches, then a 10-record one: after it, the three are followed by
        // ≥ 100 bytes at once, and the spool is told what they count (no walk of their frames).
        // One record makes a full batch: the machine reads the next as soon as one is written.
        var machine = Machine(configuration: configuration { $0.maxBatchRecords = 1 }, clock: ManualClock())
        _ = machine.start(at: position(16))
        _ = machine.connected()
        var proven: [SpoolExtent] = []
        for (start, records) in [(16, 1), (26, 1), (36, 1), (46, 10)] {
            _ = machine.batchRead(batch(from: start, records: records))
            proven += extents(machine.writeCompleted())
        }
        #expect(proven == [SpoolExtent(start: position(16), end: position(46), records: 3, bytes: 30)])
        #expect(machine.acknowledgedPosition == position(46))
    }

    @Test func batchesProvenTogetherWithAGapBetweenThemAreAcknowledgedUpToTheirEndUncounted() {
        // The second batch does not start where the first ended (the spool skipped a damaged stretch, say): the
        // spool walks to count what it forgets.
        var machine = Machine(configuration: configuration { $0.maxBatchRecords = 1 }, clock: ManualClock())
        _ = machine.start(at: position(16))
        _ = machine.connected()
        var actions: [Machine.Action] = []
        for (start, records) in [(16, 1), (36, 1), (46, 10)] {
            _ = machine.batchRead(batch(from: start, records: records))
            actions += machine.writeCompleted()
        }
        #expect(extents(actions).isEmpty)
        #expect(acks(actions) == [position(46)])
    }

    @Test func gracefulShutdownDrainsClosesAndAcknowledgesEverythingSent() {
        var machine = Machine(configuration: configuration(), clock: ManualClock())
        _ = machine.start(at: position(16))
        _ = machine.connected()
        _ = machine.batchRead(batch(from: 16, records: 0))
        #expect(reads(machine.shutdownRequested()) == [position(16)])
        expectSendsTwoRecordsFrom16ClosesAndCompletes(&machine)
        #expect(machine.state == .closed)
    }

    @Test func shutdownThatCannotDrainInTimeClosesAndLeavesTheRestSpooled() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.shutdownTimeout = .seconds(2) }, clock: clock)
        _ = machine.start(at: position(16))
        _ = machine.connected()
        _ = machine.batchRead(batch(from: 16, records: 2))  // a write that never completes
        _ = machine.shutdownRequested()
        clock.advance(by: .seconds(2))
        let actions = machine.timerFired()
        #expect(actions.contains(.close(graceful: false)))
        #expect(actions.contains(.shutdownComplete))
        #expect(acks(actions).isEmpty)
    }

    @Test func aShutdownWhileConnectingWaitsForTheConnectionAndThenSendsWhatIsQueued() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.shutdownTimeout = .seconds(2) }, clock: clock)
        _ = machine.start(at: position(16))
        let requested = machine.shutdownRequested()
        #expect(!requested.contains(.shutdownComplete))
        #expect(timers(requested) == [clock.now.advanced(by: .seconds(2))])
        #expect(reads(machine.connected()) == [position(16)])
        expectSendsTwoRecordsFrom16ClosesAndCompletes(&machine)
        #expect(machine.shutdownFailure == nil)
    }

    @Test func aShutdownWhileConnectingGivesUpAtItsDeadlineAndSaysSo() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.shutdownTimeout = .seconds(2) }, clock: clock)
        _ = machine.start(at: position(16))
        _ = machine.shutdownRequested()
        clock.advance(by: .seconds(1))
        #expect(timers(machine.timerFired()) == [clock.now.advanced(by: .seconds(1))], "a stale timer is set again")
        clock.advance(by: .seconds(1))
        let actions = machine.timerFired()
        #expect(actions.contains(.close(graceful: false)))
        #expect(actions.contains(.shutdownComplete))
        #expect(machine.shutdownFailure?.code == .timeout)
        #expect(machine.shutdownFailure?.message.contains("still connecting") == true)
        #expect(machine.connected() == [.close(graceful: false)], "a connection that comes after is dropped")
    }

    /// `Logger.shutdown()` flushes first: a flush that waited the whole timeout for a connection (a collector whose
    /// host drops the connect) leaves the shutdown nothing to wait for.
    @Test func aShutdownWhileAConnectAttemptOlderThanTheTimeoutIsStillGoingEndsAtOnce() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.shutdownTimeout = .seconds(2) }, clock: clock)
        _ = machine.start(at: position(16))
        clock.advance(by: .seconds(2))
        let actions = machine.shutdownRequested()
        #expect(actions.contains(.shutdownComplete))
        #expect(actions.contains(.close(graceful: false)))
        #expect(machine.shutdownFailure?.message.contains("still connecting") == true)
    }

    @Test func aShutdownWhileConnectingWithNothingToSendEndsAtOnceAndClean() {
        var machine = Machine(configuration: configuration(), clock: ManualClock())
        _ = machine.start(at: position(16))
        _ = machine.flushRequested(id: 1, upTo: position(16))
        let actions = machine.shutdownRequested(nothingToSend: true)
        #expect(actions.contains(.shutdownComplete))
        #expect(flushes(actions).count == 1 && flushes(actions).first?.1 == nil, "the flush has what it asked for")
        #expect(machine.shutdownFailure == nil)
    }

    @Test func shutdownWhileDisconnectedCompletesAtOnce() {
        var machine = Machine(configuration: configuration(), clock: ManualClock())
        _ = machine.start(at: position(16))
        _ = machine.connectFailed(refused)
        #expect(machine.shutdownRequested().contains(.shutdownComplete))
        #expect(flushes(machine.flushRequested(id: 1, upTo: position(16))).first?.1?.code == .shutdown)
    }

    /// A flush waiting for a connection that failed is told which host failed; after a round of several hosts,
    /// that none could be reached (it named only the last, as if there were no other).
    @Test func aFlushFailedByAConnectSaysWhetherEveryHostFailed() {
        for (hostsTried, expected) in [
            (1, "not delivered: connect to 127.0.0.1:5000 failed; "),
            (3, "not delivered: none of the 3 hosts could be connected to (the last: 127.0.0.1:5000); "),
        ] {
            var machine = Machine(configuration: configuration(), clock: ManualClock())
            _ = machine.start(at: position(16))
            _ = machine.flushRequested(id: 1, upTo: position(16))
            let failed = flushes(machine.connectFailed(refused, tryingAnotherHost: false, hostsTried: hostsTried))
            #expect(failed.first?.1?.message.hasPrefix(expected) == true, "\(failed)")
        }
    }

    /// A failover starts a new attempt: a shutdown asked for during it waits for it, though the attempt on the
    /// first host began longer ago than the shutdown's timeout (it ended at once, the next host never given a chance).
    @Test func aShutdownAfterAFailoverCountsFromTheNewAttempt() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration(), clock: clock)
        _ = machine.start(at: position(16))
        clock.advance(by: .seconds(60))
        _ = machine.connectFailed(refused, tryingAnotherHost: true, hostsTried: 1)
        #expect(!machine.shutdownRequested().contains(.shutdownComplete))
        #expect(machine.state != .closed)
    }

    /// The shutdown's last line says whether it closed a connection: one during a backoff closed none (it said
    /// "closed the connection to" the host that had just refused).
    @Test func aShutdownWithoutAConnectionSaysItStoppedNotThatItClosedOne() {
        var machine = Machine(configuration: configuration(), clock: ManualClock())
        _ = machine.start(at: position(16))
        _ = machine.connectFailed(refused)
        let lines = machine.shutdownRequested().compactMap {
            if case .reportActivity(let line) = $0 { line } else { nil }
        }
        #expect(lines.last == "stopped, not connected", "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("closed the connection") }, "\(lines)")
    }

    // MARK: - Hardening (issue #7)

    /// Fault 5: a collector that accepts and closes (or half-closes) at once made the client reconnect every
    /// 0.5 s forever, resending the whole window each time (374 reconnects, 2 GB in 100 s).
    @Test func connectionsThatCloseRightAwayBackOffLikeRefusedConnects() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.backoffJitter = 0 }, clock: clock, random: { 0 })
        _ = machine.start(at: position(0))
        var delays: [Duration] = []
        var lastActivity: [String] = []
        for _ in 0..<6 {
            _ = machine.connected()
            clock.advance(by: .milliseconds(20))
            let actions = machine.connectionClosed(error: nil)
            lastActivity = actions.compactMap { if case .reportActivity(let line) = $0 { line } else { nil } }
            let until = try! #require(timers(actions).last)
            delays.append(clock.now.duration(to: until))
            clock.advance(by: clock.now.duration(to: until))
            _ = machine.timerFired()
        }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16)])
        #expect(
            lastActivity.contains { $0.contains("closed 6 connections in a row right after connecting") },
            "\(lastActivity)"
        )
    }

    @Test func aConnectionThatLivedLongEnoughResetsTheBackoff() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.backoffJitter = 0 }, clock: clock, random: { 0 })
        _ = machine.start(at: position(0))
        for _ in 0..<3 {
            _ = machine.connected()
            let until = try! #require(timers(machine.connectionClosed(error: nil)).last)
            clock.advance(by: clock.now.duration(to: until))
            _ = machine.timerFired()
        }
        _ = machine.connected()
        clock.advance(by: .seconds(11))
        let until = try! #require(timers(machine.connectionClosed(error: nil)).last)
        #expect(clock.now.duration(to: until) == .milliseconds(500))
    }

    /// Fault 4: the window grows to the measured buffers, so a collector with a large receive buffer never makes
    /// the spool forget what it may still hold unread.
    @Test func theResendWindowGrowsToTheMeasuredBuffers() {
        var machine = Machine(configuration: configuration(), clock: ManualClock())
        _ = machine.start(at: position(0))
        _ = machine.connected()
        var acknowledged: [SpoolPosition] = []
        var offset = 0
        for _ in 0..<30 {
            _ = machine.recordsAvailable()
            _ = machine.batchRead(batch(from: offset, records: 3))
            offset += 30
            acknowledged += acks(machine.writeCompleted(bufferBound: 600))
        }
        #expect(machine.connectionWindow == 600)
        // 900 bytes were written; only what 600 more bytes followed is proven.
        #expect(acknowledged.last == position(300))
    }

    /// Fault 3: a collector that half-closes without reading while we close sends the same FIN as one that read
    /// everything; the close proves delivery only when the transport saw it come after ours.
    @Test(arguments: [true, false])
    func aCleanCloseAcknowledgesOnlyWhenThePeerClosedAfterUs(peerClosedAfterUs: Bool) {
        var machine = Machine(configuration: configuration { $0.resendWindowBytes = 1 << 20 }, clock: ManualClock())
        _ = machine.start(at: position(0))
        _ = machine.connected()
        _ = machine.recordsAvailable()
        _ = machine.batchRead(batch(from: 0, records: 3))
        _ = machine.writeCompleted()
        _ = machine.flushRequested(id: 1, upTo: position(30))
        _ = machine.shutdownRequested()
        _ = machine.batchRead(batch(from: 30, records: 0))
        let actions = machine.connectionClosed(error: nil, peerClosedAfterUs: peerClosedAfterUs)
        #expect(acks(actions) == (peerClosedAfterUs ? [position(30)] : []))
        #expect(actions.contains(.shutdownComplete))
    }
}
