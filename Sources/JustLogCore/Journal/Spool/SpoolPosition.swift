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

    public init(bytes: [UInt8], recordCount: Int, start: SpoolPosition, end: SpoolPosition) {
        self.bytes = bytes
        self.recordCount = recordCount
        self.start = start
        self.end = end
    }

    /// `true` when the batch holds no record.
    public var isEmpty: Bool { recordCount == 0 }
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
