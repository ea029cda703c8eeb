import JustLogTestSupport
import Testing

@testable import JustLogLogstash

private typealias Machine = BeatsStateMachine<ManualClock>

private func configuration(_ change: (inout Machine.Configuration) -> Void = { _ in }) -> Machine.Configuration {
    var configuration = Machine.Configuration()
    configuration.sendInterval = .seconds(5)
    configuration.initialWindow = 4
    configuration.maxWindow = 20
    configuration.ackTimeout = .seconds(30)
    configuration.backoff.jitter = 0
    configuration.endpoint = "127.0.0.1:5044 (plain TCP, Beats)"
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

private func reads(_ actions: [Machine.Action]) -> [(from: SpoolPosition, records: Int)] {
    actions.compactMap { if case .readBatch(let from, _, let records) = $0 { (from, records) } else { nil } }
}

private func acks(_ actions: [Machine.Action]) -> [SpoolPosition] {
    actions.compactMap { if case .acknowledge(let upTo) = $0 { upTo } else { nil } }
}

private func partialAcks(_ actions: [Machine.Action]) -> [(from: SpoolPosition, count: Int)] {
    actions.compactMap { if case .acknowledgeRecords(let from, let count) = $0 { (from, count) } else { nil } }
}

private func flushes(_ actions: [Machine.Action]) -> [(Int, LogstashError?)] {
    actions.compactMap { if case .completeFlush(let id, let error) = $0 { (id, error) } else { nil } }
}

/// A machine connected with its first read answered by a batch of `records` at 0: the window is in flight.
private func machineWithWindow(
    records: Int = 4,
    clock: ManualClock,
    change: (inout Machine.Configuration) -> Void = { _ in }
) -> Machine {
    var machine = Machine(configuration: configuration(change), clock: clock, random: { 0 })
    _ = machine.start(at: position(0))
    _ = machine.connected()
    _ = machine.batchRead(batch(from: 0, records: records))
    _ = machine.writeCompleted()
    return machine
}

@Suite struct BeatsStateMachineTests {
    /// A failover starts a new attempt: a shutdown asked for during it waits for it, though the attempt on the
    /// first host began longer ago than the shutdown's timeout (it ended at once, the next host never given a chance).
    @Test func aShutdownAfterAFailoverCountsFromTheNewAttempt() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration(), clock: clock)
        _ = machine.start(at: position(0))
        clock.advance(by: .seconds(60))
        _ = machine.connectFailed(
            LogstashError(code: .connectFailed, message: "connection refused"),
            tryingAnotherHost: true,
            hostsTried: 1
        )
        #expect(!machine.shutdownRequested().contains(.shutdownComplete))
        #expect(machine.state != .closed)
    }

    /// The shutdown's last line says whether it closed a connection: one during a backoff closed none.
    @Test func aShutdownWithoutAConnectionSaysItStoppedNotThatItClosedOne() {
        var machine = Machine(configuration: configuration(), clock: ManualClock())
        _ = machine.start(at: position(0))
        _ = machine.connectFailed(LogstashError(code: .connectFailed, message: "connection refused"))
        let lines = machine.shutdownRequested().compactMap {
            if case .reportActivity(let line) = $0 { line } else { nil }
        }
        #expect(lines.last == "stopped, not connected", "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("closed the connection") }, "\(lines)")
    }

    @Test func theFirstWindowHasTheInitialSizeAndIsForgottenOnlyOnItsFullAck() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration(), clock: clock, random: { 0 })
        _ = machine.start(at: position(0))
        let connected = machine.connected()
        #expect(reads(connected).map(\.records) == [4])
        let read = machine.batchRead(batch(from: 0, records: 4))
        #expect(read.contains(.write(batch(from: 0, records: 4))))
        #expect(acks(machine.writeCompleted()).isEmpty, "written is not acknowledged")
        let acked = machine.ackReceived(sequence: 4)
        #expect(acks(acked) == [position(40)])
        #expect(machine.acknowledgedPosition == position(40))
        #expect(machine.counters.acknowledgedRecords == 4)
    }

    @Test func aPartialAckForgetsOnlyTheRecordsItCovers() {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 4, clock: clock)
        let first = machine.ackReceived(sequence: 1)
        #expect(acks(first).isEmpty)
        #expect(partialAcks(first).map(\.from) == [position(0)])
        #expect(partialAcks(first).map(\.count) == [1])
        _ = machine.recordsAcknowledged(upTo: position(10))
        let second = machine.ackReceived(sequence: 3)
        #expect(partialAcks(second).map(\.from) == [position(10)], "from where the last partial ACK ended")
        #expect(partialAcks(second).map(\.count) == [2])
        _ = machine.recordsAcknowledged(upTo: position(30))
        #expect(machine.acknowledgedPosition == position(30))
        #expect(acks(machine.ackReceived(sequence: 4)) == [position(40)])
        #expect(machine.counters.acknowledgedRecords == 4)
    }

    @Test func aLostConnectionAfterAPartialAckResendsFromTheFirstUnacknowledgedRecord() {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 4, clock: clock)
        _ = machine.ackReceived(sequence: 2)
        _ = machine.recordsAcknowledged(upTo: position(20))
        let lost = machine.connectionClosed(error: nil)
        #expect(
            lost.contains {
                if case .reportActivity(let line) = $0 {
                    line.contains("2 unacknowledged events will be resent")
                } else {
                    false
                }
            }
        )
        clock.advance(by: .seconds(1))
        #expect(machine.timerFired().contains(.connect))
        let again = machine.connected()
        #expect(reads(again).map(\.from) == [position(20)])
        #expect(reads(again).map(\.records) == [2], "the window halved after the failure")
    }

    @Test(arguments: [UInt32(0), 2])
    func aKeepAliveAckExtendsTheDeadlineAndForgetsNothing(sequence: UInt32) {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 4, clock: clock)
        if sequence > 0 {
            _ = machine.ackReceived(sequence: sequence)
            _ = machine.recordsAcknowledged(upTo: position(Int(sequence) * 10))
        }
        for _ in 0..<5 {
            clock.advance(by: .seconds(20))
            let keepAlive = machine.ackReceived(sequence: sequence)
            #expect(acks(keepAlive).isEmpty && partialAcks(keepAlive).isEmpty)
            #expect(
                !machine.timerFired().contains(.close(graceful: false)),
                "100 s without progress but with keep-alives: still connected"
            )
        }
        clock.advance(by: .seconds(31))
        #expect(machine.timerFired().contains(.close(graceful: false)), "no ACK at all for longer than the timeout")
    }

    @Test func noAckWithinTheTimeoutDropsTheConnectionShrinksTheWindowAndResends() {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 4, clock: clock)
        clock.advance(by: .seconds(29))
        #expect(!machine.timerFired().contains(.close(graceful: false)))
        clock.advance(by: .seconds(2))
        let timedOut = machine.timerFired()
        #expect(timedOut.first == .close(graceful: false))
        #expect(
            timedOut.contains {
                if case .reportActivity(let line) = $0 {
                    line.contains("acknowledged nothing for 30.0 s")
                } else {
                    false
                }
            }
        )
        #expect(machine.windowSize == 2)
        #expect(machine.counters.connectionErrors == 1)
        clock.advance(by: .seconds(1))
        _ = machine.timerFired()
        #expect(reads(machine.connected()).map(\.from) == [position(0)])
    }

    @Test func anAckBeyondTheWindowIsAProtocolErrorAndForgetsNothing() {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 4, clock: clock)
        let actions = machine.ackReceived(sequence: 5)
        #expect(actions.first == .close(graceful: false))
        #expect(acks(actions).isEmpty && partialAcks(actions).isEmpty)
        #expect(machine.unresolvedError?.contains("acknowledged event 5 of a window of 4") == true)
    }

    @Test func theWindowGrowsByHalfAfterEachFullWindowUpToTheMaximumAndHalvesOnFailure() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration(), clock: clock, random: { 0 })
        _ = machine.start(at: position(0))
        var next = reads(machine.connected())
        var sizes: [Int] = []
        var offset = 0
        for _ in 0..<8 {
            let size = next[0].records
            sizes.append(size)
            _ = machine.batchRead(batch(from: offset, records: size))
            _ = machine.writeCompleted()
            offset += size * 10
            next = reads(machine.ackReceived(sequence: UInt32(size)))
        }
        #expect(sizes == [4, 6, 9, 14, 20, 20, 20, 20])
        _ = machine.batchRead(batch(from: offset, records: 20))
        _ = machine.connectionClosed(error: nil)
        #expect(machine.windowSize == 10)
    }

    @Test func aWindowThatIsNotFullDoesNotGrowIt() {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 2, clock: clock)
        _ = machine.ackReceived(sequence: 2)
        #expect(machine.windowSize == 4)
    }

    @Test func aFlushCompletesOnlyOnceEverythingBeforeItIsAcknowledged() {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 4, clock: clock)
        #expect(flushes(machine.flushRequested(id: 7, upTo: position(40))).isEmpty)
        let partial = machine.ackReceived(sequence: 3)
        #expect(flushes(partial).isEmpty)
        #expect(flushes(machine.recordsAcknowledged(upTo: position(30))).isEmpty)
        let full = machine.ackReceived(sequence: 4)
        #expect(flushes(full).map(\.0) == [7])
        #expect(flushes(full).first?.1 == nil)
    }

    @Test func aFlushFailsWithTheReasonWhenTheConnectionIsLost() {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 4, clock: clock)
        _ = machine.flushRequested(id: 1, upTo: position(40))
        let lost = machine.connectionClosed(error: LogstashError(code: .connectionLost, message: "reset"))
        #expect(flushes(lost).first?.1?.message.contains("stay spooled") == true)
    }

    @Test func shutdownSendsWhatIsQueuedWaitsForItsAckAndThenClosesCleanly() {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 4, clock: clock)
        #expect(machine.shutdownRequested().isEmpty || true)
        let acked = machine.ackReceived(sequence: 4)
        #expect(reads(acked).count == 1, "drains: reads the next window at once")
        let empty = machine.batchRead(SpoolBatch(bytes: [], recordCount: 0, start: position(40), end: position(40)))
        #expect(empty.contains(.close(graceful: true)))
        let closed = machine.connectionClosed(error: nil)
        #expect(closed.contains(.shutdownComplete))
        #expect(machine.shutdownFailure == nil)
    }

    @Test func aShutdownWhileConnectingWaitsForTheConnectionThenEndsWhenItFails() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.shutdownTimeout = .seconds(5) }, clock: clock)
        _ = machine.start(at: position(0))
        let requested = machine.shutdownRequested()
        #expect(!requested.contains(.shutdownComplete))
        let failed = machine.connectFailed(LogstashError(code: .connectFailed, message: "connection refused"))
        #expect(failed.contains(.shutdownComplete))
        #expect(machine.shutdownFailure?.code == .connectFailed)
    }

    /// As json_lines' machine: a flush during a backoff connects at once only once an outage (review, helper-53).
    @Test func aFlushDuringBackoffConnectsAtOnceOnceAnOutage() {
        let clock = ManualClock()
        let refused = LogstashError(code: .connectFailed, message: "connection refused")
        var machine = Machine(configuration: configuration(), clock: clock)
        _ = machine.start(at: position(0))
        _ = machine.connectFailed(refused)
        #expect(machine.flushRequested(id: 1, upTo: position(40)).contains(.connect))
        _ = machine.connectFailed(refused)
        // Flushes, each connect they make refused at once (a collector that is down).
        var connects = 0
        for id in 2..<100 where machine.flushRequested(id: id, upTo: position(40)).contains(.connect) {
            connects += 1
            _ = machine.connectFailed(refused)
        }
        #expect(connects == 0, "flushes that connected at once")
        clock.advance(by: .seconds(3600))
        #expect(machine.timerFired().contains(.connect), "the backoff's timer still connects")
        // A connection that ends at once (a load balancer with no backend) proves nothing: still the same outage.
        _ = machine.connected()
        _ = machine.connectionClosed(error: refused)
        #expect(!machine.flushRequested(id: 100, upTo: position(40)).contains(.connect))
        clock.advance(by: .seconds(3600))
        #expect(machine.timerFired().contains(.connect))
        // One that lasted proves the collector healthy: the next outage's first flush tries at once.
        _ = machine.connected()
        clock.advance(by: .seconds(60))
        _ = machine.connectionClosed(error: refused)
        #expect(machine.flushRequested(id: 101, upTo: position(40)).contains(.connect), "a new outage")
    }

    @Test func aShutdownWhileConnectingWaitsForTheNextHostWhenTheFirstFails() {
        var machine = Machine(configuration: configuration { $0.shutdownTimeout = .seconds(5) }, clock: ManualClock())
        _ = machine.start(at: position(0))
        _ = machine.flushRequested(id: 1, upTo: position(40))
        #expect(!machine.shutdownRequested().contains(.shutdownComplete))
        let failed = machine.connectFailed(
            LogstashError(code: .connectFailed, message: "connection refused"),
            tryingAnotherHost: true
        )
        #expect(failed.contains(.connect) && !failed.contains(.shutdownComplete) && flushes(failed).isEmpty)
        #expect(reads(machine.connected()).count == 1, "the next host gets what is queued")
    }

    @Test func aShutdownWhileConnectingThatConnectsSendsWhatIsQueued() {
        let clock = ManualClock()
        var machine = Machine(configuration: configuration { $0.shutdownTimeout = .seconds(5) }, clock: clock)
        _ = machine.start(at: position(0))
        _ = machine.shutdownRequested()
        clock.advance(by: .seconds(4))
        #expect(!machine.timerFired().contains(.shutdownComplete), "the deadline has not come")
        #expect(reads(machine.connected()).count == 1)
    }

    @Test func shutdownWithAWindowNeverAcknowledgedTimesOutAndSaysSo() {
        let clock = ManualClock()
        var machine = machineWithWindow(records: 4, clock: clock) { $0.shutdownTimeout = .seconds(5) }
        _ = machine.shutdownRequested()
        clock.advance(by: .seconds(6))
        let actions = machine.timerFired()
        #expect(actions.contains(.shutdownComplete))
        #expect(machine.shutdownFailure?.code == .timeout)
    }
}
