import Foundation
import JustLogCore
import JustLogLogstash
import JustLogTestSupport
import JustLogTools
import NIOCore
import NIOPosix
import Testing

/// Collects activity lines.
final class ActivityLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.withLock { stored.append(line) } }
    var lines: [String] { lock.withLock { stored } }
    func contains(_ text: String) -> Bool { lines.contains { $0.contains(text) } }
    /// Polls until a line contains `text`; `timeout` only bounds a failing wait (a loaded machine may take long).
    func wait(for text: String, timeout: Duration = .seconds(120)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if contains(text) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return contains(text)
    }
}

func jsonRecord(_ index: Int, padding: Int = 0) -> [UInt8] {
    Array(
        #"{"log_type":"info","message":"m\#(index)\#(String(repeating: "x", count: padding))","event_id":"e\#(index)"}"#
            .utf8
    )
}

/// A client on a fresh spool in `directory`, plain TCP to 127.0.0.1:`port`.
func makeClient(
    port: Int,
    directory: TemporaryDirectory,
    activity: ActivityLog,
    group: (any EventLoopGroup)? = nil,
    change: (inout LogstashClient.Configuration) -> Void = { _ in }
) throws -> LogstashClient {
    var configuration = LogstashClient.Configuration(host: "127.0.0.1", port: port)
    configuration.useTLS = false
    configuration.sendInterval = .milliseconds(200)
    configuration.backoffMinimum = .milliseconds(50)
    configuration.backoffMaximum = .milliseconds(400)
    configuration.connectTimeout = .seconds(5)
    change(&configuration)
    let spool = try LogstashSpool(configuration: .init(directory: directory.path))
    return try LogstashClient(
        configuration: configuration,
        spool: spool,
        eventLoopGroup: group,
        activity: { activity.append($0) },
        warning: { activity.append("WARNING " + $0) }
    )
}

/// A client of the collectors on `first` and `second` (loopback, plain TCP) that backs off an hour: a test of
/// failover can't pass by waiting a backoff out. Its shutdown has a minute (``shutdownTestBudget``), not the default 5 s:
/// the tests whose subject is the shutdown's budget set their own.
func clientOfTwoHosts(
    _ first: Int,
    then second: Int,
    directory: TemporaryDirectory,
    activity: ActivityLog,
    group: (any EventLoopGroup)? = nil,
    change: (inout LogstashClient.Configuration) -> Void = { _ in }
) throws -> LogstashClient {
    try makeClient(port: first, directory: directory, activity: activity, group: group) {
        $0.hosts.append(.init(host: "127.0.0.1", port: second))
        $0.backoffMinimum = .seconds(3600)
        $0.backoffMaximum = .seconds(3600)
        $0.shutdownTimeout = shutdownTestBudget
        change(&$0)
    }
}

/// The shutdown timeout of the failover tests whose subject is not the budget: long enough for a loaded machine's
/// shared event loop (in a CI run a shutdown right after start ran out of the default 5 s before the second host
/// took the records), still far below the hour's backoff, so a client that waited for the backoff instead of moving
/// to the next host fails them.
let shutdownTestBudget: Duration = .seconds(60)

/// A client of hosts on 127.0.0.1 that never answer, then `receiver`, with 50 records spooled (not started): the
/// connect timeout is an hour, so that only a shutdown's share ends an attempt.
func clientBehindHostsThatNeverAnswer(
    _ unanswered: [UnansweredPort],
    then receiver: Int,
    shutdownTimeout: Duration,
    directory: TemporaryDirectory,
    activity: ActivityLog
) throws -> LogstashClient {
    let ports = unanswered.map(\.port) + [receiver]
    let client = try clientOfTwoHosts(
        ports[0],
        then: ports[1],
        directory: directory,
        activity: activity,
        group: shutdownBudgetLoop
    ) {
        $0.hosts += ports.dropFirst(2).map { .init(host: "127.0.0.1", port: $0) }
        $0.connectTimeout = .seconds(3600)
        $0.shutdownTimeout = shutdownTimeout
    }
    for index in 0..<50 { try client.spool.append(jsonRecord(index)) }
    return client
}

/// The event loop of the tests whose shutdown has a budget of seconds for hosts that never answer: the client and
/// its receiver, on a thread no other test's handlers run on. On the shared singleton, a receiver's close came
/// more than the last 3 s of a budget late in CI and in full local runs ("the collector did not close the connection
/// in time"), behind other tests' work on the same loop.
let shutdownBudgetLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)

/// The lines ``jsonRecord(_:padding:)`` makes for `indices`, as a receiver sees them, in any order.
func jsonLines(_ indices: Range<Int>) -> Set<String> {
    Set(indices.map { String(decoding: jsonRecord($0), as: UTF8.self) })
}

@Suite struct LogstashClientPlainTests {
    @Test func sendsSpooledRecordsAsNewlineDelimitedLinesAndFlushCompletes() async throws {
        let receiver = try await LineReceiver()
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(port: receiver.port, directory: directory, activity: activity)
        defer { Task { await receiver.stop() } }
        client.start()
        for index in 0..<2500 {
            try client.spool.append(jsonRecord(index))
            client.recordsAppended()
        }
        try await client.flush()
        #expect(await receiver.waitForLines(2500))
        #expect(receiver.lines == (0..<2500).map { String(decoding: jsonRecord($0), as: UTF8.self) })
        #expect(activity.contains("connected to 127.0.0.1:\(receiver.port) (plain TCP)"))
        #expect(activity.contains("sent "))
        await client.shutdown()
        // A graceful close proves delivery: the spool is empty afterwards.
        #expect(client.spool.counterSnapshot.queuedRecords == 0)
        await receiver.stop()
    }

    @Test func resendsTheUnprovenWindowAfterTheCollectorResetsTheConnection() async throws {
        let receiver = try await LineReceiver()
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(port: receiver.port, directory: directory, activity: activity)
        client.start()
        for index in 0..<500 { try client.spool.append(jsonRecord(index)) }
        try await client.flush()
        #expect(await receiver.waitForLines(500))
        await receiver.closeConnectionsAbruptly()
        #expect(await activity.wait(for: "lost"))
        for index in 500..<1000 { try client.spool.append(jsonRecord(index)) }
        // The flush reconnects at once (instead of waiting out the backoff) and completes once written.
        try await client.flush()
        let expected = jsonLines(0..<1000)
        #expect(await eventually(timeout: .seconds(60)) { Set(receiver.lines).isSuperset(of: expected) })
        #expect(receiver.connections == 2)
        // Records 0..<500 were not proven (window 16 MiB): they were sent again.
        #expect(receiver.lines.count >= 1500)
        #expect(await client.counters().resent >= 500)
        await client.shutdown()
        await receiver.stop()
    }

    /// A write the socket takes at once completes inside `writeAndFlush`; the client used to send the next batch
    /// from that completion, nesting each batch's read and write in the one before for as long as the socket kept
    /// taking them: a backlog of small batches to a collector that keeps up overflowed the event loop's stack
    /// (SIGSEGV after ~1,400 batches in a debug build; 20,000 here).
    @Test(.timeLimit(.minutes(10)))
    func aLongBacklogOfSmallBatchesToAFastCollectorIsSentWithoutNestingEachWriteInTheLast() async throws {
        try await withBacklogToAFastCollector { client, _, sink, count in
            try await client.flush()
            #expect(await eventually(timeout: .seconds(300)) { sink.counts.lines >= count })
            #expect(sink.counts.lines == count)
            #expect(sink.firstLine == jsonRecord(0))
        }
    }

    /// Sending the next batch as a task of the event loop as soon as the last was written never let the loop poll
    /// its sockets while a backlog went out at full speed: every other channel on it waited for the whole backlog.
    @Test(.timeLimit(.minutes(10)))
    func aBacklogSentAtFullSpeedLeavesItsEventLoopToItsOtherChannels() async throws {
        try await withBacklogToAFastCollector { client, loop, sink, count in
            // How many lines the sink had when a connection on the same loop completed (on the loop, at once).
            let linesWhenConnected = LockedValue<Int?>(nil)
            // Started from a thread of its own as soon as the backlog flows: the tests' shared pool may not run this
            // test again before the backlog is sent.
            Thread.detachNewThread {
                let deadline = ContinuousClock.now + .seconds(60)
                while sink.counts.lines == 0, ContinuousClock.now < deadline { usleep(100) }
                // An address, not a name: no resolver thread in the way.
                let address = try! SocketAddress(ipAddress: "127.0.0.1", port: sink.port)
                ClientBootstrap(group: loop).connect(to: address).whenComplete { result in
                    linesWhenConnected.withLock { $0 = sink.counts.lines }
                    if case .success(let other) = result { other.close(promise: nil) }
                }
            }
            client.recordsAppended(count)
            #expect(await eventually(timeout: .seconds(300)) { linesWhenConnected.current != nil })
            // It completed while the backlog was being sent, not after it.
            let lines = try #require(linesWhenConnected.current)
            #expect(lines < count)
            #expect(await eventually(timeout: .seconds(300)) { sink.counts.lines >= count })
        }
    }

    /// A client on an event loop of its own, connected to a ``LoopbackSink`` (which reads on a thread of its own as
    /// fast as the kernel hands bytes over: writes to it complete at once), with `count` one-record batches spooled
    /// after it connected (a backlog found on connecting goes out from NIO's own write loop instead).
    private func withBacklogToAFastCollector(
        count: Int = 20_000,
        _ body: (LogstashClient, any EventLoop, LoopbackSink, Int) async throws -> Void
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let sink = try LoopbackSink()
        defer { sink.stop() }
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(port: sink.port, directory: directory, activity: activity, group: group) {
            $0.maxBatchRecords = 1
            $0.sendInterval = .seconds(3600)
        }
        client.start()
        #expect(await activity.wait(for: "connected to"))
        for index in 0..<count { try client.spool.append(jsonRecord(index)) }
        do {
            try await body(client, group.next(), sink, count)
        } catch {
            await client.shutdown()
            try? await group.shutdownGracefully()
            throw error
        }
        await client.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func drainsTheSpoolWhenTheCollectorStartsLate() async throws {
        // Held until the collector binds it: a port found free and let go could be given to another test's
        // receiver, which would then take this client's records (and this test's bind would fail).
        let held = try RefusingPort()
        defer { withExtendedLifetime(held) {} }
        let port = held.port
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(port: port, directory: directory, activity: activity)
        client.start()
        for index in 0..<300 { try client.spool.append(jsonRecord(index)) }
        #expect(await activity.wait(for: "reconnecting in"))
        await #expect(throws: LogstashError.self) { try await client.flush() }
        // Now the collector appears on that port.
        let receiver = try await LineReceiver.bind(port: port)
        #expect(await receiver.waitForLines(300))
        await client.shutdown()
        await receiver.stop()
    }

    /// With several hosts, a refused connect moved to the next host only after the backoff: a flush failed ("not
    /// delivered: connect … failed") though the second collector was up, and a shutdown right after start sent it
    /// nothing. Now the next host is tried at once, until each has failed once; the backoff (here an hour, so that
    /// waiting it out can't pass) comes after a whole round.
    @Test func aFlushAndAShutdownMoveToTheNextHostAtOnceWhenTheFirstRefuses() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let receiver = try await LineReceiver()
        let directory = try TemporaryDirectory(prefix: "client-next-host")
        let activity = ActivityLog()
        let client = try clientOfTwoHosts(refusing.port, then: receiver.port, directory: directory, activity: activity)
        client.start()
        for index in 0..<100 { try client.spool.append(jsonRecord(index)) }
        try await client.flush()
        #expect(await receiver.waitForLines(100))
        for index in 100..<200 { try client.spool.append(jsonRecord(index)) }
        #expect(await client.shutdown() == nil)
        #expect(client.spool.counterSnapshot.queuedRecords == 0)
        #expect(Set(receiver.lines) == jsonLines(0..<200))
        let lines = activity.lines
        #expect(lines.contains { $0.hasPrefix("connect to 127.0.0.1:\(refusing.port) (plain TCP) failed") }, "\(lines)")
        #expect(
            lines.contains(
                "failing over from 127.0.0.1:\(refusing.port) (plain TCP) to 127.0.0.1:\(receiver.port) (plain TCP)"
            ),
            "\(lines)"
        )
        #expect(!lines.contains { $0.contains("reconnecting in") }, "\(lines)")
        await receiver.stop()
    }

    /// A connection starts a new round: after the second host's connection is lost, the first refusing again
    /// still moves to the second at once (a count of failures kept across the connection ended the round there, and
    /// the flush failed into an hour's backoff).
    @Test func afterAConnectionARefusalStillMovesToTheOtherHostAtOnce() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let receiver = try await LineReceiver()
        let directory = try TemporaryDirectory(prefix: "client-new-round")
        let activity = ActivityLog()
        let client = try clientOfTwoHosts(refusing.port, then: receiver.port, directory: directory, activity: activity)
        client.start()
        for index in 0..<50 { try client.spool.append(jsonRecord(index)) }
        try await client.flush()
        #expect(await receiver.waitForLines(50))
        await receiver.closeConnectionsAbruptly()
        #expect(await activity.wait(for: "lost"))
        for index in 50..<100 { try client.spool.append(jsonRecord(index)) }
        // The flush connects at once: to the first host (the failover after the loss), refused, then the second.
        try await client.flush()
        let expected = jsonLines(0..<100)
        #expect(await eventually(timeout: .seconds(60)) { Set(receiver.lines).isSuperset(of: expected) })
        let refusals = activity.lines.filter { $0.hasPrefix("connect to 127.0.0.1:\(refusing.port) ") }
        #expect(refusals.count == 2, "\(activity.lines)")
        await client.shutdown()
        await receiver.stop()
    }

    /// A shutdown right after start, the first of two hosts refusing: what was queued goes to the second.
    @Test func aShutdownRightAfterStartSendsToTheSecondHostWhenTheFirstRefuses() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let receiver = try await LineReceiver()
        let directory = try TemporaryDirectory(prefix: "client-shutdown-next-host")
        let activity = ActivityLog()
        let client = try clientOfTwoHosts(refusing.port, then: receiver.port, directory: directory, activity: activity)
        for index in 0..<50 { try client.spool.append(jsonRecord(index)) }
        client.start()
        let shutdownFailure = await client.shutdown()
        #expect(shutdownFailure == nil, "\(String(describing: shutdownFailure)) \(activity.lines)")
        #expect(client.spool.counterSnapshot.queuedRecords == 0)
        #expect(Set(receiver.lines) == jsonLines(0..<50))
        await receiver.stop()
    }

    /// A shutdown while the first host's connect hangs (a blackholed collector: no answer, only the connect
    /// timeout ends it, and that is longer than the shutdown's): the attempt gets its share of the shutdown's time,
    /// and the second host, up, still takes what was queued before the program exits.
    @Test func aShutdownWaitingOnAHostThatNeverAnswersStillSendsToTheNextHost() async throws {
        let unanswered = try UnansweredPort()
        defer { withExtendedLifetime(unanswered) {} }
        let receiver = try await LineReceiver(group: shutdownBudgetLoop)
        let directory = try TemporaryDirectory(prefix: "client-shutdown-blackhole")
        let activity = ActivityLog()
        let client = try clientBehindHostsThatNeverAnswer(
            [unanswered],
            then: receiver.port,
            shutdownTimeout: .seconds(6),
            directory: directory,
            activity: activity
        )
        client.start()
        let shutdownFailure = await client.shutdown()
        #expect(shutdownFailure == nil, "\(String(describing: shutdownFailure)) \(activity.lines)")
        #expect(client.spool.counterSnapshot.queuedRecords == 0)
        #expect(Set(receiver.lines) == jsonLines(0..<50))
        #expect(
            activity.lines.contains {
                $0.hasPrefix("connect to 127.0.0.1:\(unanswered.port) ") && $0.contains("no answer within 3.0 s")
            },
            "\(activity.lines)"
        )
        await receiver.stop()
    }

    /// A program that exits after the first host's connect has hung for longer than the whole shutdown timeout
    /// (a blackholed host, a connect timeout longer than the shutdown's): the attempt is given up at once and the
    /// second host, up, still takes what was queued — the shutdown's deadline counting from the given-up attempt
    /// had passed already, and it ended at once.
    @Test func aShutdownAfterTheFirstHostHungLongerThanItsTimeoutStillSendsToTheNextHost() async throws {
        let unanswered = try UnansweredPort()
        defer { withExtendedLifetime(unanswered) {} }
        let receiver = try await LineReceiver(group: shutdownBudgetLoop)
        let directory = try TemporaryDirectory(prefix: "client-late-shutdown-blackhole")
        let activity = ActivityLog()
        let client = try clientBehindHostsThatNeverAnswer(
            [unanswered],
            then: receiver.port,
            shutdownTimeout: .seconds(4),
            directory: directory,
            activity: activity
        )
        client.start()
        #expect(await activity.wait(for: "connecting to 127.0.0.1:\(unanswered.port) "))
        // Longer than the whole shutdown timeout: the machine's deadline, counted from this attempt, has passed.
        try await Task.sleep(for: .seconds(5))
        let shutdownFailure = await client.shutdown()
        #expect(shutdownFailure == nil, "\(String(describing: shutdownFailure)) \(activity.lines)")
        #expect(Set(receiver.lines) == jsonLines(0..<50))
        #expect(
            activity.lines.contains {
                $0.hasPrefix("connect to 127.0.0.1:\(unanswered.port) ") && $0.contains("a shutdown is waiting")
            },
            "\(activity.lines)"
        )
        await receiver.stop()
    }

    /// Two hosts that never answer, then one up: the shutdown's time is shared out evenly among the hosts of the
    /// round (its deadline counts from the first attempt), so the last host is not left a sliver of it.
    @Test func aShutdownSharesItsTimeEvenlyAmongHostsThatNeverAnswer() async throws {
        let unanswered = [try UnansweredPort(), try UnansweredPort()]
        defer { withExtendedLifetime(unanswered) {} }
        let receiver = try await LineReceiver(group: shutdownBudgetLoop)
        let directory = try TemporaryDirectory(prefix: "client-shutdown-two-blackholes")
        let activity = ActivityLog()
        let client = try clientBehindHostsThatNeverAnswer(
            unanswered,
            then: receiver.port,
            shutdownTimeout: .seconds(9),
            directory: directory,
            activity: activity
        )
        client.start()
        let shutdownFailure = await client.shutdown()
        #expect(shutdownFailure == nil, "\(String(describing: shutdownFailure)) \(activity.lines)")
        #expect(Set(receiver.lines) == jsonLines(0..<50))
        // Each gets a third of the 9 s (the second a little less, as it starts a little after the first's share):
        // shared out from the whole timeout at each attempt instead, the second would get 4.5 s and the last 1.5 s.
        for port in unanswered.map(\.port) {
            let line = activity.lines.first { $0.hasPrefix("connect to 127.0.0.1:\(port) ") }
            let share = line?.firstMatch(of: /no answer within ([0-9.]+) s/).flatMap { Double($0.1) }
            #expect(share.map { $0 > 1 && $0 <= 3 } == true, "\(activity.lines)")
        }
        await receiver.stop()
    }

    /// Every host refusing: one round of attempts, each host once, then the backoff — never a busy loop.
    @Test func whenEveryHostRefusesEachIsTriedOnceThenTheClientBacksOff() async throws {
        let refusing = try RefusingPort.make(count: 3)
        defer { withExtendedLifetime(refusing) {} }
        let directory = try TemporaryDirectory(prefix: "client-all-refuse")
        let activity = ActivityLog()
        let client = try clientOfTwoHosts(
            refusing[0].port,
            then: refusing[1].port,
            directory: directory,
            activity: activity
        ) { $0.hosts.append(.init(host: "127.0.0.1", port: refusing[2].port)) }
        try client.spool.append(jsonRecord(1))
        client.start()
        #expect(await activity.wait(for: "reconnecting in"))
        // A flush during the backoff connects at once, and tries every host once too; it is told none took it.
        let error = await #expect(throws: LogstashError.self) { try await client.flush() }
        #expect(
            error?.message.hasPrefix(
                "not delivered: none of the 3 hosts could be connected to (the last: 127.0.0.1:\(refusing[2].port) "
            ) == true,
            "\(String(describing: error))"
        )
        let failures = activity.lines.filter { $0.hasPrefix("connect to ") && $0.contains(" failed") }
        let ports = refusing.map(\.port)
        #expect(failures.count == 6, "\(activity.lines)")
        for (index, line) in failures.enumerated() {
            #expect(line.hasPrefix("connect to 127.0.0.1:\(ports[index % 3]) "), "\(activity.lines)")
            #expect(line.contains("reconnecting in") == (index % 3 == 2), "\(activity.lines)")
        }
        await client.shutdown()
        #expect(client.spool.counterSnapshot.queuedRecords == 1)
    }

    @Test func anUnresolvableHostIsAConnectErrorAndShutdownDoesNotHang() async throws {
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(port: 3515, directory: directory, activity: activity) {
            $0.host = "my.logstash.endpoint.invalid"
        }
        client.start()
        try client.spool.append(jsonRecord(1))
        #expect(await activity.wait(for: "failed"))
        #expect(activity.contains("reconnecting in"))
        await client.shutdown()
        #expect(client.spool.counterSnapshot.queuedRecords == 1)
    }

    @Test func activityLinesNeverContainRecordContent() async throws {
        let receiver = try await LineReceiver()
        let directory = try TemporaryDirectory(prefix: "client")
        let activity = ActivityLog()
        let client = try makeClient(port: receiver.port, directory: directory, activity: activity)
        client.start()
        try client.spool.append(Array(#"{"token":"SECRET-TOKEN","message":"x"}"#.utf8))
        try await client.flush()
        await client.shutdown()
        #expect(!activity.lines.isEmpty)
        #expect(activity.lines.allSatisfy { !$0.contains("SECRET-TOKEN") })
        await receiver.stop()
    }
}
