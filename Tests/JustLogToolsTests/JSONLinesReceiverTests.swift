import Foundation
import JustLogCore
import JustLogLogstash
import JustLogReceivers
import JustLogTestSupport
import Testing

/// Lines a receiver delivered, in arrival order.
final class ReceivedLines: Sendable {
    private let lines = LockedValue<[JSONLinesReceiver.Line]>([])

    @Sendable func record(_ line: JSONLinesReceiver.Line) { lines.withLock { $0.append(line) } }

    var all: [JSONLinesReceiver.Line] { lines.withLock { $0 } }
    var count: Int { lines.withLock { $0.count } }
}

/// Runs `body` with a started receiver and always stops it.
func withReceiver<T>(
    _ configuration: JSONLinesReceiver.Configuration = .init(),
    handler: @escaping @Sendable (JSONLinesReceiver.Line) -> Void,
    _ body: (JSONLinesReceiver, Int) async throws -> T
) async throws -> T {
    let receiver = JSONLinesReceiver(configuration: configuration, handler: handler)
    let port = try await receiver.start()
    do {
        let result = try await body(receiver, port)
        await receiver.stop()
        return result
    } catch {
        await receiver.stop()
        throw error
    }
}

@Suite struct JSONLinesReceiverTests {
    @Test func plainTCPLinesArriveParsedWithConnectionAndLineNumbers() async throws {
        let received = ReceivedLines()
        try await withReceiver(handler: received.record) { receiver, port in
            #expect(port > 0)
            #expect(receiver.port == port)
            try PlainSocket.send(
                #"{"message":"one","event_id":"a"}"# + "\r\n\n" + #"{"message":"two","n":2}"# + "\n",
                port: port
            )
            #expect(await eventually { received.count == 2 })
            let lines = received.all
            #expect(lines.map(\.connection) == [1, 1])
            // The empty line counts, so numbers match the sender's lines.
            #expect(lines.map(\.lineNumber) == [1, 3])
            #expect(lines[0].text == #"{"message":"one","event_id":"a"}"#)
            #expect(try lines[0].parsed.get() == ["message": "one", "event_id": "a"])
            #expect(try lines[1].parsed.get() == ["message": "two", "n": 2])
            #expect(await eventually { receiver.counters.connections == 1 })
            #expect(receiver.counters.lines == 2)
            #expect(receiver.counters.invalidLines == 0)
        }
    }

    /// Senders that connect and send nothing took every file descriptor of `justlog receive` (~1,000 of them), and
    /// a real sender could not connect (review, helper-72). Past its connection limit a receiver closes what comes;
    /// a connection that sends nothing for its idle timeout is closed (next test).
    @Test func silentConnectionsAreBounded() async throws {
        let received = ReceivedLines()
        var configuration = JSONLinesReceiver.Configuration()
        configuration.maximumConnections = 4
        configuration.idleTimeout = .seconds(3_600)  // (none closed for idleness here, however loaded the machine)
        try await withReceiver(configuration, handler: received.record) { receiver, port in
            var silent = try (0..<4).map { _ in try PlainSocket(port: port) }
            defer { for socket in silent { socket.close() } }
            #expect(await eventually { receiver.counters.connections == 4 })
            // Over the limit: closed at once, its line never read.
            let refused = try PlainSocket(port: port)
            defer { refused.close() }
            try? refused.send(#"{"message":"over the limit"}"# + "\n")
            // (Closed as soon as the receiver's event loop accepts it; a loaded CI run took over 10 s to.)
            #expect(await refused.receive(count: 1, timeout: .seconds(120)).closed, "a fifth connection was served")
            // One gone: room for the next.
            silent.removeLast().close()
            try await Task.sleep(for: .milliseconds(200))
            #expect(
                await eventually(timeout: .seconds(60)) {
                    try? PlainSocket.send(#"{"message":"served"}"# + "\n", port: port)
                    return received.count > 0
                }
            )
            #expect(received.all.allSatisfy { $0.text == #"{"message":"served"}"# }, "\(received.all.map(\.text))")
        }
    }

    /// A connection that sends no line is closed after the idle timeout; one that sent a line is kept however long it
    /// is quiet — closed, a json_lines sender resent everything after every quiet spell (review, helper-73).
    @Test func aConnectionThatSendsNoLineIsClosedWhenIdleAndOneThatDidIsKept() async throws {
        let received = ReceivedLines()
        var configuration = JSONLinesReceiver.Configuration()
        // (Long enough that a loaded machine's event loop reads the sender's line before the timeout fires.)
        configuration.idleTimeout = .seconds(5)
        try await withReceiver(configuration, handler: received.record) { _, port in
            let silent = try PlainSocket(port: port)
            defer { silent.close() }
            let sender = try PlainSocket(port: port)
            defer { sender.close() }
            try sender.send(#"{"message":"one"}"# + "\n")
            #expect(await eventually { received.count == 1 })
            #expect(await silent.receive(count: 1, timeout: .seconds(60)).closed, "kept open")
            // Quiet past the idle timeout: still open, and its next line arrives.
            #expect(await !sender.receive(count: 1, timeout: .seconds(8)).closed, "the sender's connection was closed")
            try sender.send(#"{"message":"two"}"# + "\n")
            #expect(await eventually { received.count == 2 })
        }
    }

    @Test func aLastLineWithoutNewlineIsDeliveredWhenTheConnectionEnds() async throws {
        let received = ReceivedLines()
        try await withReceiver(handler: received.record) { _, port in
            try PlainSocket.send(#"{"a":1}"# + "\n" + #"{"b":2}"#, port: port)
            #expect(await eventually { received.count == 2 })
            #expect(try received.all.last?.parsed.get() == ["b": 2])
        }
    }

    @Test func invalidJSONIsReportedWithItsConnectionAndLineNumber() async throws {
        let received = ReceivedLines()
        try await withReceiver(handler: received.record) { receiver, port in
            try PlainSocket.send(#"{"ok":1}"# + "\n", port: port)
            #expect(await eventually { received.count == 1 })
            try PlainSocket.send(#"{"ok":2}"# + "\n" + #"{"broken": }"# + "\n" + #"{"ok":3}"# + "\n", port: port)
            #expect(await eventually { received.count == 4 })
            let invalid = received.all.filter { if case .failure = $0.parsed { true } else { false } }
            #expect(invalid.count == 1)
            #expect(invalid.first?.connection == 2)
            #expect(invalid.first?.lineNumber == 2)
            #expect(invalid.first?.text == #"{"broken": }"#)
            if case .failure(let error)? = invalid.first?.parsed {
                #expect(error.message.contains("invalid JSON at byte"))
            }
            #expect(receiver.counters.invalidLines == 1)
            #expect(receiver.counters.lines == 4)
        }
    }

    @Test(arguments: [false, true])
    func anOverlongLineIsReportedAndDiscardedUpToTheNextNewline(inPieces: Bool) async throws {
        let received = ReceivedLines()
        try await withReceiver(.init(maxLineBytes: 100), handler: received.record) { receiver, port in
            let long = #"{"message":""# + String(repeating: "x", count: 5000) + #""}"#
            let socket = try PlainSocket(port: port)
            defer { socket.close() }
            if inPieces {
                // The limit is passed in one read, the newline comes in a later one.
                var sent = 0
                for chunk in Array(long.utf8).chunked(by: 700) {
                    try socket.send(chunk)
                    sent += chunk.count
                    #expect(await eventually { receiver.counters.bytes >= sent })
                }
                try socket.send("\n" + #"{"after":true}"# + "\n")
            } else {
                try socket.send(long + "\n" + #"{"after":true}"# + "\n")
            }
            #expect(await eventually { received.count == 2 })
            let lines = received.all
            #expect(lines.map(\.lineNumber) == [1, 2])
            guard case .failure(let error) = lines[0].parsed else {
                Issue.record("the over-long line was not reported")
                return
            }
            #expect(error.message.contains("longer than 100 bytes"))
            #expect(lines[0].raw.count <= 1024)
            #expect(try lines[1].parsed.get() == ["after": true])
            #expect(receiver.counters.invalidLines == 1)
        }
    }

    @Test func aPortInUseGivesAClearError() async throws {
        try await withReceiver(handler: { _ in }) { _, port in
            let second = JSONLinesReceiver(configuration: .init(port: port)) { _ in }
            await #expect {
                try await second.start()
            } throws: { error in
                guard let error = error as? LogstashError else { return false }
                return error.message.contains("port \(port) on 127.0.0.1 is already in use")
                    && error.message.contains("choose another port")
            }
            await second.stop()
        }
    }

    @Test func aMissingCertificateGivesAClearError() async throws {
        let receiver = JSONLinesReceiver(
            configuration: .init(tls: .init(certificateFile: "/nonexistent/cert.pem", keyFile: "/nonexistent/key.pem"))
        ) { _ in }
        await #expect {
            try await receiver.start()
        } throws: { error in
            (error as? LogstashError)?.message.contains("can't read the server certificate /nonexistent/cert.pem")
                == true
        }
        await receiver.stop()
    }

    @Test(.enabled(if: TestCertificates.opensslPath != nil, "openssl is not installed"))
    func tlsRoundTripWithTheLogstashClientCountsEveryEventIDOnce() async throws {
        let certificates = try await TestCertificates.make()
        let tally = EventIDTally()
        let tls = JSONLinesReceiver.TLS(
            certificateFile: certificates.goodServer.certificate,
            keyFile: certificates.goodServer.key
        )
        try await withReceiver(.init(tls: tls), handler: tally.record) { receiver, port in
            let spoolFolder = try TemporaryDirectory(prefix: "receiver-spool")
            var configuration = LogstashClient.Configuration(host: "127.0.0.1", port: port)
            configuration.caFile = certificates.caFile
            configuration.sendInterval = .milliseconds(20)
            let client = try LogstashClient(
                configuration: configuration,
                spool: LogstashSpool(configuration: .init(directory: spoolFolder.path))
            )
            client.start()
            for index in 0..<200 {
                try client.spool.append(Array(#"{"message":"m\#(index)","event_id":"e\#(index)"}"#.utf8))
            }
            client.recordsAppended(200)
            try await client.flush()
            #expect(await tally.waitUntil(uniqueEventIDs: 200, timeout: .seconds(60)))
            await client.shutdown()
            let snapshot = tally.snapshot
            #expect(snapshot.uniqueEventIDs == 200)
            #expect(snapshot.duplicates == 0)
            #expect(snapshot.invalid == 0)
            #expect(tally.contains("e199"))
            #expect(receiver.counters.connections == 1)
        }
    }

    /// Stopping while TLS senders stay connected and never answer: each connection's close waits for the peer's
    /// `close_notify` only briefly, and all of them at once — it was 5 s each, one after another (15 s for these
    /// three: `justlog receive` took that long to exit on Ctrl-C). Timed by the senders, on their own threads, from
    /// the receiver's `close_notify` to the socket's end: the test pool's load can't stretch it.
    @Test func stoppingWithSilentTLSSendersConnectedTakesAMomentNotSecondsEach() async throws {
        let certificates = try await TestCertificates.make()
        let received = ReceivedLines()
        let tls = JSONLinesReceiver.TLS(
            certificateFile: certificates.goodServer.certificate,
            keyFile: certificates.goodServer.key
        )
        let receiver = JSONLinesReceiver(configuration: .init(tls: tls), handler: received.record)
        let port = try await receiver.start()
        // Three TLS connections that each send a line, then never answer: the raw socket is read (so the TLS layer
        // never replies to the receiver's close_notify), noting when the first bytes came and when the socket ended.
        let script = """
            import os, socket, ssl, sys, threading, time
            context = ssl.create_default_context(cafile=sys.argv[2])
            held = []
            for index in range(3):
                connection = context.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="localhost")
                connection.sendall(b'{"event_id":"silent%d"}\\n' % index)
                held.append(connection)
            times = [None] * 3
            def watch(index):
                descriptor = held[index].fileno()
                first = None
                while True:
                    chunk = os.read(descriptor, 4096)
                    if first is None:
                        first = time.monotonic()
                    if not chunk:
                        break
                times[index] = (first, time.monotonic())
            watchers = [threading.Thread(target=watch, args=(index,)) for index in range(3)]
            for watcher in watchers:
                watcher.start()
            print("connected", flush=True)
            for watcher in watchers:
                watcher.join(120)
            starts = [t[0] for t in times]
            print("span %.3f" % (max(starts) - min(starts)))
            for first, end in times:
                print("wait %.3f" % (end - first))
            """
        let senders = Process()
        senders.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        senders.arguments = ["python3", "-c", script, "\(port)", certificates.caFile]
        let output = Pipe()
        senders.standardOutput = output
        try senders.run()
        defer {
            if senders.isRunning { kill(senders.processIdentifier, SIGKILL) }
            senders.waitUntilExit()
        }
        #expect(await eventually(timeout: .seconds(60)) { received.count == 3 }, "the senders' lines never arrived")
        await receiver.stop()
        #expect(await eventually(timeout: .seconds(120)) { !senders.isRunning }, "the senders never saw the close")
        let report = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        func seconds(_ label: String) -> [Double] {
            report.split(separator: "\n").compactMap { line in
                line.hasPrefix(label + " ") ? Double(line.dropFirst(label.count + 1)) : nil
            }
        }
        let waits = seconds("wait")
        #expect(waits.count == 3, "\(report)")
        // Begun together (one after another, they began 5 s apart), each ended after the 1 s wait, not 5 s.
        #expect(seconds("span").allSatisfy { $0 < 2.5 }, "\(report)")
        #expect(waits.allSatisfy { $0 < 3 }, "\(report)")
    }

    @Test func theTallyCountsDuplicatesAndLinesWithoutEventID() async throws {
        let tally = EventIDTally()
        try await withReceiver(handler: tally.record) { _, port in
            try PlainSocket.send(
                #"{"event_id":"1"}"# + "\n" + #"{"event_id":"2"}"# + "\n" + #"{"event_id":"1"}"# + "\n{}\nnope\n",
                port: port
            )
            #expect(await eventually { tally.snapshot.lines == 5 })
            let snapshot = tally.snapshot
            #expect(snapshot.uniqueEventIDs == 2)
            #expect(snapshot.duplicates == 1)
            #expect(snapshot.withoutEventID == 1)
            #expect(snapshot.invalid == 1)
        }
    }
}

extension Array {
    func chunked(by size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
