import Foundation
import JustLogCore
import JustLogLogstash
import JustLogTestSupport
import Testing

/// Collectors that misbehave (issue #7, faults 3 and 4): the client must never let the spool forget what the
/// collector may not have read.
@Suite(.serialized) struct CollectorFaultTests {
    /// Appends `count` records of about 400 bytes and tells the client.
    private func append(_ count: Int, to client: LogstashClient) async throws {
        for index in 0..<count {
            try client.spool.append(jsonRecord(index, padding: 350))
            client.recordsAppended()
            if index % 2000 == 0 { await Task.yield() }
        }
    }

    /// Fault 3: the collector never reads and half-closes while we close. Its FIN used to count as proof that it
    /// read everything: shutdown said ok, the cursor moved, and the next run delivered 0 of 2,000.
    @Test func aCollectorThatHalfClosesWithoutReadingConfirmsNothing() async throws {
        let hostile = try await HostileCollector(.init(halfCloseAfter: .milliseconds(300)))
        let directory = try TemporaryDirectory(prefix: "halfclose")
        let activity = ActivityLog()
        let client = try makeClient(port: hostile.port, directory: directory, activity: activity) {
            $0.sendInterval = .seconds(60)
            $0.shutdownTimeout = .seconds(5)
        }
        client.start()
        try await append(2000, to: client)
        #expect(await activity.wait(for: "connected to"))
        await client.shutdown()
        #expect(
            client.spool.counterSnapshot.queuedRecords == 2000,
            "nothing the collector did not read may be forgotten"
        )
        await hostile.stop()
        client.spool.close()

        // The next run, against a collector that reads, delivers every event.
        let receiver = try await LineReceiver()
        let next = try makeClient(port: receiver.port, directory: directory, activity: activity)
        next.start()
        try await next.flush()
        #expect(await receiver.waitForLines(2000), "received \(receiver.lines.count) of 2000")
        await next.shutdown()
        await receiver.stop()
    }

    /// Fault 4: a collector whose receive buffer is larger than the fixed resend window held what the client had
    /// already forgotten; killed, it lost 143,536 of 200,000 events. Run as root the buffer is 64 MiB
    /// (SO_RCVBUFFORCE); otherwise the largest an ordinary user may ask for (4 MiB, doubled by the kernel).
    @Test func aCollectorWithALargeReceiveBufferNeverHoldsWhatTheSpoolForgot() async throws {
        let root = geteuid() == 0
        let hostile = try await HostileCollector(.init(receiveBuffer: root ? 64 << 20 : 4 << 20))
        let directory = try TemporaryDirectory(prefix: "rcvbuf")
        let activity = ActivityLog()
        let client = try makeClient(port: hostile.port, directory: directory, activity: activity) {
            $0.resendWindowBytes = 1 << 20  // far below the collector's buffer: the measured one must win
        }
        client.start()
        let count = root ? 150_000 : 30_000  // 60 MB or 12 MB: more than the collector's buffer can take
        try await append(count, to: client)
        // Wait until the collector's buffer is full: the client's sent count stops moving.
        var lastSent: UInt64 = 0
        var stableSince = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let sent = await client.counters().sent
            if sent != lastSent {
                lastSent = sent
                stableSince = .now
            }
            if sent > 0, ContinuousClock.now - stableSince > .milliseconds(800) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        print(
            "large receive buffer: \(lastSent) of \(count) records written before the collector's buffer filled; \(client.spool.counterSnapshot.queuedRecords) still spooled"
        )
        #expect(activity.contains("can hold"), "the window was raised to the measured buffers")
        await hostile.killConnections()
        #expect(
            client.spool.counterSnapshot.queuedRecords == count,
            "the collector read nothing, so nothing may be forgotten"
        )
        await client.shutdown()
        await hostile.stop()
    }

    /// json_lines forgets a line only after the connection's resend window more bytes followed it; a window
    /// larger than the spool keeps (its cap less two segments) means a burst longer than the spool drops lines at
    /// the cap, some before they are sent, with the collector up. Seen with the default 64 MiB cap on a host whose
    /// `tcp_rmem` allows 32 MiB. The client says so, once, and what to do.
    @Test func aResendWindowLargerThanTheSpoolKeepsIsWarnedAboutOnce() async throws {
        let hostile = try await HostileCollector(.init(receiveBuffer: 4 << 20))
        let directory = try TemporaryDirectory(prefix: "windowcap")
        let activity = ActivityLog()
        var configuration = LogstashClient.Configuration(host: "127.0.0.1", port: hostile.port)
        configuration.useTLS = false
        configuration.sendInterval = .milliseconds(100)
        configuration.resendWindowBytes = 256 << 10
        let spool = try LogstashSpool(
            configuration: .init(
                directory: directory.path,
                segmentBytes: 64 << 10,
                maxTotalBytes: 1 << 20,
                maxRecordBytes: 16 << 10
            )
        )
        let client = try LogstashClient(
            configuration: configuration,
            spool: spool,
            activity: { activity.append($0) },
            warning: { activity.append("WARNING " + $0) }
        )
        client.start()
        try await append(20_000, to: client)  // ~8 MB through a 1 MiB spool
        #expect(await activity.wait(for: "more than the spool keeps"), "\(activity.lines.suffix(5))")
        let warnings = activity.lines.filter { $0.hasPrefix("WARNING") && $0.contains("more than the spool keeps") }
        #expect(warnings.count == 1, "once")
        #expect(warnings.first?.contains("Raise the spool capacity above") == true)
        #expect(spool.counterSnapshot.droppedRecords > 0, "the cap dropped (and counted) what the window held")
        await client.shutdown()
        await hostile.stop()
    }

    /// "Also seen": `Logger.shutdown()` returned ok after its Logstash close had timed out. A collector that never
    /// reads and never closes makes the graceful close time out; the pipeline's shutdown must say so.
    @Test func aShutdownWhoseCloseTimesOutReportsItAndKeepsTheEventsSpooled() async throws {
        let hostile = try await HostileCollector(.init())
        let directory = try TemporaryDirectory(prefix: "closetimeout")
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: hostile.port)
        client.useTLS = false
        client.sendInterval = .milliseconds(100)
        client.shutdownTimeout = .milliseconds(500)
        let diagnostics = LockedValue<[String]>([])
        let destination = try LogstashDestination(
            configuration: .init(client: client, spoolDirectory: directory.file("spool")),
            diagnostics: DiagnosticSink { line in diagnostics.withLock { $0.append(line) } }
        )
        let pipeline = LogPipeline(routes: [.init(destination)])
        for index in 0..<100 {
            pipeline.submit(
                LogEvent(
                    level: .info,
                    message: "close-\(index)",
                    callSite: .init(file: #fileID, function: #function, line: #line),
                    timestamp: pipeline.now()
                )
            )
        }
        let error = await pipeline.shutdown(timeout: 10)
        #expect(error != nil, "the close timed out, so the shutdown is not ok")
        #expect("\(error.map { "\($0)" } ?? "")".contains("in time"), "\(String(describing: error))")
        #expect(
            diagnostics.withLock { $0 }.contains { $0.contains("100 event(s) stay spooled") },
            "\(diagnostics.withLock { $0 })"
        )
        await hostile.stop()
    }

    /// Fault 5: a collector that half-closes every connection right after accepting it made the client reconnect
    /// at the minimum delay forever, resending everything each time (374 reconnects in 100 s). With a 50 ms minimum
    /// and 400 ms maximum delay, 3 s of that used to be about 50 connections; backing off, it is about 10.
    @Test func aCollectorThatClosesEveryConnectionAtOnceIsBackedOffFrom() async throws {
        let hostile = try await HostileCollector(.init(halfCloseAfter: .zero))
        let directory = try TemporaryDirectory(prefix: "churn")
        let activity = ActivityLog()
        let client = try makeClient(port: hostile.port, directory: directory, activity: activity)
        let start = ContinuousClock.now
        client.start()
        try await append(100, to: client)
        try await Task.sleep(for: .seconds(3))
        let connections = hostile.connections
        // The same rate whatever the load: a busy test pool can stretch the 3 s sleep (17 s seen in CI), and the
        // connections grow with the real time. 20 per 3 s; the old minimum-delay loop made about 50.
        let elapsed = start.duration(to: .now)
        let seconds = max(3, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        let bound = Int(seconds / 3 * 20)
        print(
            "churning collector: \(connections) connections in \(String(format: "%.1f", seconds)) s (at most \(bound))"
        )
        #expect(connections <= bound, "the client reconnected \(connections) times in \(seconds) s")
        #expect(activity.contains("connections in a row right after connecting"))
        await client.shutdown()
        await hostile.stop()
    }

    /// A collector that accepts and then never reads (hung, or a proxy whose backend is gone) kept the connection
    /// forever: the writes stopped completing once the socket buffers were full, and no other host was tried.
    /// Now a write not taken within the write timeout ends the connection, and the next host gets everything.
    @Test func aCollectorThatStopsReadingIsLeftForTheNextHostAfterTheWriteTimeout() async throws {
        let hostile = try await HostileCollector(.init(receiveBuffer: 64 << 10))
        let receiver = try await LineReceiver()
        let directory = try TemporaryDirectory(prefix: "stalled")
        let activity = ActivityLog()
        let client = try makeClient(port: hostile.port, directory: directory, activity: activity) {
            $0.hosts.append(.init(host: "127.0.0.1", port: receiver.port))
            $0.writeTimeout = .seconds(2)
        }
        client.start()
        // About 8 MB: more than our send buffer (at most 4 MiB, tcp_wmem) and the collector's receive buffer hold.
        let total = 20_000
        try await append(total, to: client)
        #expect(await activity.wait(for: "took no write for 2"))
        #expect(await activity.wait(for: "failing over from 127.0.0.1:\(hostile.port)"))
        // The connection lost is named as the one that stalled, and said before the failover.
        let lines = activity.lines
        let lost = lines.firstIndex { $0.contains("took no write for 2") }
        let failover = lines.firstIndex { $0.contains("failing over from 127.0.0.1:\(hostile.port)") }
        #expect(lost.map { lines[$0].hasPrefix("connection to 127.0.0.1:\(hostile.port) ") } == true, "\(lines)")
        #expect(lost != nil && failover != nil && lost! < failover!, "\(lines)")
        #expect(await receiver.waitForLines(total), "received \(receiver.lines.count) of \(total)")
        let expected = Set((0..<total).map { String(decoding: jsonRecord($0, padding: 350), as: UTF8.self) })
        #expect(Set(receiver.lines).isSuperset(of: expected))
        await client.shutdown()
        await hostile.stop()
        await receiver.stop()
    }

    /// The backlog found on connecting is written at once, and its write asked for a timer at its deadline — which
    /// the dispatch timer asked for after it replaced (the transport keeps the last): the stall was found at the next
    /// dispatch, here an hour later, instead of after the write timeout.
    @Test func aStalledWriteOfTheBacklogFoundOnConnectingTimesOutAfterTheWriteTimeoutNotTheSendInterval() async throws {
        let hostile = try await HostileCollector(.init(receiveBuffer: 64 << 10))
        let directory = try TemporaryDirectory(prefix: "stalled-backlog")
        let activity = ActivityLog()
        let client = try makeClient(port: hostile.port, directory: directory, activity: activity) {
            $0.sendInterval = .seconds(3600)
            $0.writeTimeout = .seconds(1)
        }
        // About 8 MB spooled before connecting: more than the socket buffers hold.
        for index in 0..<20_000 {
            try client.spool.append(jsonRecord(index, padding: 350))
            if index % 2000 == 0 { await Task.yield() }
        }
        client.start()
        #expect(await activity.wait(for: "took no write for 1"))
        await client.shutdown()
        await hostile.stop()
    }
}
