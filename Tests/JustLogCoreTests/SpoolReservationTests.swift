import Foundation
import JustLogTestKit
import JustLogTestSupport
import Testing

@testable import JustLogCore

#if canImport(Glibc)
import Glibc
#endif

// A record's place is reserved under the spool's lock and filled after it (`SpoolReservation`): readers wait at a
// place not filled yet; a place never filled because the process died is skipped when the folder is opened again,
// and not counted as lost (its call never returned); a place filled after its segment left the spool lands in
// memory that is still mapped.
@Suite struct SpoolReservationTests {
    /// Record `index`: its content says which one it is.
    private func record(_ index: Int) -> [UInt8] {
        Array(#"{"event_id":"\#(index)","message":"record \#(index) \#(String(repeating: "r", count: 90))"}"#.utf8)
    }

    private func configuration(
        _ folder: TemporaryDirectory,
        segmentBytes: Int = 64 << 10,
        maxTotalBytes: Int = 1 << 20
    )
        -> Spool.Configuration
    {
        .init(
            directory: folder.file("spool"),
            segmentBytes: segmentBytes,
            maxTotalBytes: maxTotalBytes,
            maxRecordBytes: 1024
        )
    }

    /// Every record from the cursor on, without acknowledging, with whether the last read stopped at a place not
    /// filled yet.
    private func readAll(_ spool: Spool) -> (records: [String], stoppedAtUnfilled: Bool) {
        var position = spool.cursor
        var records: [String] = []
        for _ in 0..<10_000 {
            let batch = spool.read(from: position, before: nil, maxBytes: 64 << 10, maxRecords: 100)
            records += batch.bytes.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
            if batch.isEmpty { return (records, batch.endsAtUnfilledRecord) }
            position = batch.end
        }
        return (records, false)
    }

    private func text(_ indices: some Sequence<Int>) -> [String] {
        indices.map { String(decoding: record($0), as: UTF8.self) }
    }

    private func reserve(_ index: Int, in spool: Spool) throws -> SpoolReservation {
        guard let reservation = try spool.reserveRecord(record(index), whileQueuedBytesBelow: .max) else {
            throw JustLogError(code: .spoolUnavailable, message: "no place reserved below an unlimited size")
        }
        return reservation
    }

    /// Fills `reservation` with record `index`.
    private func fill(_ reservation: consuming SpoolReservation, with index: Int) {
        let bytes = record(index)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        defer { buffer.deallocate() }
        buffer.copyBytes(from: bytes)
        reservation.fill(with: UnsafeRawBufferPointer(buffer))
    }

    @Test func aReaderStopsAtAPlaceNotYetFilledAndReadsOnOnceItIs() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let spool = try Spool(configuration: configuration(folder))
        defer { spool.close() }
        try spool.append(record(0))
        let first = try reserve(1, in: spool)
        let second = try reserve(2, in: spool)
        #expect(spool.counterSnapshot.queuedRecords == 3, "a reserved record counts as appended")

        fill(second, with: 2)
        var read = readAll(spool)
        #expect(read.records == text([0]), "the record filled later is not read before the one reserved first")
        #expect(read.stoppedAtUnfilled)

        fill(first, with: 1)
        read = readAll(spool)
        #expect(read.records == text(0..<3))
        #expect(!read.stoppedAtUnfilled)
    }

    /// What a process killed now would leave of the spool in `folder`: its files as they are (the mapped pages are
    /// the files' page cache), copied to `copy` — while the spool stays open, as it would have in the process.
    private func filesLeftByAKill(of folder: TemporaryDirectory, in copy: TemporaryDirectory) throws {
        let from = folder.file("spool")
        let to = copy.file("spool")
        try FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: from) where name != "spool.lock" {
            try FileManager.default.copyItem(atPath: from + "/" + name, toPath: to + "/" + name)
        }
    }

    @Test func aPlaceNeverFilledBeforeTheProcessDiedIsSkippedAndNotCountedAsLost() throws {
        let folder = try TemporaryDirectory()
        let killed = try TemporaryDirectory()
        defer {
            folder.remove()
            killed.remove()
        }
        let lines = LockedValue<[String]>([])
        let diagnostics = DiagnosticSink { line in lines.withLock { $0.append(line) } }
        let spool = try Spool(configuration: configuration(folder), diagnostics: diagnostics)
        try spool.append(record(0))
        // The process is killed with record 1's place reserved: its call never returned. Record 2, reserved after
        // it, was filled, as was record 4; record 3 in between never was, nor was 5, the last.
        let dying = try reserve(1, in: spool)
        fill(try reserve(2, in: spool), with: 2)
        let alsoDying = try reserve(3, in: spool)
        try spool.append(record(4))
        let lastDying = try reserve(5, in: spool)
        try filesLeftByAKill(of: folder, in: killed)
        fill(dying, with: 1)
        fill(alsoDying, with: 3)
        fill(lastDying, with: 5)
        spool.close()

        let reopened = try Spool(configuration: configuration(killed), diagnostics: diagnostics)
        defer { reopened.close() }
        #expect(readAll(reopened).records == text([0, 2, 4]))
        #expect(reopened.takeLossesToReport() == 0, "a call that never returned lost nothing")
        #expect(lines.current.isEmpty, "no damage reported: \(lines.current)")
        // The next records follow, and are read after the others once the folder is opened again. A place reserved
        // after the stubs: closing waits for it alone, never for a stub (which no one will fill).
        try reopened.append(record(6))
        fill(try reserve(7, in: reopened), with: 7)
        #expect(readAll(reopened).records == text([0, 2, 4, 6, 7]))
    }

    /// A place never filled at the end of the records is where the next run appends: its stub, and with it the only
    /// sign that its serial was a call that never returned, is written over. Killed again before anything is
    /// acknowledged, the run after that still counts no loss (before, it reported the serial as one record lost).
    @Test func aPlaceNeverFilledAndThenWrittenOverIsNoLossAfterAnotherKill() throws {
        let folder = try TemporaryDirectory()
        let killed = try TemporaryDirectory()
        let killedAgain = try TemporaryDirectory()
        defer {
            folder.remove()
            killed.remove()
            killedAgain.remove()
        }
        let lines = LockedValue<[String]>([])
        let diagnostics = DiagnosticSink { line in lines.withLock { $0.append(line) } }
        let spool = try Spool(configuration: configuration(folder), diagnostics: diagnostics)
        for index in 0..<3 { try spool.append(record(index)) }
        let dying = try reserve(3, in: spool)
        try filesLeftByAKill(of: folder, in: killed)
        fill(dying, with: 3)
        spool.close()

        let reopened = try Spool(configuration: configuration(killed), diagnostics: diagnostics)
        try reopened.append(record(4))
        try filesLeftByAKill(of: killed, in: killedAgain)
        reopened.close()

        let again = try Spool(configuration: configuration(killedAgain), diagnostics: diagnostics)
        defer { again.close() }
        #expect(readAll(again).records == text([0, 1, 2, 4]))
        #expect(again.takeLossesToReport() == 0, "a call that never returned lost nothing")
        #expect(lines.current.isEmpty, "no damage reported: \(lines.current)")
    }

    /// Writes records 0, 1 and 2 to a spool in `folder` and closes it, then changes its segment file's bytes with
    /// `change` (given where record 1's frame and payload start).
    private func threeRecords(
        in folder: TemporaryDirectory,
        diagnostics: DiagnosticSink,
        change: (inout Data, _ frame: Int, _ payload: Int) -> Void
    ) throws {
        let spool = try Spool(configuration: configuration(folder), diagnostics: diagnostics)
        for index in 0..<3 { try spool.append(record(index)) }
        spool.close()
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: folder.file("spool")).first { $0.hasSuffix(".seg") }
        )
        let path = folder.file("spool/\(segment)")
        var bytes = try #require(FileManager.default.contents(atPath: path))
        let payload = try #require(bytes.range(of: Data(record(1)))).lowerBound
        change(&bytes, payload - SpoolSegment.frameHeaderSize, payload)
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    @Test func aRecordCopiedInWhoseCommitMarkWasNotWrittenIsSkippedAndNotCountedAsLost() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let lines = LockedValue<[String]>([])
        let diagnostics = DiagnosticSink { line in lines.withLock { $0.append(line) } }
        // Killed between the copy and its commit mark: record 1's frame is whole but for its first byte.
        try threeRecords(in: folder, diagnostics: diagnostics) { bytes, frame, _ in
            #expect(bytes[frame] == 0xF9)
            bytes[frame] = SpoolSegment.reservedMark
        }

        let reopened = try Spool(configuration: configuration(folder), diagnostics: diagnostics)
        defer { reopened.close() }
        #expect(readAll(reopened).records == text([0, 2]))
        #expect(reopened.takeLossesToReport() == 0)
        #expect(lines.current.isEmpty, "no damage reported: \(lines.current)")
    }

    @Test func bytesThatStartLikeAReservedPlaceButDoNotCheckOutAreDamageAndCounted() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let lines = LockedValue<[String]>([])
        let diagnostics = DiagnosticSink { line in lines.withLock { $0.append(line) } }
        // The reserved magic, and then a payload byte flipped: neither a stub nor a record copied in.
        try threeRecords(in: folder, diagnostics: diagnostics) { bytes, frame, payload in
            bytes[frame] = SpoolSegment.reservedMark
            bytes[payload + 5] ^= 0xFF
        }

        let reopened = try Spool(configuration: configuration(folder), diagnostics: diagnostics)
        defer { reopened.close() }
        #expect(readAll(reopened).records == text([0, 2]))
        #expect(reopened.takeLossesToReport() == 1)
        #expect(lines.current.contains { $0.contains("1 record(s) could not be read") })
    }

    /// Runs `work` on a thread of its own; says whether it has returned, and what it threw.
    private func onAThread(
        _ work: @escaping @Sendable () throws -> Void
    ) -> (returned: LockedValue<Bool>, error: LockedValue<String?>) {
        let returned = LockedValue(false)
        let thrown = LockedValue<String?>(nil)
        Thread.detachNewThread {
            do { try work() } catch { thrown.withLock { $0 = "\(error)" } }
            returned.withLock { $0 = true }
        }
        return (returned, thrown)
    }

    /// A spool configuration that says when a close or a drop begins to wait for a place being filled.
    private func configurationSeeingWaits(
        _ configuration: Spool.Configuration
    ) -> (Spool.Configuration, waiting: LockedValue<Bool>) {
        let waiting = LockedValue(false)
        var configuration = configuration
        configuration.onWaitingForAFill = { waiting.withLock { $0 = true } }
        return (configuration, waiting)
    }

    @Test func droppingTheSegmentOfAPlaceBeingFilledWaitsForItsCopy() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Two segments of 4 KiB: appending past the second drops the first, with the place reserved in it.
        let (configuration, waiting) = configurationSeeingWaits(
            configuration(folder, segmentBytes: 4 << 10, maxTotalBytes: 8 << 10)
        )
        let spool = try Spool(configuration: configuration, diagnostics: DiagnosticSink { _ in })
        defer { spool.close() }
        let box = ReservationBox(try reserve(0, in: spool))
        // Filled on every path (a no-op once filled): the close deferred above would wait for it forever.
        defer { box.fill(with: record(0)) }
        var index = 1
        while spool.takesWithoutDropping(record(index).count), index < 1_000 {
            try spool.append(record(index))
            index += 1
        }
        #expect(spool.counterSnapshot.droppedRecords == 0)
        // The next append drops the first segment: it waits for the place's copy, however long that takes.
        let last = index
        let bytes = record(last)
        let append = onAThread { try spool.append(bytes) }
        #expect(await eventually { waiting.current }, "the drop waits for the place being filled")
        #expect(!append.returned.current, "the segment was not dropped (and unmapped) before its place was filled")
        box.fill(with: record(0))
        #expect(await eventually { append.returned.current })
        #expect(append.error.current == nil)
        #expect(spool.counterSnapshot.droppedRecords > 0)
        let records = readAll(spool).records
        #expect(!records.contains(text([0])[0]), "the dropped record is gone")
        #expect(records.last == text([last])[0])
    }

    @Test func closingWaitsForAPlaceBeingFilledAndKeepsItsRecord() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let (configuration, waiting) = configurationSeeingWaits(configuration(folder))
        let spool = try Spool(configuration: configuration)
        try spool.append(record(0))
        let box = ReservationBox(try reserve(1, in: spool))
        let close = onAThread { spool.close() }
        #expect(await eventually { waiting.current }, "closing waits for the place being filled")
        #expect(!close.returned.current, "the spool did not close (and unmap its segments) before the place was filled")
        box.fill(with: record(1))
        #expect(await eventually { close.returned.current })
        let reopened = try Spool(configuration: self.configuration(folder))
        defer { reopened.close() }
        #expect(readAll(reopened).records == text(0..<2))
    }

    /// The pipeline's queue asks before journaling an event it holds in memory: "no" exactly when the record would
    /// start a segment past the cap, which drops the oldest.
    @Test func takesWithoutDroppingSaysNoExactlyWhenTheNextRecordWouldDropTheOldest() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let spool = try Spool(configuration: configuration(folder, segmentBytes: 16 << 10, maxTotalBytes: 64 << 10))
        defer { spool.close() }
        var count = 0
        while spool.takesWithoutDropping(record(count).count), count < 10_000 {
            _ = try record(count).withUnsafeBytes { try spool.appendRecord($0) }
            count += 1
        }
        #expect(count > 400, "four 16 KiB segments hold ~550 records of ~115 bytes")
        #expect(readAll(spool).records == text(0..<count), "nothing dropped up to the answer \"no\"")
        #expect(spool.takesWithoutDropping(2_000), "a record too large for the spool drops nothing: it is refused")
        _ = try record(count).withUnsafeBytes { try spool.appendRecord($0) }
        #expect(readAll(spool).records.first != text(0..<1).first, "the record it said no to dropped the oldest")
    }

    /// A reader that has written every record of the oldest segment leaves the cursor at its end (the segment is
    /// retired once the cursor moves into the next): starting a segment at the cap then drops nothing, and the answer
    /// is "yes" — with two segments, "no" here refused a whole segment early.
    @Test func aWhollyAcknowledgedOldestSegmentIsNoReasonToSayNoAtTheCap() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Two 16 KiB segments at most (~115 records each).
        let spool = try Spool(configuration: configuration(folder, segmentBytes: 16 << 10, maxTotalBytes: 47 << 10))
        defer { spool.close() }
        var ends: [SpoolPosition] = []
        while spool.takesWithoutDropping(record(ends.count).count), ends.count < 10_000 {
            ends.append(try record(ends.count).withUnsafeBytes { try spool.appendRecord($0) }.end)
        }
        let first = ends[0].segment
        let lastOfFirst = try #require(ends.lastIndex { $0.segment == first })
        #expect(lastOfFirst < ends.count - 1, "the records span two segments")
        spool.acknowledge(upTo: ends[lastOfFirst])
        #expect(spool.cursor == ends[lastOfFirst], "the cursor rests at the end of the oldest segment")
        #expect(spool.takesWithoutDropping(record(ends.count).count), "starting a segment now drops nothing")
        let next = ends.count
        _ = try record(next).withUnsafeBytes { try spool.appendRecord($0) }
        #expect(spool.counterSnapshot.droppedRecords == 0)
        #expect(readAll(spool).records == text((lastOfFirst + 1)...next))
    }

    /// A spool reopened with a smaller cap holds more segments than it: starting one drops several — past the wholly
    /// acknowledged oldest, records nobody wrote — so the answer stays "no" when the last segment is full.
    @Test func pastItsCapAReopenedSpoolSaysNoThoughItsOldestIsWhollyAcknowledged() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        var ends: [SpoolPosition] = []
        do {
            // Four 16 KiB segments.
            let spool = try Spool(configuration: configuration(folder, segmentBytes: 16 << 10, maxTotalBytes: 64 << 10))
            while spool.counterSnapshot.segmentCount < 4, ends.count < 10_000 {
                ends.append(try record(ends.count).withUnsafeBytes { try spool.appendRecord($0) }.end)
            }
            spool.close()
        }
        // Reopened with a cap of two segments; a reader then writes every record of the oldest.
        let spool = try Spool(configuration: configuration(folder, segmentBytes: 16 << 10, maxTotalBytes: 32 << 10))
        defer { spool.close() }
        #expect(spool.counterSnapshot.segmentCount == 4)
        let lastOfFirst = try #require(ends.lastIndex { $0.segment == ends[0].segment })
        spool.acknowledge(upTo: ends[lastOfFirst])
        #expect(spool.cursor == ends[lastOfFirst])
        var appended = 0
        while spool.takesWithoutDropping(record(ends.count + appended).count), appended < 1_000 {
            _ = try record(ends.count + appended).withUnsafeBytes { try spool.appendRecord($0) }
            appended += 1
        }
        #expect(appended < 1_000, "it said no once the last segment was full")
        #expect(spool.counterSnapshot.droppedRecords == 0, "nothing dropped up to the answer \"no\"")
    }

    /// With few segments, half the bytes may span all but one: a place below the limit is still not taken when it
    /// would start a segment past the cap, which drops the oldest — records not yet acknowledged.
    @Test func aPlaceBelowTheLimitIsNotTakenWhenItWouldDropTheOldestAtTheCap() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Two 16 KiB segments at most (~115 records each); a limit of 23 KiB not yet acknowledged (~190 records).
        let spool = try Spool(configuration: configuration(folder, segmentBytes: 16 << 10, maxTotalBytes: 47 << 10))
        defer { spool.close() }
        let limit = 23 << 10
        var ends: [SpoolPosition] = []
        for index in 0..<150 {
            let reservation = try reserve(index, in: spool)
            ends.append(reservation.end)
            fill(reservation, with: index)
        }
        // A reader wrote the first 100 (most of the first segment, not all of it).
        spool.acknowledge(upTo: ends[99])
        var count = 150
        while count < 1_000,
            let reservation = try spool.reserveRecord(record(count), whileQueuedBytesBelow: limit)
        {
            fill(reservation, with: count)
            count += 1
        }
        #expect(count < 1_000, "a place was refused")
        #expect(spool.counterSnapshot.queuedBytes < limit, "refused below the limit: at the cap")
        #expect(readAll(spool).records == text(100..<count), "every record not acknowledged is still there")
    }

    /// Threads logging at once through the fast lane (places reserved under the locks, filled outside them) while
    /// the worker reads behind them: every event once, each thread's in its order, none counted as dropped.
    @Test func threadsLoggingAtOnceThroughTheFastLaneLandExactlyOnceInOrder() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let journal = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        let capture = CapturingDestination()
        let pipeline = LogPipeline(
            setup: .init(routes: [.init(capture)], journal: journal),
            diagnostics: DiagnosticSink { _ in }
        )
        #expect(pipeline.intake.journalOnly, "every destination reads the journal: the fast lane is open")
        let threads = 4
        let perThread = 10_000
        let done = LockedValue(0)
        for thread in 0..<threads {
            Thread.detachNewThread {
                for index in 0..<perThread {
                    pipeline.submitCall(
                        .info,
                        "t\(thread)-\(index)",
                        error: nil,
                        userInfo: ["thread": thread],
                        callSite: CallSite(file: #fileID, function: #function, line: #line)
                    )
                }
                done.withLock { $0 += 1 }
            }
        }
        #expect(await eventually(timeout: .seconds(120)) { done.current == threads })
        try await pipeline.flush()

        let records = capture.records
        #expect(records.count == threads * perThread)
        var order = ThreadOrder(threads: threads)
        for record in records { order.take(record.message) }
        #expect(Set(records.map(\.eventID)).count == records.count)
        #expect(pipeline.currentStatistics.dropped == 0)
        #expect(journal.unacknowledgedBytes == 0, "the worker acknowledged every place, filled")
        await pipeline.shutdown()
    }
}

/// A reservation handed to another thread (noncopyable values are not captured by escaping closures).
private final class ReservationBox: @unchecked Sendable {
    private var reservation: SpoolReservation?

    init(_ reservation: consuming SpoolReservation) {
        self.reservation = consume reservation
    }

    func fill(with bytes: [UInt8]) {
        guard let reservation = reservation.take() else { return }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        defer { buffer.deallocate() }
        buffer.copyBytes(from: bytes)
        reservation.fill(with: UnsafeRawBufferPointer(buffer))
    }
}

/// The recovery's filter of unfinished serials that a record has (review, helper-47: a linear search per serial
/// made an open after a crash loop quadratic).
@Suite struct SpoolRecoverySerialFilterTests {
    @Test func serialsInsideAnyRangeAreLeftOutAndTheRestKeptInOrder() {
        let sorted: [UInt64] = [1, 3, 3, 5, 8, 13, 21]
        #expect(SpoolRecovery.serials(sorted, outside: []) == sorted)
        #expect(SpoolRecovery.serials([], outside: [1...5]) == [])
        #expect(SpoolRecovery.serials(sorted, outside: [3...5, 21...21, 100...200]) == [1, 8, 13])
        #expect(SpoolRecovery.serials(sorted, outside: [0...UInt64.max]) == [])
        let many: [UInt64] = (0..<UInt64(100_000)).map { $0 * 2 }
        let runs: [ClosedRange<UInt64>] = many.map { serial in (serial + 1)...(serial + 1) }
        #expect(SpoolRecovery.serials(many, outside: runs) == many)
    }
}
