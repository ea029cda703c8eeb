/// Where a ``LogstashClient`` reads its records and reports what the collector confirmed: the spool itself,
/// or — with load balancing — its lane of a ``WindowDispatcher``.
protocol SpoolSource: AnyObject, Sendable {
    /// The oldest record not yet acknowledged.
    var cursor: SpoolPosition { get }
    /// Records from `position`; the batch's bytes share `storage`'s memory (see
    /// ``Spool/read(from:maxBytes:maxRecords:reusing:)``).
    func read(
        from position: SpoolPosition,
        maxBytes: Int,
        maxRecords: Int,
        reusing storage: inout [UInt8]
    ) -> SpoolBatch
    /// The whole batch last read is confirmed: the spool may forget everything before `position`.
    func acknowledge(upTo position: SpoolPosition)
    /// The batches of `extent`, read one after another, are confirmed: as ``acknowledge(upTo:)`` its end, counting
    /// them from the extent where the source can.
    func acknowledge(_ extent: SpoolExtent)
    /// The first `count` records from `position` of the batch last read are confirmed (a partial Beats ACK);
    /// returns where they end.
    func acknowledgeRecords(from position: SpoolPosition, count: Int) -> SpoolPosition
    /// The connection is gone: what it read and did not get confirmed must be sent again (by any connection).
    func connectionLost()
    func takeDropsToReport() -> UInt64
}

extension SpoolSource {
    /// ``read(from:maxBytes:maxRecords:reusing:)`` into memory of its own.
    func read(from position: SpoolPosition, maxBytes: Int, maxRecords: Int) -> SpoolBatch {
        var storage: [UInt8] = []
        return read(from: position, maxBytes: maxBytes, maxRecords: maxRecords, reusing: &storage)
    }
}

extension LogstashSpool: SpoolSource {
    func acknowledgeRecords(from position: SpoolPosition, count: Int) -> SpoolPosition {
        // If the spool dropped records at its cap meanwhile (its cursor passed `position`), the records after the
        // cursor may be unsent: forget nothing.
        guard cursor <= position else { return position }
        let end = read(from: position, maxBytes: .max, maxRecords: count).end
        acknowledge(upTo: end)
        return end
    }

    func connectionLost() {}
}

/// Hands a spool's records out, window by window, to several connections at once (load balancing, Beats), each
/// with its own acknowledgements, and lets the spool forget only the records before the first window not yet
/// fully acknowledged — acknowledgements may come back in any order.
///
/// A window whose connection is lost before its ACK goes back in line, trimmed to what was not acknowledged,
/// and the next connection to ask for records gets it before anything new.
final class WindowDispatcher: @unchecked Sendable {
    /// A range of the spool handed out as one window.
    private struct Entry {
        var start: SpoolPosition
        var end: SpoolPosition
        var count: Int
        /// Records acknowledged from the start, and where they end.
        var acknowledged = 0
        var acknowledgedEnd: SpoolPosition
        /// The lane sending it, or `nil` while it waits to be sent (again).
        var owner: Int?
        var done: Bool { acknowledged >= count }
    }

    let spool: LogstashSpool
    private let lock = SpoolLock()
    /// Handed-out windows not yet forgotten, in spool order.
    private var entries: [Entry] = []
    /// Where the next new window starts.
    private var readPosition: SpoolPosition?

    init(spool: LogstashSpool) {
        self.spool = spool
    }

    /// The source of connection `index`.
    func lane(_ index: Int) -> any SpoolSource { Lane(dispatcher: self, index: index) }

    // MARK: - Lanes' operations

    func read(lane: Int, maxBytes: Int, maxRecords: Int, reusing storage: inout [UInt8]) -> SpoolBatch {
        lock.withLock {
            let cursor = spool.cursor
            entries.removeAll { $0.end <= cursor }
            // A lane that asks again while it holds an unconfirmed window has lost it.
            release(lane: lane)
            if let index = entries.firstIndex(where: { $0.owner == nil && !$0.done }) {
                let entry = entries[index]
                let batch = spool.read(
                    from: max(entry.acknowledgedEnd, cursor),
                    maxBytes: .max,
                    maxRecords: entry.count - entry.acknowledged,
                    reusing: &storage
                )
                if !batch.isEmpty {
                    entries[index].owner = lane
                    entries[index].count = entry.acknowledged + batch.recordCount
                    return batch
                }
            }
            let from = max(readPosition ?? cursor, cursor)
            let batch = spool.read(from: from, maxBytes: maxBytes, maxRecords: maxRecords, reusing: &storage)
            guard !batch.isEmpty else { return batch }
            entries.append(
                Entry(
                    start: batch.start,
                    end: batch.end,
                    count: batch.recordCount,
                    acknowledgedEnd: batch.start,
                    owner: lane
                )
            )
            readPosition = batch.end
            return batch
        }
    }

    func acknowledgeAll(lane: Int) {
        lock.withLock {
            guard let index = entries.firstIndex(where: { $0.owner == lane && !$0.done }) else { return }
            entries[index].acknowledged = entries[index].count
            entries[index].acknowledgedEnd = entries[index].end
            entries[index].owner = nil
            forgetConfirmedPrefix()
        }
    }

    func acknowledgeRecords(lane: Int, count: Int) -> SpoolPosition? {
        lock.withLock {
            guard let index = entries.firstIndex(where: { $0.owner == lane && !$0.done }) else { return nil }
            let entry = entries[index]
            guard spool.cursor <= entry.acknowledgedEnd else { return nil }
            let end = spool.read(from: entry.acknowledgedEnd, maxBytes: .max, maxRecords: count).end
            entries[index].acknowledged += count
            entries[index].acknowledgedEnd = min(end, entry.end)
            forgetConfirmedPrefix()
            return end
        }
    }

    func connectionLost(lane: Int) {
        lock.withLock { release(lane: lane) }
    }

    /// Windows handed out and not yet fully acknowledged (for tests and counters).
    var unconfirmedWindows: Int {
        lock.withLock { entries.filter { !$0.done }.count }
    }

    /// Windows a lane is sending now (handed out, not let go, not yet fully acknowledged).
    var windowsInFlight: Int {
        lock.withLock { entries.filter { $0.owner != nil && !$0.done }.count }
    }

    // MARK: - Helpers

    private func release(lane: Int) {
        for index in entries.indices where entries[index].owner == lane && !entries[index].done {
            entries[index].owner = nil
        }
    }

    /// Lets the spool forget the windows acknowledged in full from the oldest on, and the acknowledged start of
    /// the first one that is not.
    private func forgetConfirmedPrefix() {
        var upTo: SpoolPosition?
        while let first = entries.first {
            if first.done {
                upTo = first.end
                entries.removeFirst()
            } else {
                if first.acknowledged > 0 { upTo = first.acknowledgedEnd }
                break
            }
        }
        if let upTo, upTo > spool.cursor { spool.acknowledge(upTo: upTo) }
    }

    /// One connection's view of the dispatcher.
    private final class Lane: SpoolSource, @unchecked Sendable {
        let dispatcher: WindowDispatcher
        let index: Int

        init(dispatcher: WindowDispatcher, index: Int) {
            self.dispatcher = dispatcher
            self.index = index
        }

        var cursor: SpoolPosition { dispatcher.spool.cursor }

        func read(
            from position: SpoolPosition,
            maxBytes: Int,
            maxRecords: Int,
            reusing storage: inout [UInt8]
        ) -> SpoolBatch {
            dispatcher.read(lane: index, maxBytes: maxBytes, maxRecords: maxRecords, reusing: &storage)
        }

        func acknowledge(upTo position: SpoolPosition) {
            dispatcher.acknowledgeAll(lane: index)
        }

        func acknowledge(_ extent: SpoolExtent) {
            dispatcher.acknowledgeAll(lane: index)
        }

        func acknowledgeRecords(from position: SpoolPosition, count: Int) -> SpoolPosition {
            dispatcher.acknowledgeRecords(lane: index, count: count) ?? position
        }

        func connectionLost() {
            dispatcher.connectionLost(lane: index)
        }

        func takeDropsToReport() -> UInt64 {
            dispatcher.spool.takeDropsToReport()
        }
    }
}
