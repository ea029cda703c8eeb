import JustLogTestSupport
import Testing

@testable import JustLogLogstash

private func ids(_ batch: SpoolBatch) -> [String] {
    String(decoding: batch.bytes, as: UTF8.self).split(separator: "\n").map { line in
        String(line.split(separator: "\"").dropLast().last ?? "")
    }
}

/// Load balancing's bookkeeping on a real spool: windows handed to several lanes, acknowledged in any order.
@Suite struct WindowDispatcherTests {
    private func spool(records: Int) throws -> (LogstashSpool, TemporaryDirectory) {
        let directory = try TemporaryDirectory(prefix: "dispatcher")
        let spool = try LogstashSpool(configuration: .init(directory: directory.path))
        for index in 0..<records { try spool.append(jsonRecord(index)) }
        return (spool, directory)
    }

    @Test func lanesGetConsecutiveWindowsAndTheSpoolForgetsOnlyTheAcknowledgedPrefix() throws {
        let (spool, directory) = try spool(records: 30)
        defer { withExtendedLifetime(directory) {} }
        let dispatcher = WindowDispatcher(spool: spool)
        let a = dispatcher.lane(0)
        let b = dispatcher.lane(1)
        let first = a.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        let second = b.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        #expect(ids(first) == (0..<10).map { "e\($0)" })
        #expect(ids(second) == (10..<20).map { "e\($0)" })
        b.acknowledge(upTo: second.end)
        #expect(spool.counterSnapshot.queuedRecords == 30, "the second window's ACK came first: nothing forgotten yet")
        a.acknowledge(upTo: first.end)
        #expect(spool.counterSnapshot.queuedRecords == 10)
        #expect(spool.cursor == second.end)
    }

    @Test func aLostWindowGoesToTheNextLaneTrimmedToWhatWasNotAcknowledged() throws {
        let (spool, directory) = try spool(records: 30)
        defer { withExtendedLifetime(directory) {} }
        let dispatcher = WindowDispatcher(spool: spool)
        let a = dispatcher.lane(0)
        let b = dispatcher.lane(1)
        let first = a.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        _ = a.acknowledgeRecords(from: first.start, count: 4)
        #expect(spool.counterSnapshot.queuedRecords == 26, "a partial ACK of the oldest window is forgotten at once")
        a.connectionLost()
        let resent = b.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        #expect(ids(resent) == (4..<10).map { "e\($0)" }, "only the unacknowledged part, before anything new")
        b.acknowledge(upTo: resent.end)
        #expect(spool.counterSnapshot.queuedRecords == 20)
        let next = a.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        #expect(ids(next) == (10..<20).map { "e\($0)" })
        #expect(dispatcher.unconfirmedWindows == 1)
    }

    @Test func aLaneAskingAgainWithoutAnAckHasLostItsWindow() throws {
        let (spool, directory) = try spool(records: 20)
        defer { withExtendedLifetime(directory) {} }
        let dispatcher = WindowDispatcher(spool: spool)
        let a = dispatcher.lane(0)
        let first = a.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        let again = a.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        #expect(ids(again) == ids(first))
    }
}
