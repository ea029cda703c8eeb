/// A destination that writes plain journal records straight from their bytes (see ``PlainBatch``). The pipeline
/// hands it plain records this way when it has no sanitizer; every other record still comes through
/// ``LogDestination/write(_:)``, in log order.
package protocol PlainBatchWriting: LogDestination {
    /// Writes the batch's records of ``PlainBatch/minimumLevel`` and above, in order.
    func write(_ batch: PlainBatch)
}

/// A background destination that may hold the pipeline's thread back — the Logstash destination waits for room in
/// its spool while the collector takes events — and so every other background destination with it. The pipeline
/// tells it how long that is harmless: while its journal is less than half full and takes the largest record a call
/// may bring (the journal holds what is logged meanwhile, crash-safe; past half, or for a record that would start a
/// segment past its cap, the calls' events would wait in memory, then the calls). Until told, it does not wait.
package protocol PipelineHoldingBack: LogDestination {
    /// `mayWait` says (on the pipeline's thread, cheaply) whether the destination may wait now.
    func pipelineAttached(mayWait: @escaping @Sendable () -> Bool)
}

/// A background destination whose store can refuse records for a while — the Logstash destination's spool on a full
/// disk, or held by another program — and that then keeps them in its memory, where a crash would lose them. While
/// it does, the pipeline does not acknowledge its journal past them (while the journal has a quarter of its size for
/// that): killed meanwhile, the next start gives them to it again. Once they are in its store, the next write or flush
/// the pipeline makes acknowledges them; a reconfiguration or a shutdown acknowledges them in any case (the
/// destination reports those it still holds lost).
package protocol MemoryHolding: LogDestination {
    /// Whether some records it was given are, for now, only in its memory. Asked on the pipeline's thread after
    /// each write; cheap.
    var holdsRecordsOnlyInMemory: Bool { get }
}

/// Plain records read from the journal, in the order they were logged, for a ``PlainBatchWriting`` destination
/// to format with ``format`` — or, for a record the direct format declines, to write as ``record(at:)``.
///
/// It points into the journal's memory, where the records lie (see ``SpoolRecords``): it is valid only during the
/// ``PlainBatchWriting/write(_:)`` call that receives it.
package struct PlainBatch {
    let bytes: UnsafeRawBufferPointer
    let records: [JournalRecordView]
    let members: [JournalRecordView.Member]
    /// The number of each record's layout in ``format``'s ``LayoutTable``: found once for every destination that
    /// writes the batch, which finds its templates by it (see ``LineTemplates``).
    let layouts: [Int]
    package let format: DirectFormat
    /// Records below this level are not the destination's.
    package var minimumLevel: LogLevel
    /// Builds the general path's record (the journal's `event_id` kept), for a record the direct format declines.
    private let builder: RecordBuilder

    init(
        bytes: UnsafeRawBufferPointer,
        records: [JournalRecordView],
        members: [JournalRecordView.Member],
        format: DirectFormat,
        builder: RecordBuilder
    ) {
        self.bytes = bytes
        self.records = records
        self.layouts = format.layouts.number(records, in: bytes, members: members)
        self.members = members
        self.format = format
        self.minimumLevel = .verbose
        self.builder = builder
    }

    /// How many records the batch holds, of every level: write those at the indices for which ``isIncluded(_:)``.
    package var count: Int { records.count }

    /// Whether the record at `index` is of ``minimumLevel`` or above.
    package func isIncluded(_ index: Int) -> Bool { records[index].level >= minimumLevel }

    /// The record at `index` as the general path builds it: what a destination writes when the direct format
    /// declines it (a key to rename, a line too long for a collector).
    package func record(at index: Int) -> LogRecord {
        let record = records[index]
        // The view read the record whole, checking what the codec checks: the codec reads it too.
        guard let (entry, _) = try? JournalCodec.decode(UnsafeRawBufferPointer(rebasing: bytes[record.bytes])) else {
            let event = LogEvent.report(
                "JustLog could not read back a journal record it had read in place (level \(record.level.label))",
                userInfo: ["event_sequence": .uint(record.sequence)],
                timestamp: record.timestamp
            )
            return builder.record(for: event, sequence: record.sequence, eventIDPrefix: record.eventIDPrefix)
        }
        return builder.record(for: entry.event, sequence: entry.sequence, eventIDPrefix: entry.eventIDPrefix)
    }

    /// The records of ``minimumLevel`` and above, built the general way: for a destination that does not write
    /// plain records itself.
    package var logBatch: LogBatch {
        LogBatch(records: (0..<count).filter(isIncluded).map(record(at:)))
    }

    /// Appends the file line of the record at `index` — `lineFormat`'s prefix, the aggregated form (SPEC §2), `\n` —
    /// to `out`, through `templates` (``LineTemplates/aggregated()``): a record the direct format writes takes one
    /// reservation of `out` for the whole line.
    package func writeFileLine(
        at index: Int,
        lineFormat: LineFormat,
        lineTimes: inout TimeTextCache,
        times: inout TimeTextCache,
        templates: inout LineTemplates,
        into out: inout OutputBuffer
    ) {
        assert(templates.flattenedPresets == nil, "aggregated lines need LineTemplates.aggregated()")
        let record = records[index]
        let written = format.writeLine(
            record,
            layout: layouts[index],
            in: self,
            times: &times,
            templates: &templates,
            prefixBound: lineFormat.filePrefixBound(record.level),
            prefix: {
                lineFormat.writeFilePrefix(
                    level: record.level,
                    timestamp: record.timestamp,
                    times: &lineTimes,
                    into: &$0
                )
            },
            into: &out
        )
        guard !written else { return }
        lineFormat.writeFilePrefix(level: record.level, timestamp: record.timestamp, times: &lineTimes, into: &out)
        out.append(AggregatedFormat.encode(self.record(at: index)))
        out.append(UInt8(ascii: "\n"))
    }

    /// Appends the flattened form of the record at `index` (SPEC §3) with the presets of `templates` (see
    /// ``LineTemplates/flattened(presets:)``) to `out`, or returns `false` with `out` as it was.
    package func writeFlattened(
        at index: Int,
        times: inout TimeTextCache,
        templates: inout LineTemplates,
        into out: inout OutputBuffer
    ) -> Bool {
        assert(templates.flattenedPresets != nil, "flattened lines need LineTemplates.flattened(presets:)")
        return format.write(
            records[index],
            layout: layouts[index],
            in: self,
            times: &times,
            templates: &templates,
            into: &out
        )
    }
}
