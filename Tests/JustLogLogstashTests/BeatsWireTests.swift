import Foundation
import JustLogTestSupport
import Testing

@testable import JustLogLogstash

/// A Beats client on a fresh spool in `directory`, plain TCP to 127.0.0.1:`port`.
func beatsClient(
    port: Int,
    directory: TemporaryDirectory,
    activity: ActivityLog,
    beats: LogstashClient.Transport.Beats = .init(compressionLevel: 3, initialWindow: 10, maxWindow: 100),
    change: (inout LogstashClient.Configuration) -> Void = { _ in }
) throws -> LogstashClient {
    try makeClient(port: port, directory: directory, activity: activity) { configuration in
        configuration.transport = .beats(beats)
        change(&configuration)
    }
}

/// A Beats client that load-balances between 127.0.0.1:`first` and 127.0.0.1:`second`, on a fresh spool in
/// `directory`.
/// The text of the error a flush of `client` fails with, which says the events were "not delivered" — or, when it
/// said done instead, an issue recorded with `done`, and "".
func failedFlush(of client: LogstashClient, _ done: Comment) async -> String {
    do {
        try await client.flush()
        Issue.record(done)
        return ""
    } catch {
        #expect("\(error)".contains("not delivered"), "\(error)")
        return "\(error)"
    }
}

func loadBalancedBeatsClient(
    ports first: Int,
    _ second: Int,
    directory: TemporaryDirectory,
    activity: ActivityLog,
    beats: LogstashClient.Transport.Beats = .init(compressionLevel: 3, initialWindow: 10, maxWindow: 100),
    change: (inout LogstashClient.Configuration) -> Void = { _ in }
) throws -> LogstashClient {
    try beatsClient(port: first, directory: directory, activity: activity, beats: beats) { configuration in
        configuration.hosts.append(.init(host: "127.0.0.1", port: second))
        configuration.loadBalance = true
        change(&configuration)
    }
}

private func eventID(_ payload: String) -> String? {
    payload.range(of: #""event_id":""#).map { String(payload[$0.upperBound...].prefix { $0 != "\"" }) }
}

/// The Lumberjack v2 client on the wire, against a server that misbehaves on demand (FakeBeatsServer).
@Suite(.serialized) struct BeatsWireTests {
    @Test func aPartialAckThenACloseResendsOnlyTheUnacknowledgedRest() async throws {
        let server = try await FakeBeatsServer { window in
            window.connection == 1 ? [.ack(4), .close] : [.ack(UInt32(window.events.count))]
        }
        let directory = try TemporaryDirectory(prefix: "beats-partial")
        let activity = ActivityLog()
        let client = try beatsClient(port: server.port, directory: directory, activity: activity)
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        // A flush fails with the reason when the connection is lost; the records are resent by themselves.
        #expect(await eventually(timeout: .seconds(120)) { client.spool.counterSnapshot.queuedRecords == 0 })
        await client.shutdown()
        await server.stop()
        let first = try #require(server.windows.first)
        #expect(first.events.map(\.sequence) == Array(1...10))
        let resent = server.windows.filter { $0.connection == 2 }.flatMap {
            $0.events.compactMap { eventID($0.payload) }
        }
        #expect(resent == (4..<10).map { "e\($0)" }, "the 4 acknowledged events are not sent again")
        #expect(client.spool.counterSnapshot.queuedRecords == 0)
        #expect(activity.contains("6 unacknowledged events will be resent"))
    }

    @Test func aServerThatClosesWithoutAnAckGetsTheWholeWindowAgain() async throws {
        let server = try await FakeBeatsServer { window in
            window.connection == 1 ? [.close] : [.ack(UInt32(window.events.count))]
        }
        let directory = try TemporaryDirectory(prefix: "beats-noack")
        let activity = ActivityLog()
        let client = try beatsClient(port: server.port, directory: directory, activity: activity)
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        // A flush fails with the reason when the connection is lost; the records are resent by themselves.
        #expect(await eventually(timeout: .seconds(120)) { client.spool.counterSnapshot.queuedRecords == 0 })
        await client.shutdown()
        await server.stop()
        let ids = server.payloads.compactMap(eventID)
        #expect(Set(ids) == Set((0..<10).map { "e\($0)" }))
        #expect(ids.count == 20, "sent twice: nothing was acknowledged the first time")
        #expect(
            server.windows.filter { $0.connection == 2 }.first?.events.count == 5,
            "the window halved after the failure"
        )
    }

    @Test func keepAliveAcksOfZeroHoldTheConnectionPastTheAckTimeout() async throws {
        // ACK timeout 3 s; the server takes 5 s, sending `2A 0` every 250 ms meanwhile. (With a timeout of 1 s,
        // a stall of 0.75 s of the event loops the whole Logstash suite shares, or of the ThreadSanitizer run, would
        // time the window out between two keep-alives: the margin is now 2.75 s, and the wait still outlasts it.)
        let server = try await FakeBeatsServer { window in
            Array(repeating: [FakeBeatsServer.Reply.ack(0), .pause(.milliseconds(250))], count: 20).flatMap { $0 }
                + [.ack(UInt32(window.events.count))]
        }
        let directory = try TemporaryDirectory(prefix: "beats-keepalive")
        let activity = ActivityLog()
        let client = try beatsClient(
            port: server.port,
            directory: directory,
            activity: activity,
            beats: .init(initialWindow: 10, maxWindow: 10, ackTimeout: .seconds(3))
        )
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        try await client.flush()
        await client.shutdown()
        await server.stop()
        #expect(server.connections == 1, "no timeout: \(activity.lines)")
        #expect(server.payloads.count == 10)
    }

    @Test func silenceLongerThanTheAckTimeoutResendsTheWindowOnANewConnection() async throws {
        // ACK timeout 2 s: it also bounds the second connection's ack, which a stall of the shared event loops (or
        // of the ThreadSanitizer run) longer than the timeout would turn into a third connection.
        let server = try await FakeBeatsServer { window in
            window.connection == 1 ? [] : [.ack(UInt32(window.events.count))]
        }
        let directory = try TemporaryDirectory(prefix: "beats-silent")
        let activity = ActivityLog()
        let client = try beatsClient(
            port: server.port,
            directory: directory,
            activity: activity,
            beats: .init(initialWindow: 10, maxWindow: 10, ackTimeout: .seconds(2))
        )
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        #expect(await activity.wait(for: "acknowledged nothing for 2.0 s"))
        try await client.flush()
        await client.shutdown()
        await server.stop()
        #expect(server.connections == 2)
        #expect(client.spool.counterSnapshot.queuedRecords == 0)
    }

    @Test func garbageInsteadOfAnAckIsReportedAndForgetsNothing() async throws {
        let server = try await FakeBeatsServer { _ in [.raw(Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))] }
        let directory = try TemporaryDirectory(prefix: "beats-garbage")
        let activity = ActivityLog()
        let client = try beatsClient(port: server.port, directory: directory, activity: activity)
        for index in 0..<5 { try client.spool.append(jsonRecord(index)) }
        client.start()
        #expect(await activity.wait(for: "not a Lumberjack v2 frame"))
        #expect(activity.contains("beats input"), "says what to check: \(activity.lines)")
        await client.shutdown()
        await server.stop()
        #expect(client.spool.counterSnapshot.queuedRecords == 5)
    }

    /// A collector never compresses its ACKs: one that does (a bomb of nested compressed frames asked the client
    /// for gigabytes on its event loop — review, helper-53) is refused before anything is inflated, the connection
    /// closed, and the window sent again on the next.
    @Test func aCompressedAnswerIsRefusedUninflatedAndTheWindowSentAgain() async throws {
        let server = try await FakeBeatsServer { window in
            let ack = LumberjackEncoder.ack(UInt32(window.events.count))
            return window.connection == 1
                ? [.raw(LumberjackEncoder.compressed(ack, level: 1))] : [.ack(UInt32(window.events.count))]
        }
        let directory = try TemporaryDirectory(prefix: "beats-compressed-ack")
        let activity = ActivityLog()
        let client = try beatsClient(port: server.port, directory: directory, activity: activity)
        for index in 0..<5 { try client.spool.append(jsonRecord(index)) }
        client.start()
        #expect(await activity.wait(for: "a compressed frame where only ACK frames are expected"))
        try await client.flush()
        await client.shutdown()
        await server.stop()
        #expect(server.connections == 2)
        #expect(client.spool.counterSnapshot.queuedRecords == 0)
    }

    @Test(arguments: [0, 3])
    func compressedWindowsAreSmallerOnTheWireAndCarryTheSameEvents(level: Int) async throws {
        let server = try await FakeBeatsServer { [.ack(UInt32($0.events.count))] }
        let directory = try TemporaryDirectory(prefix: "beats-compressed")
        let activity = ActivityLog()
        let client = try beatsClient(
            port: server.port,
            directory: directory,
            activity: activity,
            beats: .init(compressionLevel: level, initialWindow: 100, maxWindow: 100)
        )
        for index in 0..<100 { try client.spool.append(jsonRecord(index, padding: 200)) }
        client.start()
        try await client.flush()
        await client.shutdown()
        await server.stop()
        #expect(server.payloads == (0..<100).map { String(decoding: jsonRecord($0, padding: 200), as: UTF8.self) })
        #expect(server.windows.allSatisfy { $0.compressed == (level > 0) })
        let wire = server.bytesReceived(connection: 1)
        print("beats wire: 100 events of ~260 bytes, \(wire) bytes on the wire at compression level \(level)")
        if level > 0 { #expect(wire < 100 * 260 / 4) } else { #expect(wire > 100 * 260) }
    }

    @Test func failoverMovesToTheNextHostWhenTheFirstRefuses() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let server = try await FakeBeatsServer { [.ack(UInt32($0.events.count))] }
        let directory = try TemporaryDirectory(prefix: "beats-failover")
        let activity = ActivityLog()
        let client = try beatsClient(port: refusing.port, directory: directory, activity: activity) {
            $0.hosts.append(.init(host: "127.0.0.1", port: server.port))
        }
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        try? await client.flush()
        #expect(await activity.wait(for: "failing over from 127.0.0.1:\(refusing.port)"))
        #expect(await eventually(timeout: .seconds(120)) { client.spool.counterSnapshot.queuedRecords == 0 })
        await client.shutdown()
        await server.stop()
        #expect(Set(server.payloads.compactMap(eventID)) == Set((0..<10).map { "e\($0)" }))
        #expect(activity.contains("connected to 127.0.0.1:\(server.port) (plain TCP, Beats)"))
    }

    /// The first of two hosts refusing: a flush, then a shutdown, deliver to the second at once (the backoff, an
    /// hour here, comes only after every host failed); before, the flush failed and the shutdown sent nothing.
    @Test func aFlushAndAShutdownMoveToTheNextHostAtOnceWhenTheFirstRefuses() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let server = try await FakeBeatsServer { [.ack(UInt32($0.events.count))] }
        let directory = try TemporaryDirectory(prefix: "beats-next-host")
        let activity = ActivityLog()
        let client = try clientOfTwoHosts(refusing.port, then: server.port, directory: directory, activity: activity) {
            $0.transport = .beats(.init(compressionLevel: 3, initialWindow: 10, maxWindow: 100))
        }
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        try await client.flush()
        for index in 10..<20 { try client.spool.append(jsonRecord(index)) }
        let shutdownFailure = await client.shutdown()
        #expect(shutdownFailure == nil, "\(String(describing: shutdownFailure)) \(activity.lines)")
        await server.stop()
        #expect(client.spool.counterSnapshot.queuedRecords == 0)
        #expect(Set(server.payloads.compactMap(eventID)) == Set((0..<20).map { "e\($0)" }))
        #expect(!activity.contains("reconnecting in"), "\(activity.lines)")
    }

    /// The window sent on connecting asked for a timer at its ACK deadline, which the dispatch timer asked for after it
    /// replaced (the transport keeps the last): a collector that never acknowledged was found at the next dispatch,
    /// here an hour later, instead of after the ACK timeout.
    @Test func aWindowSentOnConnectingThatIsNeverAcknowledgedTimesOutAfterTheAckTimeoutNotTheSendInterval()
        async throws
    {
        let server = try await FakeBeatsServer { _ in [] }
        let directory = try TemporaryDirectory(prefix: "beats-never-acks")
        let activity = ActivityLog()
        let client = try beatsClient(
            port: server.port,
            directory: directory,
            activity: activity,
            beats: .init(initialWindow: 10, maxWindow: 10, ackTimeout: .seconds(1))
        ) { $0.sendInterval = .seconds(3600) }
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        #expect(await activity.wait(for: "acknowledged nothing for 1", timeout: .seconds(60)))
        await client.shutdown()
        await server.stop()
    }

    @Test func loadBalancedLanesDrainWhatIsQueuedWhenShutDownRightAfterStarting() async throws {
        let first = try await FakeBeatsServer { [.ack(UInt32($0.events.count))] }
        let second = try await FakeBeatsServer { [.ack(UInt32($0.events.count))] }
        let directory = try TemporaryDirectory(prefix: "beats-lanes-drain")
        let activity = ActivityLog()
        let client = try loadBalancedBeatsClient(
            ports: first.port,
            second.port,
            directory: directory,
            activity: activity
        ) {
            $0.sendInterval = .seconds(3600)
        }
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        // No wait: a shutdown that reaches a lane before the lane has started must still send and close.
        let failure = await client.shutdown()
        #expect(failure == nil, "\(String(describing: failure))")
        #expect(client.spool.counterSnapshot.queuedRecords == 0)
        await first.stop()
        await second.stop()
        let arrived = Set((first.payloads + second.payloads).compactMap(eventID))
        #expect(arrived == Set((0..<10).map { "e\($0)" }))
    }

    /// A lane's flush was done once the windows *it* held were acknowledged, judged by the end of the latest one: a
    /// lane with its own later window acknowledged that took over a window another lane had let go (its collector
    /// closed) said done at that window's first partial ACK, and `flush()` returned with events unacknowledged
    /// (review, helper-53). Now the flush goes on until every event before it is acknowledged — also when the
    /// collector that let the window go is gone for good, so that its lane's flush fails (review, helper-58).
    @Test(arguments: [false, true])
    func aLoadBalancedFlushWaitsForAWindowAnotherLaneLetGo(collectorGone: Bool) async throws {
        final class Shared: @unchecked Sendable {
            private let lock = NSLock()
            private var sends: [Int] = []
            private var open = false
            /// Notes that `server` got the window of e0; returns how many times it came.
            func sent(to server: Int) -> Int {
                lock.withLock {
                    sends.append(server)
                    return sends.count
                }
            }
            var count: Int { lock.withLock { sends.count } }
            var firstServer: Int? { lock.withLock { sends.first } }
            func openGate() { lock.withLock { open = true } }
            var isOpen: Bool { lock.withLock { open } }
        }
        // The window of e0–e4: the first time, its collector closes without an ACK; the second time — on the lane
        // whose own window of e5–e9 was acknowledged — it is acknowledged in two steps, the first once the flush
        // waits.
        let shared = Shared()
        func script(_ server: Int) -> @Sendable (FakeBeatsServer.Window) -> [FakeBeatsServer.Reply] {
            { window in
                let count = UInt32(window.events.count)
                guard window.events.first.flatMap({ eventID($0.payload) }) == "e0" else { return [.ack(count)] }
                return shared.sent(to: server) == 1
                    ? [.pause(.milliseconds(300)), .close]
                    : [.waitUntil { shared.isOpen }, .ack(2), .pause(.seconds(2)), .ack(count)]
            }
        }
        let servers = [try await FakeBeatsServer(script: script(0)), try await FakeBeatsServer(script: script(1))]
        let directory = try TemporaryDirectory(prefix: "beats-lanes-flush")
        defer { directory.remove() }
        let activity = ActivityLog()
        let client = try loadBalancedBeatsClient(
            ports: servers[0].port,
            servers[1].port,
            directory: directory,
            activity: activity,
            beats: .init(compressionLevel: 0, initialWindow: 5, maxWindow: 5)
        ) {
            $0.sendInterval = .milliseconds(50)
            // The lane whose collector closed stays away: the other one takes its window.
            $0.backoffMinimum = .seconds(60)
            $0.backoffMaximum = .seconds(60)
        }
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        #expect(await eventually(timeout: .seconds(60)) { shared.count >= 2 })
        if collectorGone, let gone = shared.firstServer { await servers[gone].stop() }
        let flush = Task { try await client.flush() }
        #expect(await eventually(timeout: .seconds(60)) { await client.pendingFlushes().client >= 1 })
        try await Task.sleep(for: .milliseconds(100))
        shared.openGate()
        try await flush.value
        #expect(client.spool.counterSnapshot.queuedRecords == 0, "the flush said done with events unacknowledged")
        await client.shutdown()
        for server in servers { await server.stop() }
        let arrived = Set(servers.flatMap(\.payloads).compactMap(eventID))
        #expect(arrived == Set((0..<10).map { "e\($0)" }))
    }

    /// A host that is down waits for its backoff's timer once a flush has cut one short: a load-balanced flush waited
    /// for it — a minute here — though the other host had everything acknowledged at once (review, helper-59). A
    /// lane has a second a round; the flush is done when everything before it is acknowledged.
    @Test func aLoadBalancedFlushDoesNotWaitForTheBackoffOfAHostThatIsDown() async throws {
        let down = try RefusingPort()
        defer { withExtendedLifetime(down) {} }
        let live = try await FakeBeatsServer { [.ack(UInt32($0.events.count))] }
        let directory = try TemporaryDirectory(prefix: "beats-lanes-down")
        defer { directory.remove() }
        let activity = ActivityLog()
        let client = try loadBalancedBeatsClient(ports: down.port, live.port, directory: directory, activity: activity)
        {
            $0.backoffMinimum = .seconds(60)
            $0.backoffMaximum = .seconds(60)
        }
        client.start()
        for round in 0..<3 {
            for index in 0..<10 { try client.spool.append(jsonRecord(round * 10 + index)) }
            let start = ContinuousClock.now
            try await client.flush()
            #expect(client.spool.counterSnapshot.queuedRecords == 0)
            let took = start.duration(to: .now)
            #expect(took < .seconds(30), "flush \(round + 1) took \(took): it waited for the backoff of the host down")
        }
        await client.shutdown()
        await live.stop()
        #expect(Set(live.payloads.compactMap(eventID)) == Set((0..<30).map { "e\($0)" }))
    }

    /// While every host is still connecting (a connect that takes seconds, a slow TLS handshake), a load-balanced
    /// flush waits for the connects, and fails with their reason if they fail — not after three rounds of a second
    /// with "no connection takes them" (review, helper-60), and not with a round's own cut-off for a reason.
    @Test func aLoadBalancedFlushWaitsForHostsStillConnectingAndFailsWithTheirReason() async throws {
        let (first, second) = (try UnansweredPort(), try UnansweredPort())
        defer { withExtendedLifetime((first, second)) {} }
        let directory = try TemporaryDirectory(prefix: "beats-lanes-connecting")
        defer { directory.remove() }
        let activity = ActivityLog()
        let client = try loadBalancedBeatsClient(
            ports: first.port,
            second.port,
            directory: directory,
            activity: activity
        ) {
            $0.connectTimeout = .seconds(6)
        }
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        let error = await failedFlush(of: client, "the flush said done with no collector connected")
        #expect(!error.contains("no connection takes them"), "\(error)")
        #expect(!error.contains("part of a load-balanced flush round"), "\(error)")
        #expect(client.spool.counterSnapshot.queuedRecords == 10)
        await client.shutdown()
    }

    /// Every host down, their reconnects at different times (a flush during the outage has used the one early
    /// reconnect each, and the backoffs' jitter spreads them): each lane's part of a round may then fail in a round
    /// of its own. The flush fails with their reason once every lane has failed since the events last moved (review,
    /// helper-61: it went on in rounds until two reconnects happened to fail in the same second). The jitter decides
    /// whether this run's reconnects fall in different rounds: the test holds either way, and shows the case only
    /// when they do.
    @Test func aLoadBalancedFlushFailsOnceEveryHostFailedThoughInDifferentRounds() async throws {
        let (first, second) = (try RefusingPort(), try RefusingPort())
        defer { withExtendedLifetime((first, second)) {} }
        let directory = try TemporaryDirectory(prefix: "beats-lanes-down-apart")
        defer { directory.remove() }
        let activity = ActivityLog()
        let client = try loadBalancedBeatsClient(
            ports: first.port,
            second.port,
            directory: directory,
            activity: activity
        ) {
            $0.backoffMinimum = .seconds(4)
            $0.backoffMaximum = .seconds(4)
        }
        for index in 0..<10 { try client.spool.append(jsonRecord(index)) }
        client.start()
        // The first flushes fail at once (the connects at the start, then each lane's early reconnect).
        for _ in 0..<2 { await #expect(throws: (any Error).self) { try await client.flush() } }
        let start = ContinuousClock.now
        _ = await failedFlush(of: client, "the flush said done with every collector down")
        let took = start.duration(to: .now)
        #expect(took < .seconds(30), "the flush took \(took)")
        #expect(client.spool.counterSnapshot.queuedRecords == 10)
        await client.shutdown()
    }

    @Test func theUntrustedServerWarningIsGivenOnceForAllLoadBalancedHosts() async throws {
        let (first, second) = (try RefusingPort(), try RefusingPort())
        defer { withExtendedLifetime((first, second)) {} }
        let directory = try TemporaryDirectory(prefix: "beats-lanes-warning")
        let activity = ActivityLog()
        let client = try loadBalancedBeatsClient(
            ports: first.port,
            second.port,
            directory: directory,
            activity: activity
        ) {
            $0.useTLS = true
            $0.allowUntrustedServer = true
        }
        client.start()
        // Both lanes started (each tried its host) before the warnings are counted.
        #expect(await activity.wait(for: "connecting to 127.0.0.1:\(first.port)"))
        #expect(await activity.wait(for: "connecting to 127.0.0.1:\(second.port)"))
        let warnings = activity.lines.filter { $0.hasPrefix("WARNING ") }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("127.0.0.1:\(first.port), 127.0.0.1:\(second.port)") == true, "\(warnings)")
        await client.shutdown()
    }
}
