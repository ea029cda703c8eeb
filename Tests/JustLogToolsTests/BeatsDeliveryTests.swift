import Foundation
import JustLogCore
import JustLogLogstash
import JustLogReceivers
import JustLogTestSupport
import JustLogTools
import Testing

// Acknowledged delivery end to end: our Beats client against our Beats receiver — in this process, and as
// `justlog receive --protocol beats` child processes that the tests SIGKILL — next to json_lines in the same run.

/// A json record with an `event_id`, as the other delivery tests send.
func beatsRecord(_ index: Int, tag: String = "e") -> [UInt8] {
    Array(#"{"log_type":"info","message":"m\#(index)","event_id":"\#(tag)\#(index)"}"#.utf8)
}

/// `justlog receive --protocol P --port PORT --out FILE` as a child process; SIGKILLed or stopped by its PID.
final class ReceiverProcess: @unchecked Sendable {
    let process = Process()
    let port: Int

    init(wireProtocol: String, port: Int, out: String, tls: TestCertificates.Pair? = nil) throws {
        self.port = port
        process.executableURL = try justlogProgram()
        var arguments = ["receive", "--protocol", wireProtocol, "--port", "\(port)", "--out", out]
        if let tls { arguments += ["--tls-cert", tls.certificate, "--tls-key", tls.key] }
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Waits until the port accepts connections (or the process died).
    func waitUntilListening() async -> Bool {
        await eventually(timeout: .seconds(120)) { FreePort.isAccepting(port) || !process.isRunning }
            && process.isRunning
    }

    /// SIGKILL, then wait for the process to be gone.
    func kill9() async {
        kill(process.processIdentifier, SIGKILL)
        _ = await eventually(timeout: .seconds(120)) { !process.isRunning }
        process.waitUntilExit()
    }

    /// SIGTERM (the receiver prints its summary and exits), then wait.
    func stop() async {
        kill(process.processIdentifier, SIGTERM)
        if !(await eventually(timeout: .seconds(120)) { !process.isRunning }) { await kill9() }
        process.waitUntilExit()
    }
}

/// The lines of a receiver's `--out` file: how many, and their distinct `event_id`s — read as the file grows (see
/// ``GrowingFile``): the tests poll it every 10 ms while 100,000 events arrive (350,000 lines with json_lines'
/// resends), and reading the whole file each time cost most of a minute of the test pool's two threads, which
/// other suites' waits then timed out behind.
final class ReceivedEventIDs {
    private let file: GrowingFile
    /// Whole lines read so far (a last line still being written is read once it ends).
    private(set) var lines = 0
    private(set) var ids = Set<String>()

    init(_ path: String) { file = GrowingFile(path) }

    /// Reads what was appended since the last call; returns `self`.
    @discardableResult
    func update() -> ReceivedEventIDs {
        let marker = Array(#""event_id":""#.utf8)
        file.forEachNewLine { raw in
            lines += 1
            let line = raw.bindMemory(to: UInt8.self)
            if let found = line.firstRange(of: marker) {
                let idStart = found.upperBound
                let idEnd = line[idStart...].firstIndex(of: UInt8(ascii: "\"")) ?? line.endIndex
                ids.insert(String(decoding: line[idStart..<idEnd], as: UTF8.self))
            }
        }
        return self
    }
}

/// The lines of a receiver's `--out` file, read once: how many, and their distinct `event_id`s.
func receivedEventIDs(_ path: String) -> (lines: Int, ids: Set<String>) {
    let received = ReceivedEventIDs(path).update()
    return (received.lines, received.ids)
}

/// What one kill-and-restart run gave.
struct KillRunResult: CustomStringConvertible {
    var transport: String
    var total: Int
    var lines: Int
    var unique: Int
    var resent: UInt64
    var seconds: Double
    var duplicates: Int { lines - unique }
    var missing: Int { total - unique }
    var description: String {
        "\(transport): \(total) events, receiver SIGKILLed and restarted 5 times: \(lines) lines written, \(unique) distinct, \(missing) lost, \(duplicates) duplicates (client resent \(resent)) in \(String(format: "%.1f", seconds)) s"
    }
}

@Suite(.serialized) struct BeatsDeliveryTests {
    @Test(arguments: [false, true])
    func ourClientDeliversEveryEventOnceToOurReceiver(tls: Bool) async throws {
        let certificates = tls ? try await TestCertificates.make() : nil
        let tally = EventIDTally()
        let receiver = BeatsReceiver(
            configuration: .init(
                tls: certificates.map { .init(certificateFile: $0.goodServer.certificate, keyFile: $0.goodServer.key) }
            ),
            handler: tally.record
        )
        let port = try await receiver.start()
        let folder = try TemporaryDirectory(prefix: "beats-client")
        var configuration = LogstashClient.Configuration(host: "127.0.0.1", port: port)
        configuration.useTLS = tls
        configuration.caFile = certificates?.caFile
        configuration.transport = .beats
        configuration.sendInterval = .milliseconds(100)
        let spool = try LogstashSpool(configuration: .init(directory: folder.path))
        let activity = LockedValue<[String]>([])
        let client = try LogstashClient(
            configuration: configuration,
            spool: spool,
            activity: { line in activity.withLock { $0.append(line) } }
        )
        client.start()
        let total = 20_000
        for index in 0..<total {
            try spool.append(beatsRecord(index))
            client.recordsAppended()
            if index % 1000 == 0 { await Task.yield() }
        }
        try await client.flush()
        let counters = await client.counters()
        await client.shutdown()
        await receiver.stop()
        #expect(tally.snapshot.uniqueEventIDs == total)
        #expect(tally.snapshot.duplicates == 0)
        #expect(counters.acknowledged == UInt64(total))
        #expect(spool.counterSnapshot.queuedRecords == 0, "everything acknowledged is forgotten")
        #expect(activity.current.contains { $0.contains("(\(tls ? "TLS" : "plain TCP"), Beats)") })
    }

    @Test func theReceiverAcknowledgesOnlyWhatItCouldWrite() async throws {
        // --out /dev/full: every write fails with ENOSPC; nothing may be acknowledged.
        let folder = try TemporaryDirectory(prefix: "beats-out")
        for (out, expectAck) in [("/dev/full", false), (folder.file("out.jsonl"), true)] {
            _ = try await withReceiveTool({
                $0.wireProtocol = .beats
                $0.outFile = out
            }) { port, _, errors in
                let socket = try PlainSocket(port: port)
                defer { socket.close() }
                let records = (0..<3).map { beatsRecord($0) + [UInt8(ascii: "\n")] }.flatMap { $0 }
                try socket.send(
                    LumberjackEncoder.window(
                        of: SpoolBatch(
                            bytes: records,
                            recordCount: 3,
                            start: .init(segment: 1, offset: 0),
                            end: .init(segment: 1, offset: 1)
                        ),
                        compressionLevel: 3
                    )
                )
                let (bytes, closed) = await socket.receive(count: 6)
                if expectAck {
                    #expect(bytes == LumberjackEncoder.ack(3))
                    #expect(receivedEventIDs(out).ids == ["e0", "e1", "e2"])
                } else {
                    #expect(bytes.isEmpty && closed, "no ACK, connection closed: \(bytes)")
                    #expect(
                        await eventually(timeout: .seconds(120)) { errors.text.contains("not acknowledged") },
                        "\(errors.text)"
                    )
                }
            }
        }
    }

    /// The issue's measurement: the receiver SIGKILLed and restarted 5 times during 100,000 events, over both
    /// transports in the same run. Beats loses nothing and duplicates at most one window per kill; json_lines
    /// loses nothing either (its resend window covers this receiver) but resends far more.
    @Test func receiverKilledFiveTimesDuringAHundredThousandEventsLosesNothingWithEitherTransport() async throws {
        let folder = try TemporaryDirectory(prefix: "beats-kill")
        let maxWindow = 2048
        var results: [KillRunResult] = []
        for transport in [LogstashClient.Transport.jsonLines, .beats(.init(maxWindow: maxWindow))] {
            results.append(try await killAndRestartRun(transport: transport, folder: folder, total: 100_000, kills: 5))
        }
        for result in results { print("kill/restart: \(result)") }
        for result in results {
            #expect(result.missing == 0, "\(result)")
        }
        let beats = results[1]
        #expect(beats.duplicates <= 5 * maxWindow, "at most one window per kill: \(beats)")
    }

    @Test func failoverToASecondReceiverWhenTheFirstIsKilledLosesNothing() async throws {
        let folder = try TemporaryDirectory(prefix: "beats-failover")
        // Held for the whole test: the client keeps trying a killed receiver's port, which must not become
        // another test's server meanwhile.
        let held = try RefusingPort.make(count: 2)
        defer { withExtendedLifetime(held) {} }
        let ports = held.map(\.port)
        let outs = [folder.file("a.jsonl"), folder.file("b.jsonl")]
        let first = try ReceiverProcess(wireProtocol: "beats", port: ports[0], out: outs[0])
        let second = try ReceiverProcess(wireProtocol: "beats", port: ports[1], out: outs[1])
        #expect(await first.waitUntilListening())
        #expect(await second.waitUntilListening())
        var configuration = LogstashClient.Configuration(hosts: ports.map { .init(host: "127.0.0.1", port: $0) })
        configuration.useTLS = false
        configuration.transport = .beats
        configuration.sendInterval = .milliseconds(50)
        configuration.backoffMinimum = .milliseconds(20)
        configuration.backoffMaximum = .milliseconds(200)
        let spool = try LogstashSpool(configuration: .init(directory: folder.file("spool")))
        let activity = LockedValue<[String]>([])
        let client = try LogstashClient(
            configuration: configuration,
            spool: spool,
            activity: { line in activity.withLock { $0.append(line) } }
        )
        client.start()
        // Half is spooled at once; the first receiver is killed while that stream is flowing, then the other half is
        // spooled — on a loaded machine the first half may all have arrived before the kill (the test's task ran
        // late: 50,000 of 50,000 to the first receiver in one full run), and the second must then go to the second.
        let total = 50_000
        func spoolRecords(_ range: Range<Int>) async throws {
            for index in range {
                try spool.append(beatsRecord(index))
                client.recordsAppended()
                if index % 2000 == 0 { await Task.yield() }
            }
        }
        try await spoolRecords(0..<(total / 2))
        let (a, b) = (ReceivedEventIDs(outs[0]), ReceivedEventIDs(outs[1]))
        #expect(await eventually(timeout: .seconds(60)) { a.update().lines > 2000 })
        await first.kill9()
        try await spoolRecords((total / 2)..<total)
        let all = Set((0..<total).map { "e\($0)" })
        let arrived = await eventually(timeout: .seconds(60)) {
            // (the union, of tens of thousands, only once the two could hold them all)
            a.update().ids.count + b.update().ids.count >= total && a.ids.union(b.ids).count == total
        }
        await client.shutdown()
        await second.stop()
        a.update()
        b.update()
        #expect(arrived)
        #expect(all.subtracting(a.ids.union(b.ids)).isEmpty)
        #expect(b.lines > 0, "delivery moved to the second receiver")
        #expect(activity.current.contains { $0.contains("failing over from 127.0.0.1:\(ports[0])") })
        print(
            "failover: \(total) events, \(a.lines) to the first receiver before its SIGKILL, \(b.lines) to the second, \(a.lines + b.lines - total) duplicates"
        )
    }

    @Test func loadBalancingSendsToBothReceiversAndLosesNothingWhenOneIsKilled() async throws {
        let folder = try TemporaryDirectory(prefix: "beats-balance")
        // Held for the whole test: the client keeps trying a killed receiver's port, which must not become
        // another test's server meanwhile.
        let held = try RefusingPort.make(count: 2)
        defer { withExtendedLifetime(held) {} }
        let ports = held.map(\.port)
        let outs = [folder.file("a.jsonl"), folder.file("b.jsonl")]
        let first = try ReceiverProcess(wireProtocol: "beats", port: ports[0], out: outs[0])
        let second = try ReceiverProcess(wireProtocol: "beats", port: ports[1], out: outs[1])
        #expect(await first.waitUntilListening())
        #expect(await second.waitUntilListening())
        var configuration = LogstashClient.Configuration(hosts: ports.map { .init(host: "127.0.0.1", port: $0) })
        configuration.useTLS = false
        configuration.transport = .beats(.init(maxWindow: 500))
        configuration.loadBalance = true
        configuration.sendInterval = .milliseconds(50)
        configuration.backoffMinimum = .milliseconds(20)
        configuration.backoffMaximum = .milliseconds(200)
        let spool = try LogstashSpool(configuration: .init(directory: folder.file("spool")))
        let client = try LogstashClient(configuration: configuration, spool: spool)
        client.start()
        let total = 50_000
        for index in 0..<total {
            try spool.append(beatsRecord(index))
            client.recordsAppended()
            if index % 2000 == 0 { await Task.yield() }
        }
        let (a, b) = (ReceivedEventIDs(outs[0]), ReceivedEventIDs(outs[1]))
        #expect(
            await eventually(timeout: .seconds(60)) { a.update().lines > 2000 && b.update().lines > 2000 },
            "both receivers get events"
        )
        await first.kill9()
        let arrived = await eventually(timeout: .seconds(60)) {
            // (the union, of tens of thousands, only once the two could hold them all)
            a.update().ids.count + b.update().ids.count >= total && a.ids.union(b.ids).count == total
        }
        try? await client.flush()
        let counters = await client.counters()
        await client.shutdown()
        await second.stop()
        a.update()
        b.update()
        #expect(arrived)
        #expect(Set((0..<total).map { "e\($0)" }).subtracting(a.ids.union(b.ids)).isEmpty)
        #expect(spool.counterSnapshot.queuedRecords == 0, "every window acknowledged by one of them")
        print(
            "load balancing: \(total) events, \(a.lines) to the first receiver (SIGKILLed mid-stream), \(b.lines) to the second, \(a.lines + b.lines - total) duplicates; \(counters.acknowledged) acknowledged"
        )
    }

    private func killAndRestartRun(
        transport: LogstashClient.Transport,
        folder: TemporaryDirectory,
        total: Int,
        kills: Int
    ) async throws -> KillRunResult {
        let name = transport.isBeatsForTests ? "beats" : "json_lines"
        // Held for the whole test: between a kill and the restart, the port must not become another test's server.
        let held = try RefusingPort()
        defer { withExtendedLifetime(held) {} }
        let port = held.port
        let out = folder.file("\(name).jsonl")
        var receiver = try ReceiverProcess(wireProtocol: name, port: port, out: out)
        #expect(await receiver.waitUntilListening())
        // The receivers append to `out`, each after the last.
        let received = ReceivedEventIDs(out)
        var configuration = LogstashClient.Configuration(host: "127.0.0.1", port: port)
        configuration.useTLS = false
        configuration.transport = transport
        configuration.sendInterval = .milliseconds(50)
        configuration.backoffMinimum = .milliseconds(20)
        configuration.backoffMaximum = .milliseconds(200)
        configuration.maxBatchRecords = 200
        let spool = try LogstashSpool(configuration: .init(directory: folder.file("\(name).spool")))
        let client = try LogstashClient(configuration: configuration, spool: spool)
        client.start()
        let start = ContinuousClock.now
        let chunk = total / (kills + 1)
        var next = 0
        for round in 0...kills {
            let end = round == kills ? total : next + chunk
            for index in next..<end {
                try spool.append(beatsRecord(index))
                client.recordsAppended()
                if index % 2000 == 0 { await Task.yield() }
            }
            next = end
            if round < kills {
                // Let some of it arrive, then SIGKILL the receiver mid-stream and start it again on the same port.
                let before = received.update().lines
                _ = await eventually(timeout: .seconds(60)) { received.update().lines > before + 1000 }
                await receiver.kill9()
                receiver = try ReceiverProcess(wireProtocol: name, port: port, out: out)
                #expect(await receiver.waitUntilListening())
            }
        }
        _ = await eventually(timeout: .seconds(120)) { received.update().ids.count >= total }
        let seconds =
            Double((ContinuousClock.now - start).components.attoseconds) / 1e18
            + Double((ContinuousClock.now - start).components.seconds)
        let counters = await client.counters()
        await client.shutdown()
        await receiver.stop()
        received.update()
        return KillRunResult(
            transport: name,
            total: total,
            lines: received.lines,
            unique: received.ids.count,
            resent: counters.resent,
            seconds: seconds
        )
    }
}

extension LogstashClient.Transport {
    var isBeatsForTests: Bool { beatsSettings != nil }
}
