import Foundation
import JustLogCore
import JustLogLogstash
import JustLogTestSupport
import Testing

@Suite struct LogstashDestinationTests {
    @Test func aSpoolCapSmallerThanTheResendWindowIsAClearError() throws {
        let directory = try TemporaryDirectory(prefix: "destination-cap")
        var configuration = LogstashDestination.Configuration(
            client: .init(host: "127.0.0.1", port: 9),
            spoolDirectory: directory.file("spool")
        )
        configuration.spool.maxTotalBytes = 8 << 20  // below the 16 MiB window + 2 × 4 MiB segments
        #expect {
            _ = try LogstashDestination(configuration: configuration)
        } throws: { error in
            (error as? LogstashError)?.code == .invalidConfiguration && "\(error)".contains("raise the spool capacity")
        }
    }

    /// Sizes that can't work are refused with a clear error (review, helper-48): `Int.max` for "no limit" trapped
    /// on the event loop at the first batch (a buffer of that many bytes) or in this very check (`window + 2 ×
    /// segment` overflowed); a negative window overflowed later; no record per batch sent nothing, ever; nor did a
    /// timeout of nothing (helper-53).
    @Test(arguments: [
        "maxBatchBytes=max", "maxBatchBytes=0", "maxLineBytes=max", "maxBatchRecords=0", "resendWindowBytes=max",
        "resendWindowBytes=-1", "segmentBytes=max", "writeTimeout=0", "connectTimeout=-1", "ackTimeout=0",
        "ackTimeout=max",
    ])
    func sizesThatCantWorkAreAClearErrorNotATrap(_ setting: String) throws {
        let directory = try TemporaryDirectory(prefix: "destination-absurd")
        var configuration = LogstashDestination.Configuration(
            client: .init(host: "127.0.0.1", port: 9),
            spoolDirectory: directory.file("spool")
        )
        switch setting {
        case "maxBatchBytes=max": configuration.client.maxBatchBytes = .max
        case "maxBatchBytes=0": configuration.client.maxBatchBytes = 0
        case "maxLineBytes=max": configuration.client.maxLineBytes = .max
        case "maxBatchRecords=0": configuration.client.maxBatchRecords = 0
        case "resendWindowBytes=max": configuration.client.resendWindowBytes = .max
        case "resendWindowBytes=-1": configuration.client.resendWindowBytes = -1
        case "writeTimeout=0": configuration.client.writeTimeout = .zero
        case "connectTimeout=-1": configuration.client.connectTimeout = .seconds(-1)
        // Every window aborted before its ACK could come: nothing delivered, retried forever (review, helper-53).
        case "ackTimeout=0": configuration.client.transport = .beats(.init(ackTimeout: .zero))
        case "ackTimeout=max": configuration.client.transport = .beats(.init(ackTimeout: .seconds(Int64.max)))
        default: configuration.spool.segmentBytes = .max
        }
        #expect {
            _ = try LogstashDestination(configuration: configuration)
        } throws: { error in
            (error as? LogstashError)?.code == .invalidConfiguration
                || (error as? JustLogError)?.code == .invalidConfiguration
        }
        // And beside a Beats transport, whose window is the batch.
        if !setting.hasPrefix("ackTimeout") { configuration.client.transport = .beats(.init()) }
        if setting.hasPrefix("maxBatchBytes") {
            #expect(throws: (any Error).self) { _ = try LogstashDestination(configuration: configuration) }
        }
    }

    /// The collector's line limit holds whether it was set before the destination's configuration was made (which
    /// copies it into the spool's record limit) or after (review, helper-49: after, records up to the spool's 1 MiB
    /// went out, for a collector that splits or drops longer lines).
    @Test(arguments: [false, true])
    func anOversizedMessageIsTruncatedVisiblyAndKeepsACallersTruncatedBytesKey(lineLimitSetLater: Bool) throws {
        let directory = try TemporaryDirectory(prefix: "destination-truncate")
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: 9)
        if !lineLimitSetLater { client.maxLineBytes = 4096 }
        client.useTLS = false
        var configuration = LogstashDestination.Configuration(client: client, spoolDirectory: directory.file("spool"))
        if lineLimitSetLater { configuration.client.maxLineBytes = 4096 }
        configuration.spool.segmentBytes = 1 << 20
        let destination = try LogstashDestination(configuration: configuration)
        let record = Fixtures.builder().record(
            for: Fixtures.event(.info, String(repeating: "é", count: 10_000), userInfo: ["truncated_bytes": "mine"]),
            sequence: 1
        )
        destination.write(LogBatch(records: [record]))
        let batch = destination.spool.read(from: destination.spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        destination.shutdown()
        let line = try #require(String(decoding: batch.bytes, as: UTF8.self).split(separator: "\n").first)
        #expect(line.utf8.count <= 4096)
        guard case .object(let object) = try JSONReader.parse(line) else {
            Issue.record("not an object")
            return
        }
        #expect(object["message"]?.text.hasSuffix("…[truncated]") == true)
        #expect(object["truncated_bytes_userInfo"] == "mine", "the caller's key is kept, renamed")
        if case .int(let cut)? = object["truncated_bytes"] {
            #expect(cut > 10_000)
        } else {
            Issue.record("no truncated_bytes")
        }
    }

    @Test func aBurstFasterThanTheCollectorWaitsForRoomInsteadOfDroppingAtTheCap() async throws {
        // ~10 MB of events (2 KB each, so that even a debug build writes them faster than the collector reads)
        // into an 8 MiB spool, for a collector that reads at most ~3 MB/s: near the spool's cap the writes wait for
        // the collector, and every event arrives.
        let collector = try ThrottledCollector(interval: .milliseconds(5))
        let folder = try TemporaryDirectory(prefix: "destination-burst")
        // Patience past a starved collector thread: in a full run on two cores it went 2 s without a read, and the
        // writes stopped waiting (192 dropped). What this test shows is the wait, not the patience.
        let (destination, diagnostics) = try burstDestination(
            port: collector.port,
            folder: folder,
            roomPatience: .seconds(30)
        )
        destination.pipelineAttached { true }  // a pipeline whose journal has room
        let total = 5_000
        let written = writeBurst(total, to: destination)
        #expect(await eventually(timeout: .seconds(300)) { written.current }, "the writes never finished")
        let flushed = await withCheckedContinuation { continuation in
            destination.flush { continuation.resume(returning: $0.map { "\($0)" }) }
        }
        #expect(flushed == nil, "\(flushed ?? "")")
        #expect(await eventually(timeout: .seconds(120)) { collector.messages.count >= total })
        #expect(destination.spool.counterSnapshot.droppedRecords == 0)
        #expect(!diagnostics.text.contains("reached its cap"), "\(diagnostics.writes)")
        let messages = collector.messages
        let firstWrong = messages.enumerated().first { $0.element != Self.burstMessage($0.offset) }
        #expect(firstWrong == nil, "line \(firstWrong?.offset ?? 0): \(firstWrong?.element.prefix(40) ?? "")")
        await offThePool { destination.shutdown() }
        await collector.stop()
    }

    @Test func aCollectorThatStopsReadingHoldsTheWritesBackOnlyForAWhileThenTheCapDropsCountsAndReports() async throws {
        // The collector takes 1 MB, then reads nothing more on an open connection: the writes wait (writes to it
        // completed) until none has for the patience, then go on; the spool drops its oldest and counts them.
        let collector = try ThrottledCollector(interval: .milliseconds(1), stopAfterBytes: 1 << 20)
        let folder = try TemporaryDirectory(prefix: "destination-stall")
        // (However long a loaded machine stretches the stall, the connection stays: no write timeout ends it.)
        let (destination, diagnostics) = try burstDestination(port: collector.port, folder: folder) {
            $0.client.writeTimeout = .seconds(3600)
        }
        destination.pipelineAttached { true }
        let total = 5_000
        let written = writeBurst(total, to: destination)
        #expect(await eventually(timeout: .seconds(300)) { written.current }, "the writes never finished")
        #expect(destination.spool.counterSnapshot.droppedRecords > 0)
        #expect(diagnostics.text.contains("reached its cap"), "\(diagnostics.writes)")

        // It reads again, on the same connection (no reconnection, so no "delivery resumed"): the next write sends
        // the count of what was dropped.
        let dropped = destination.spool.counterSnapshot.droppedRecords
        collector.resume()
        #expect(await eventually(timeout: .seconds(60)) { collector.messages.count > 1_000 })
        destination.write(
            LogBatch(records: [Fixtures.builder().record(for: Fixtures.event(.info, "after"), sequence: 0)])
        )
        #expect(
            await eventually(timeout: .seconds(60)) { collector.messages.contains("after") },
            "\(collector.messages.suffix(2))"
        )
        let reported = collector.messages.compactMap { message -> UInt64? in
            guard message.hasPrefix("JustLog dropped ") else { return nil }
            return UInt64(message.dropFirst("JustLog dropped ".count).prefix { $0 != " " })
        }
        #expect(reported.reduce(0, +) == dropped, "reports \(reported), dropped \(dropped)")
        await offThePool { destination.shutdown() }
        await collector.stop()
    }

    @Test func aBurstIsNotHeldBackWhenThePipelineMayNotWait() async throws {
        // A burst while the pipeline may not wait (its journal half full, or no pipeline with a journal): the other
        // destinations and the calls go first; the spool drops its oldest and counts them. The collector takes at
        // most ~100 KB/s and the burst is ~16 MB into an 8 MiB spool: it outruns the collector even when a loaded
        // machine stretches the writes to a minute (5,000 events at 64 KiB per 5 ms did not, as uid 65534 in CI:
        // the writes took ~50 s and the collector kept up).
        let collector = try ThrottledCollector(chunkBytes: 2 << 10, interval: .milliseconds(20))
        let folder = try TemporaryDirectory(prefix: "destination-no-wait")
        let (destination, diagnostics) = try burstDestination(port: collector.port, folder: folder)
        destination.pipelineAttached { false }
        let written = writeBurst(8_000, to: destination)
        #expect(await eventually(timeout: .seconds(300)) { written.current }, "the writes never finished")
        #expect(destination.spool.counterSnapshot.droppedRecords > 0)
        #expect(diagnostics.text.contains("reached its cap"), "\(diagnostics.writes)")
        await offThePool { destination.shutdown() }
        await collector.stop()
    }

    /// `forceSend` against a collector that never reads completes with a timeout each time; the client kept every one
    /// of those flushes (callback and machine entry) until the connection ended — and a stalled connection may not.
    @Test func flushesThatTimeOutAgainstACollectorThatStopsReadingAreForgotten() async throws {
        let hostile = try await HostileCollector(.init(receiveBuffer: 64 << 10))
        let folder = try TemporaryDirectory(prefix: "destination-flush-leak")
        // (The connection must stay: a write timeout would end it and complete the flushes with its error.)
        let (destination, _) = try burstDestination(port: hostile.port, folder: folder, flushTimeout: 0.2) {
            $0.client.writeTimeout = .seconds(3600)
        }
        destination.pipelineAttached { false }
        // About 10 MB: more than the socket buffers hold, so that a write stays in flight.
        let written = writeBurst(5_000, to: destination)
        #expect(await eventually(timeout: .seconds(300)) { written.current }, "the writes never finished")
        for _ in 0..<40 {
            let error = await withCheckedContinuation { (continuation: CheckedContinuation<(any Error)?, Never>) in
                destination.flush { continuation.resume(returning: $0) }
            }
            #expect((error as? LogstashError)?.code == .timeout, "\(String(describing: error))")
        }
        // (Polled: on a starved event loop the destination's fallback may answer before the client's give-up runs.)
        var pending = (client: -1, machine: -1)
        let forgotten = await eventually {
            pending = await destination.client.pendingFlushes()
            return pending == (client: 0, machine: 0)
        }
        #expect(forgotten, "flushes still kept: \(pending)")
        await offThePool { destination.shutdown() }
        await hostile.stop()
    }

    /// A destination for plain TCP to 127.0.0.1:`port` with an 8 MiB spool in `folder` of 512 KiB segments and a 1 MiB resend
    /// window (the connection's buffers may raise it), and its diagnostics.
    private func burstDestination(
        port: Int,
        folder: TemporaryDirectory,
        roomPatience: Duration = .seconds(2),
        flushTimeout: Double = 30,
        change: (inout LogstashDestination.Configuration) -> Void = { _ in }
    ) throws -> (LogstashDestination, LineCapture) {
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: port)
        client.useTLS = false
        client.sendInterval = .milliseconds(50)
        client.resendWindowBytes = 1 << 20
        client.maxLineBytes = 16 << 10
        client.shutdownTimeout = .seconds(1)
        var configuration = LogstashDestination.Configuration(
            client: client,
            spoolDirectory: folder.file("spool"),
            flushTimeout: flushTimeout
        )
        configuration.spool.segmentBytes = 512 << 10
        configuration.spool.maxTotalBytes = 8 << 20
        configuration.roomPatience = roomPatience
        change(&configuration)
        let diagnostics = LineCapture()
        return (
            try LogstashDestination(configuration: configuration, diagnostics: diagnostics.diagnostics), diagnostics
        )
    }

    private static func burstMessage(_ index: Int) -> String {
        "burst \(index) " + String(repeating: "x", count: 2_000)
    }

    /// Writes `total` events to `destination` in batches of 256 on a thread of its own, as the pipeline's thread
    /// does; the value turns `true` when the last write returned.
    private func writeBurst(_ total: Int, to destination: LogstashDestination) -> LockedValue<Bool> {
        let done = LockedValue(false)
        let builder = Fixtures.builder()
        Thread.detachNewThread {
            for start in stride(from: 0, to: total, by: 256) {
                let records = (start..<min(total, start + 256)).map { index in
                    builder.record(for: Fixtures.event(.info, Self.burstMessage(index)), sequence: UInt64(index))
                }
                destination.write(LogBatch(records: records))
            }
            done.withLock { $0 = true }
        }
        return done
    }

    @Test func recordsLostToADamagedSpoolAreReportedToTheCollector() async throws {
        let directory = try TemporaryDirectory(prefix: "destination-damage")
        let receiver = try await LineReceiver()
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: receiver.port)
        client.useTLS = false
        client.sendInterval = .milliseconds(100)
        let configuration = LogstashDestination.Configuration(client: client, spoolDirectory: directory.file("spool"))
        do {
            let spool = try LogstashSpool(configuration: configuration.spool)
            for index in 0..<300 {
                try spool.append(Array(#"{"message":"kept \#(index)","event_id":"e\#(index)"}"#.utf8))
            }
            spool.close()
        }
        // Damage record 120's payload in place.
        let segment = directory.file("spool/00000000000000000001.seg")
        var contents = try #require(FileManager.default.contents(atPath: segment))
        let damaged = try #require(contents.range(of: Data(#"{"message":"kept 120","#.utf8)))
        contents[damaged.lowerBound + 5] ^= 0xFF
        try contents.write(to: URL(fileURLWithPath: segment))

        let diagnostics = LineCapture()
        let destination = try LogstashDestination(configuration: configuration, diagnostics: diagnostics.diagnostics)
        #expect(await receiver.waitForLines(300))
        let messages = try receiver.lines.map { line -> String in
            guard case .object(let object) = try JSONReader.parse(line) else { return "" }
            return object["message"]?.text ?? ""
        }
        #expect(messages.filter { $0.hasPrefix("kept ") } == (0..<300).filter { $0 != 120 }.map { "kept \($0)" })
        let report = try #require(
            receiver.lines.first { $0.contains("JustLog lost 1 event(s)") },
            "\(messages.suffix(3))"
        )
        guard case .object(let object) = try JSONReader.parse(report) else {
            Issue.record("not an object")
            return
        }
        #expect(object["lost_events"] == .uint(1) || object["lost_events"] == .int(1))
        #expect(diagnostics.text.contains("1 record(s) could not be read"), "\(diagnostics.writes)")
        await offThePool { destination.shutdown() }
        await receiver.stop()
    }

    @Test func aLossOfUnknownSizeIsReportedToTheCollectorToo() async throws {
        // The newest segment deleted: no file left tells how many records it held. That was said on stderr only; the
        // dashboards, which see the counted losses, never learned of it.
        let directory = try TemporaryDirectory(prefix: "destination-newest-deleted")
        let receiver = try await LineReceiver()
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: receiver.port)
        client.useTLS = false
        client.sendInterval = .milliseconds(100)
        var configuration = LogstashDestination.Configuration(client: client, spoolDirectory: directory.file("spool"))
        configuration.spool.segmentBytes = 16 << 10
        configuration.spool.maxRecordBytes = 4 << 10
        do {
            let spool = try LogstashSpool(configuration: configuration.spool)
            for index in 0..<1000 {
                try spool.append(Array(#"{"message":"kept \#(index)","event_id":"e\#(index)"}"#.utf8))
            }
            spool.close()
        }
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory.file("spool"))
            .filter { $0.hasSuffix(".seg") }.sorted()
        try #require(segments.count > 1)
        let newest = try #require(segments.last)
        #expect(unlink(directory.file("spool/\(newest)")) == 0)

        let diagnostics = LineCapture()
        let destination = try LogstashDestination(configuration: configuration, diagnostics: diagnostics.diagnostics)
        defer { destination.shutdown() }
        let reported = await eventually(timeout: .seconds(120)) {
            receiver.lines.contains { $0.contains("how many is unknown") && $0.contains("\(newest) is missing") }
        }
        #expect(reported, "\(receiver.lines.suffix(2)) \(diagnostics.writes)")
        let report = try #require(receiver.lines.first { $0.contains("how many is unknown") })
        guard case .object(let object) = try JSONReader.parse(report) else {
            Issue.record("not an object")
            return
        }
        #expect(object["lost_events_unknown"] == .bool(true))
        #expect(object["lost_events"] == nil)
        await receiver.stop()
    }

    @Test func whileTheSpoolIsUnusableEventsWaitInBoundedMemoryAndDropsAreCountedAndReported() async throws {
        let directory = try TemporaryDirectory(prefix: "destination-held")
        let receiver = try await LineReceiver()
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: receiver.port)
        client.useTLS = false
        client.sendInterval = .milliseconds(100)
        var configuration = LogstashDestination.Configuration(client: client, spoolDirectory: directory.file("spool"))
        configuration.unspooledMemoryLimit = 32 << 10
        configuration.spoolRetryInterval = 0.05
        // Another spool holds the folder: this destination can't use it (a real lock, no root needed).
        let holder = try LogstashSpool(configuration: configuration.spool)
        let diagnostics = LineCapture()
        let destination = try LogstashDestination(configuration: configuration, diagnostics: diagnostics.diagnostics)
        let builder = Fixtures.builder()
        let total = 1000
        for index in 0..<total {
            destination.write(
                LogBatch(records: [builder.record(for: Fixtures.event(.info, "held \(index)"), sequence: UInt64(index))]
                )
            )
        }
        let failure = await withCheckedContinuation { continuation in
            destination.flush { continuation.resume(returning: $0.map { "\($0)" }) }
        }
        let text = try #require(failure, "flush fails while the spool can't be used")
        #expect(text.contains("in use by another logger"), "\(text)")
        let held = try #require(
            text.split(separator: " ").firstIndex(of: "event(s)").flatMap { Int(text.split(separator: " ")[$0 - 1]) },
            "\(text)"
        )
        #expect(held > 0 && held < total, "\(text)")
        #expect(text.contains("\(total - held) more were dropped"), "\(text)")
        #expect(diagnostics.text.contains("can't spool events for Logstash"), "\(diagnostics.writes)")

        holder.close()
        var result: String? = "not tried"
        for _ in 0..<200 where result != nil {
            result = await withCheckedContinuation { continuation in
                destination.flush { continuation.resume(returning: $0.map { "\($0)" }) }
            }
            if result != nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(result == nil, "\(result ?? "")")
        #expect(await receiver.waitForLines(held + 1))
        let objects = try receiver.lines.compactMap { line -> [String: LogValue]? in
            guard case .object(let object) = try JSONReader.parse(line) else { return nil }
            return object
        }
        let messages = objects.compactMap { $0["message"]?.text }
        #expect(
            messages.filter { $0.hasPrefix("held ") } == (0..<held).map { "held \($0)" },
            "the events that fit arrive, in order"
        )
        let report = try #require(
            objects.first { ($0["message"]?.text ?? "").hasPrefix("JustLog dropped") },
            "\(messages.suffix(3))"
        )
        let dropped = UInt64(total - held)
        #expect(report["dropped_events"] == .uint(dropped) || report["dropped_events"] == .int(Int64(dropped)))
        #expect(
            diagnostics.text.contains(
                "works again: \(held) event(s) held in memory were spooled; \(total - held) were dropped"
            ),
            "\(diagnostics.writes)"
        )
        await offThePool { destination.shutdown() }
        await receiver.stop()
    }

    @Test func eventsStillHeldInMemoryAtShutdownAreReportedLost() throws {
        let directory = try TemporaryDirectory(prefix: "destination-held-shutdown")
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: 9)
        client.useTLS = false
        client.shutdownTimeout = .milliseconds(200)
        let configuration = LogstashDestination.Configuration(client: client, spoolDirectory: directory.file("spool"))
        let holder = try LogstashSpool(configuration: configuration.spool)
        defer { holder.close() }
        let diagnostics = LineCapture()
        let destination = try LogstashDestination(configuration: configuration, diagnostics: diagnostics.diagnostics)
        let builder = Fixtures.builder()
        for index in 0..<3 {
            destination.write(
                LogBatch(records: [builder.record(for: Fixtures.event(.info, "held \(index)"), sequence: UInt64(index))]
                )
            )
        }
        destination.shutdown()
        let failure = try #require(destination.shutdownFailure.map { "\($0)" }, "shutdown says events were lost")
        #expect(
            failure.contains("3 event(s) for Logstash are lost") && failure.contains("in use by another logger"),
            "\(failure)"
        )
        #expect(diagnostics.text.contains("3 event(s) for Logstash are lost"), "\(diagnostics.writes)")
    }
}
