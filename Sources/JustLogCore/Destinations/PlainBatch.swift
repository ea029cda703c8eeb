/// A destination that writes plain journal records straight from their bytes (see ``PlainBatch``). The pipeline
/// hands it plain records this way when it has no sanitizer; every other record still comes through
/// ``LogDestination/write(_:)``, in log order.
package protocol PlainBatchWriting: LogDestination {
    /// Writes the batch's records of ``PlainBatch/minimumLevel`` and above, in order.
    func write(_ batch: PlainBatch)
}

/// Plain records read from the journal, in the order they were logged, for a ``PlainBatchWriting`` destination
/// to format with ``format`` — or, for a record the direct format declines, to write as ``record(at:)``.
///
/// It points into the journal's read buffer: it is valid only during the ``PlainBatchWriting/write(_:)`` call
/// that receives it.
package struct PlainBatch {
    let bytes: UnsafeRawBufferPointer
    let records: [JournalRecordView]
    let members: [JournalRecordView.Member]
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
        self.members = members
        self.format = format
        self.minimumLevel = .verbose
        self.builder = builder
    }

    /// How many records the batch holds, of every level: write those at the indices for which ``isIncluded(_:)``.
    package var count: Int { records.count }

    /// Whether the record at `index` is of ``minimumLevel`` or above.
    package func isIncluded(_ index: Int) -> Bool { records[index].level >= minimumLevel }

    package func level(at index: Int) -> LogLevel { records[index].level }

    package func timestamp(at index: Int) -> LogTimestamp { records[index].timestamp }

    /// The record at `index` as the general path builds it: what a destination writes when the direct format
    /// declines it (a key to rename, a line too long for a collector).
    package func record(at index: Int) -> LogRecord {
        let record = records[index]
        func text(_ range: Range<Int>) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }
        var userInfo: [String: LogValue] = [:]
        userInfo.reserveCapacity(record.members.count)
        for member in members[record.members] {
            userInfo[text(member.key)] = value(at: member.value)
        }
        let event = LogEvent(
            level: record.level,
            message: text(record.message),
            userInfo: userInfo,
            callSite: CallSite(file: text(record.file), function: text(record.function), line: UInt(record.line)),
            timestamp: record.timestamp
        )
        return builder.record(for: event, sequence: record.sequence, eventIDPrefix: record.eventIDPrefix)
    }

    /// The scalar value whose tag byte is at `offset` (see ``JournalCodec``).
    private func value(at offset: Int) -> LogValue {
        func word() -> UInt64 { UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt64.self)) }
        switch bytes[offset] {
        case 0:
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt32.self)))
            return .string(
                String(
                    decoding: UnsafeRawBufferPointer(rebasing: bytes[offset + 5..<offset + 5 + length]),
                    as: UTF8.self
                )
            )
        case 1: return .int(Int64(bitPattern: word()))
        case 2: return .uint(word())
        case 3: return .double(Double(bitPattern: word()))
        case 4: return .bool(false)
        case 5: return .bool(true)
        default: return .null
        }
    }

    /// The records of ``minimumLevel`` and above, built the general way: for a destination that does not write
    /// plain records itself.
    package var logBatch: LogBatch {
        LogBatch(records: (0..<count).filter(isIncluded).map(record(at:)))
    }

    /// Appends the aggregated form of the record at `index` (SPEC §2) to `out`.
    package func writeAggregated(at index: Int, times: inout TimeTextCache, into out: inout OutputBuffer) {
        if !format.writeAggregated(records[index], in: self, times: &times, into: &out) {
            out.append(AggregatedFormat.encode(record(at: index)))
        }
    }

    /// Appends the flattened form of the record at `index` (SPEC §3) with `presets` (see
    /// ``DirectFormat/presets(addingOwn:_:)``) to `out`, or returns `false` with `out` as it was.
    package func writeFlattened(
        at index: Int,
        presets: [[DirectFormat.Preset]],
        times: inout TimeTextCache,
        into out: inout OutputBuffer
    ) -> Bool {
        format.writeFlattened(records[index], in: self, presets: presets, times: &times, into: &out)
    }
}
