/// A place in the spool: the segment's sequence number and a byte offset inside that segment.
///
/// Positions only grow: a later record always has a greater position. The sender keeps positions to
/// know what it has sent and what it may acknowledge; they are meaningless across two spool directories.
public struct SpoolPosition: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The segment's sequence number (its file name).
    public var segment: UInt64
    /// The byte offset of a record's frame inside that segment.
    public var offset: Int

    public init(segment: UInt64, offset: Int) {
        self.segment = segment
        self.offset = offset
    }

    public static func < (lhs: SpoolPosition, rhs: SpoolPosition) -> Bool {
        (lhs.segment, lhs.offset) < (rhs.segment, rhs.offset)
    }

    public var description: String { "\(segment):\(offset)" }
}

/// Records read from the spool in one go, already framed for `json_lines`: each record followed by `\n`.
public struct SpoolBatch: Hashable, Sendable {
    /// The records, each followed by `\n`, ready to be written to the socket as they are.
    public var bytes: [UInt8]
    /// How many records ``bytes`` holds.
    public var recordCount: Int
    /// Where the first record of the batch starts.
    public var start: SpoolPosition
    /// Where the record after the batch starts: acknowledging up to here acknowledges the whole batch.
    public var end: SpoolPosition
    /// The batch ends at a reserved record still being copied in (see ``Spool/reserveRecord(_:whileQueuedBytesBelow:)``):
    /// more records follow once it is. Read again from ``end`` in a moment.
    package var endsAtUnfilledRecord = false

    public init(bytes: [UInt8], recordCount: Int, start: SpoolPosition, end: SpoolPosition) {
        self.bytes = bytes
        self.recordCount = recordCount
        self.start = start
        self.end = end
    }

    /// `true` when the batch holds no record.
    public var isEmpty: Bool { recordCount == 0 }

    /// Where the batch lies in the spool, and what it counts.
    package var extent: SpoolExtent {
        SpoolExtent(start: start, end: end, records: recordCount, bytes: bytes.count)
    }
}

/// Consecutive records of a spool as a reader read them: where they start and end, how many they are and the bytes
/// they took (each record and its `\n`). Acknowledging an extent that starts at the spool's cursor needs no walk of
/// its frames to count what is forgotten (see ``Spool/acknowledge(_:)``).
package struct SpoolExtent: Hashable, Sendable {
    package var start: SpoolPosition
    package var end: SpoolPosition
    package var records: Int
    package var bytes: Int

    package init(start: SpoolPosition, end: SpoolPosition, records: Int, bytes: Int) {
        self.start = start
        self.end = end
        self.records = records
        self.bytes = bytes
    }

    /// This extent and `next` as one, if `next` starts where this one ends.
    package func followed(by next: SpoolExtent) -> SpoolExtent? {
        guard next.start == end else { return nil }
        return SpoolExtent(start: start, end: next.end, records: records + next.records, bytes: bytes + next.bytes)
    }
}

/// A snapshot of the spool's counters.
public struct SpoolCounters: Hashable, Sendable {
    /// Records appended and not yet acknowledged (nor dropped).
    public var queuedRecords: Int
    /// Bytes those records take on the wire (each record plus its `\n`).
    public var queuedBytes: Int
    /// Segment files on disk.
    public var segmentCount: Int
    /// Records dropped because the spool was full, since this spool was opened.
    public var droppedRecords: UInt64
    /// Records appended since this spool was opened.
    public var appendedRecords: UInt64
}
