import Foundation
import JustLogTestSupport
import Testing

@testable import JustLogCore

/// The journal's reader reads records where they lie in the spool's mapped segments (`Spool.readInPlace`), one
/// segment a read: the same records, in the same order, with the same extents to acknowledge, as a copying read —
/// and still readable when their segment leaves the spool meanwhile.
@Suite struct SpoolInPlaceReadingTests {
    /// Record `index`, of a length that varies with it.
    private func record(_ index: Int) -> [UInt8] {
        Array("record \(index) \(String(repeating: "x", count: 40 + index % 97))".utf8)
    }

    private func spool(in folder: TemporaryDirectory, maxTotalBytes: Int = 1 << 20) throws -> Spool {
        try Spool(
            configuration: .init(
                directory: folder.file("spool"),
                segmentBytes: 4 << 10,
                maxTotalBytes: maxTotalBytes,
                maxRecordBytes: 1024
            )
        )
    }

    /// The records' payloads as text.
    private func texts(_ records: SpoolRecords) -> [String] {
        records.withPayloads { bytes, payloads in
            var texts: [String] = []
            while let payload = payloads.next() {
                texts.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[payload]), as: UTF8.self))
            }
            return texts
        }
    }

    @Test func readingInPlaceGivesWhatACopyingReadGivesOneSegmentAtATime() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let spool = try spool(in: folder)
        defer { spool.close() }
        // About 30 records a 4 KiB segment: 400 span 14 segments.
        var ends: [SpoolPosition] = []
        for index in 0..<400 { ends.append(try record(index).withUnsafeBytes { try spool.appendRecord($0) }.end) }
        let expected = (0..<400).map { String(decoding: record($0), as: UTF8.self) }
        // Stopping before record 300, in reads of at most 7.
        var position = spool.cursor
        var read: [String] = []
        var extents: [SpoolExtent] = []
        for _ in 0..<1_000 {
            let records = spool.readInPlace(from: position, before: ends[299], maxRecords: 7)
            guard records.recordCount > 0 else { break }
            #expect(records.recordCount <= 7)
            #expect(records.extent.start == position)
            read += texts(records)
            extents.append(records.extent)
            position = records.extent.end
        }
        #expect(read == Array(expected[..<300]))
        // Each read ends in the segment it began in (some ended early for it).
        #expect(extents.count > 300 / 7 + 1)
        // The same records as one copying read, with the same extent.
        let copied = spool.read(from: spool.cursor, before: ends[299], maxBytes: 1 << 20, maxRecords: 1_000)
        let whole = extents.dropFirst().reduce(Optional(extents[0])) { $0?.followed(by: $1) }
        #expect(whole == copied.extent)
        // Acknowledged read by read, the spool keeps exactly the other 100 records, bytes and all.
        for extent in extents { spool.acknowledge(extent) }
        let rest = expected[300...].reduce(0) { $0 + $1.utf8.count + 1 }
        #expect(spool.counterSnapshot.queuedRecords == 100)
        #expect(spool.counterSnapshot.queuedBytes == rest)
        #expect(texts(spool.readInPlace(from: spool.cursor, before: nil, maxRecords: 1)) == [expected[300]])
    }

    @Test func aReadInPlaceStopsAtAPlaceNotYetFilled() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let spool = try spool(in: folder)
        defer { spool.close() }
        try spool.append(record(0))
        guard let reserved = try spool.reserveRecord(record(1), whileQueuedBytesBelow: .max) else {
            Issue.record("no place reserved below an unlimited size")
            return
        }
        let first = spool.readInPlace(from: spool.cursor, before: nil, maxRecords: 10)
        #expect(texts(first) == [String(decoding: record(0), as: UTF8.self)])
        #expect(first.endsAtUnfilledRecord)
        let bytes = record(1)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        defer { buffer.deallocate() }
        buffer.copyBytes(from: bytes)
        reserved.fill(with: UnsafeRawBufferPointer(buffer))
        let second = spool.readInPlace(from: first.extent.end, before: nil, maxRecords: 10)
        #expect(texts(second) == [String(decoding: record(1), as: UTF8.self)])
        #expect(!second.endsAtUnfilledRecord)
    }

    /// Records read in place keep their bytes when their segment is dropped at the cap before they are written: the
    /// read holds the segment's mapping.
    @Test func recordsReadInPlaceOutliveTheirSegmentDroppedAtTheCap() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Two segments at most.
        let spool = try spool(in: folder, maxTotalBytes: 8 << 10)
        defer { spool.close() }
        for index in 0..<10 { try spool.append(record(index)) }
        let records = spool.readInPlace(from: spool.cursor, before: nil, maxRecords: 10)
        #expect(records.recordCount == 10)
        let dropped = spool.counterSnapshot.droppedRecords
        for index in 10..<200 { try spool.append(record(index)) }
        #expect(spool.counterSnapshot.droppedRecords > dropped, "the first segment was dropped")
        #expect(texts(records) == (0..<10).map { String(decoding: record($0), as: UTF8.self) })
    }
}
