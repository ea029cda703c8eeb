/// Consecutive records of one segment of a spool, read where they lie in its mapped memory: nothing is copied. What
/// the journal's one reader, the pipeline's thread, formats from (see ``Spool/readInPlace(from:before:maxRecords:)``).
///
/// The records stay readable while this value lives: it holds their segment, whose memory is unmapped only when
/// the last reference goes, and a record's bytes do not change once it is committed. They are only overwritten when
/// their segment is zeroed for reuse, once acknowledged (``Spool/acknowledge(_:)``): the reader acknowledges what
/// it has written, after it has written it. (A segment dropped at the cap is deleted, never reused.)
struct SpoolRecords {
    /// The segment the records lie in; `nil` when there are none.
    private let segment: SpoolSegment?
    /// Where the first record's frame starts in ``segment``, and where the last one ends.
    private let first: Int
    private let last: Int
    /// Where the records lie in the spool, and what they count (as ``SpoolBatch/extent`` does for a copy): for
    /// ``Spool/acknowledge(_:)``.
    let extent: SpoolExtent
    /// The records end at a place reserved by a call still copying its record in: read again from
    /// ``SpoolExtent/end`` in a moment.
    let endsAtUnfilledRecord: Bool

    /// No records, at `position`.
    init(none position: SpoolPosition) {
        segment = nil
        first = 0
        last = 0
        extent = SpoolExtent(start: position, end: position, records: 0, bytes: 0)
        endsAtUnfilledRecord = false
    }

    init(segment: SpoolSegment, from first: Int, to last: Int, extent: SpoolExtent, endsAtUnfilledRecord: Bool) {
        self.segment = extent.records > 0 ? segment : nil
        self.first = first
        self.last = last
        self.extent = extent
        self.endsAtUnfilledRecord = endsAtUnfilledRecord
    }

    var recordCount: Int { extent.records }

    /// Calls `body` with the segment's bytes (from its start to the end of the last record) and the records'
    /// payloads, in order, as ranges of those bytes. The bytes are valid only during `body`.
    func withPayloads<Result>(_ body: (UnsafeRawBufferPointer, inout Payloads) throws -> Result) rethrows -> Result {
        guard let segment else {
            var none = Payloads(segment: nil, offset: 0, remaining: 0, last: 0)
            return try body(UnsafeRawBufferPointer(start: nil, count: 0), &none)
        }
        var payloads = Payloads(segment: segment, offset: first, remaining: extent.records, last: last)
        return try body(UnsafeRawBufferPointer(start: segment.base, count: last), &payloads)
    }

    /// The payloads of the records, one after another: where each lies in its segment's bytes.
    struct Payloads {
        fileprivate let segment: SpoolSegment?
        fileprivate var offset: Int
        fileprivate var remaining: Int
        /// Where the read's last record ends.
        fileprivate let last: Int

        /// The next record's payload, `nil` after the last — or at a frame that no longer ends within the read:
        /// the segment was zeroed and reused under the read, which only a second reader acknowledging the spool can
        /// do (a journal serves one pipeline). The bytes are then not read past the read's end.
        mutating func next() -> Range<Int>? {
            guard remaining > 0, let segment else { return nil }
            remaining -= 1
            let start = offset &+ segment.format.frameHeaderSize
            let end = start &+ segment.recordLength(at: offset)
            guard end <= last else {
                remaining = 0
                return nil
            }
            offset = segment.frameStart(end)
            return Range(uncheckedBounds: (start, end))
        }
    }
}
