import Foundation
import JustLogLogstash
import JustLogTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A record whose content says which one it is.
private func record(_ index: Int, padding: Int = 0) -> [UInt8] {
    Array(#"{"event_id":"\#(index)","message":"m\#(index)\#(String(repeating: "x", count: padding))"}"#.utf8)
}

/// Splits a `\n`-framed batch back into records.
private func lines(_ batch: SpoolBatch) -> [String] {
    batch.bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast().map {
        String(decoding: $0, as: UTF8.self)
    }
}

/// Reads everything from the cursor on, in batches, without acknowledging.
private func readAll(_ spool: LogstashSpool, maxBytes: Int = 64 << 10) -> [String] {
    var position = spool.cursor
    var result: [String] = []
    for _ in 0..<100_000 {
        let batch = spool.read(from: position, maxBytes: maxBytes, maxRecords: 1000)
        if batch.isEmpty { break }
        result += lines(batch)
        position = batch.end
    }
    return result
}

@Suite struct LogstashSpoolTests {
    @Test func roundTripsRecordsInOrderWithNewlineFraming() throws {
        let directory = try TemporaryDirectory(prefix: "spool")
        let spool = try LogstashSpool(configuration: .init(directory: directory.path))
        for index in 0..<100 { try spool.append(record(index)) }
        let batch = spool.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 1000)
        #expect(batch.recordCount == 100)
        #expect(lines(batch) == (0..<100).map { String(decoding: record($0), as: UTF8.self) })
        #expect(batch.bytes.last == UInt8(ascii: "\n"))
        #expect(spool.counterSnapshot.queuedRecords == 100)
        #expect(spool.counterSnapshot.queuedBytes == batch.bytes.count)

        spool.acknowledge(upTo: batch.end)
        #expect(spool.counterSnapshot.queuedRecords == 0)
        #expect(spool.counterSnapshot.queuedBytes == 0)
        #expect(spool.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 1000).isEmpty)
    }

    @Test func batchesRespectByteAndRecordLimitsButAlwaysTakeOneRecord() throws {
        let directory = try TemporaryDirectory(prefix: "spool")
        let spool = try LogstashSpool(configuration: .init(directory: directory.path))
        for index in 0..<10 { try spool.append(record(index, padding: 100)) }
        let small = spool.read(from: spool.cursor, maxBytes: 10, maxRecords: 1000)
        #expect(small.recordCount == 1)
        let three = spool.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 3)
        #expect(three.recordCount == 3)
        let next = spool.read(from: three.end, maxBytes: 1 << 20, maxRecords: 1000)
        #expect(lines(next).first == String(decoding: record(3, padding: 100), as: UTF8.self))
        #expect(next.recordCount == 7)
    }

    @Test func survivesReopenAndResumesFromTheAcknowledgedCursor() throws {
        let directory = try TemporaryDirectory(prefix: "spool")
        do {
            let spool = try LogstashSpool(configuration: .init(directory: directory.path))
            for index in 0..<50 { try spool.append(record(index)) }
            let first = spool.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 20)
            spool.acknowledge(upTo: first.end)
            spool.close()
        }
        let reopened = try LogstashSpool(configuration: .init(directory: directory.path))
        #expect(reopened.counterSnapshot.queuedRecords == 30)
        #expect(readAll(reopened) == (20..<50).map { String(decoding: record($0), as: UTF8.self) })
        try reopened.append(record(50))
        #expect(readAll(reopened).last == String(decoding: record(50), as: UTF8.self))
    }

    @Test func recordsOnlyInThePageCacheAreFoundByTheNextSpool() throws {
        // The first spool never syncs its mapping (close() only unmaps, no msync): what the next one finds
        // is what a killed process leaves in the page cache. (A real SIGKILL is tested in JustLogTests.)
        let directory = try TemporaryDirectory(prefix: "spool")
        let configuration = LogstashSpool.Configuration(
            directory: directory.path,
            segmentBytes: 64 << 10,
            maxRecordBytes: 4 << 10
        )
        let crashed = try LogstashSpool(configuration: configuration)
        for index in 0..<2000 { try crashed.append(record(index)) }
        crashed.close()  // releases the folder lock; a second open spool would be refused
        let recovered = try LogstashSpool(configuration: configuration)
        #expect(recovered.counterSnapshot.queuedRecords == 2000)
        #expect(recovered.counterSnapshot.segmentCount > 1)
        #expect(readAll(recovered) == (0..<2000).map { String(decoding: record($0), as: UTF8.self) })
    }

    @Test func aDamagedLastRecordIsSkippedCountedAndAppendedOver() throws {
        let directory = try TemporaryDirectory(prefix: "spool")
        let configuration = LogstashSpool.Configuration(directory: directory.path)
        do {
            let spool = try LogstashSpool(configuration: configuration)
            for index in 0..<3 { try spool.append(record(index)) }
            spool.close()
        }
        // Damage the last record: one payload byte changed, so its CRC no longer matches.
        let segment = directory.file("00000000000000000001.seg")
        let contents = try #require(FileManager.default.contents(atPath: segment))
        let payload = try #require(contents.range(of: Data(record(2))))
        let fd = open(segment, O_RDWR)
        #expect(fd >= 0)
        var byte: UInt8 = 0x5A
        #expect(pwrite(fd, &byte, 1, off_t(payload.lowerBound + 3)) == 1)
        close(fd)

        let reopened = try LogstashSpool(configuration: configuration, diagnostics: LineCapture().diagnostics)
        #expect(readAll(reopened) == (0..<2).map { String(decoding: record($0), as: UTF8.self) })
        #expect(reopened.takeLossesToReport() == 1, "a complete record that can't be read is a loss, and counted")
        try reopened.append(record(7))
        reopened.close()
        let again = try LogstashSpool(configuration: configuration)
        #expect(readAll(again) == [0, 1, 7].map { String(decoding: record($0), as: UTF8.self) })
        #expect(again.takeLossesToReport() == 0, "reported once")
    }

    @Test func capDropsTheOldestRecordsAndCountsThem() throws {
        let directory = try TemporaryDirectory(prefix: "spool")
        // 4 segments of 16 KiB: about 3 full segments are kept before the oldest goes.
        let configuration = LogstashSpool.Configuration(
            directory: directory.path,
            segmentBytes: 16 << 10,
            maxTotalBytes: 64 << 10,
            maxRecordBytes: 4 << 10
        )
        let spool = try LogstashSpool(configuration: configuration)
        let total = 2000
        for index in 0..<total { try spool.append(record(index, padding: 100)) }
        let counters = spool.counterSnapshot
        #expect(counters.segmentCount <= 4)
        #expect(counters.droppedRecords > 0)
        #expect(counters.queuedRecords + Int(counters.droppedRecords) == total)
        let remaining = readAll(spool)
        #expect(remaining.count == counters.queuedRecords)
        // The newest survive, the oldest went.
        #expect(remaining.last == String(decoding: record(total - 1, padding: 100), as: UTF8.self))
        #expect(remaining.first == String(decoding: record(Int(counters.droppedRecords), padding: 100), as: UTF8.self))
        #expect(spool.takeDropsToReport() == counters.droppedRecords)
        #expect(spool.takeDropsToReport() == 0)
    }

    @Test func dropsDoNotCountRecordsAlreadyAcknowledged() throws {
        let directory = try TemporaryDirectory(prefix: "spool")
        let configuration = LogstashSpool.Configuration(
            directory: directory.path,
            segmentBytes: 16 << 10,
            maxTotalBytes: 32 << 10,
            maxRecordBytes: 4 << 10
        )
        let spool = try LogstashSpool(configuration: configuration)
        var position = spool.cursor
        for index in 0..<1000 {
            try spool.append(record(index, padding: 50))
            let batch = spool.read(from: position, maxBytes: 1 << 20, maxRecords: 1000)
            position = batch.end
            spool.acknowledge(upTo: position)
        }
        #expect(spool.counterSnapshot.droppedRecords == 0)
        #expect(spool.counterSnapshot.queuedRecords == 0)
    }

    @Test func acknowledgingTheBatchesReadFromTheCursorKeepsTheCountersTheWalkWouldKeep() throws {
        // Two spools take the same records; one acknowledges the one to three batches it reads in a round, one
        // after another, as one extent (counted from the batches), the other the last batch's end (counted by
        // walking the frames). Batches span segments, some are read from past the cursor, and some rounds pass the
        // cap before acknowledging (counted by walking in both).
        let directory = try TemporaryDirectory(prefix: "spool")
        func spool(_ name: String) throws -> LogstashSpool {
            try LogstashSpool(
                configuration: .init(
                    directory: directory.file(name),
                    segmentBytes: 16 << 10,
                    maxTotalBytes: 1 << 20,
                    maxRecordBytes: 4 << 10
                )
            )
        }
        let counted = try spool("counted")
        let walked = try spool("walked")
        var index = 0
        for round in 0..<60 {
            for _ in 0..<(round % 7) * 13 + 1 {
                let bytes = record(index, padding: (index * 37) % 900)
                try counted.append(bytes)
                try walked.append(bytes)
                index += 1
            }
            let skip = round % 5 == 4 ? 1 : 0
            let from = skip == 0 ? counted.cursor : counted.read(from: counted.cursor, maxBytes: 1, maxRecords: 1).end
            var extent: SpoolExtent?
            var end = from
            for _ in 0...(round % 3) {
                let batch = counted.read(from: end, maxBytes: 8 << 10, maxRecords: 40)
                let twin = walked.read(from: end, maxBytes: 8 << 10, maxRecords: 40)
                #expect(batch == twin)
                let joined = extent.map { $0.followed(by: batch.extent) } ?? batch.extent
                #expect(joined != nil, "each batch starts where the last ended")
                extent = joined
                end = batch.end
            }
            if round % 11 == 10 {
                // Past the 1 MiB cap between the read and its acknowledgement: the oldest segments, the cursor's
                // among them, are dropped, and the extent no longer starts at the cursor (counted by walking).
                for _ in 0..<1200 {
                    let bytes = record(index, padding: 900)
                    try counted.append(bytes)
                    try walked.append(bytes)
                    index += 1
                }
                #expect(counted.cursor > from)
            }
            counted.acknowledge(try #require(extent))
            walked.acknowledge(upTo: end)
            #expect(counted.counterSnapshot == walked.counterSnapshot, "round \(round)")
            #expect(counted.cursor == walked.cursor)
        }
        #expect(counted.counterSnapshot.queuedRecords > 0)
        #expect(readAll(counted) == readAll(walked))
    }

    @Test func rejectsRecordsOverTheLineLimitAndEmptyRecordsWithTypedErrors() throws {
        let directory = try TemporaryDirectory(prefix: "spool")
        let spool = try LogstashSpool(configuration: .init(directory: directory.path, maxRecordBytes: 1000))
        #expect {
            try spool.append([UInt8](repeating: UInt8(ascii: "a"), count: 1001))
        } throws: { error in
            (error as? LogstashError)?.code == .recordTooLarge
        }
        #expect {
            try spool.append([UInt8]())
        } throws: { error in
            (error as? LogstashError)?.code == .emptyRecord
        }
        try spool.append([UInt8](repeating: UInt8(ascii: "a"), count: 1000))
        #expect(spool.counterSnapshot.queuedRecords == 1)
    }

    /// A record is one line: one holding a newline went in before and came out as two lines for json_lines, and as
    /// a Beats window of more events than the batch held, whose ACK never matched it — delivery stopped there for
    /// good (review, helper-53).
    @Test func aRecordHoldingANewlineIsRefusedNotSplitInTwo() throws {
        let directory = try TemporaryDirectory(prefix: "spool")
        defer { directory.remove() }
        let spool = try LogstashSpool(configuration: .init(directory: directory.path))
        #expect {
            try spool.append(Array((#"{"message":"one"}"# + "\n" + #"{"message":"two"}"#).utf8))
        } throws: { error in
            (error as? LogstashError)?.code == .multilineRecord
        }
        #expect(spool.counterSnapshot.queuedRecords == 0)
        try spool.append(Array(#"{"message":"one\ntwo"}"#.utf8))
        let batch = spool.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        #expect(batch.recordCount == 1)
        #expect(batch.bytes == Array(#"{"message":"one\ntwo"}"#.utf8) + [UInt8(ascii: "\n")])
    }

    @Test func readingFromADroppedPositionStartsAtTheOldestRecordLeft() throws {
        let directory = try TemporaryDirectory(prefix: "spool")
        let configuration = LogstashSpool.Configuration(
            directory: directory.path,
            segmentBytes: 16 << 10,
            maxTotalBytes: 32 << 10,
            maxRecordBytes: 4 << 10
        )
        let spool = try LogstashSpool(configuration: configuration)
        let stale = spool.cursor
        for index in 0..<1000 { try spool.append(record(index, padding: 50)) }
        let batch = spool.read(from: stale, maxBytes: 1 << 20, maxRecords: 1)
        #expect(batch.start == spool.cursor)
        #expect(
            lines(batch) == [
                String(decoding: record(Int(spool.counterSnapshot.droppedRecords), padding: 50), as: UTF8.self)
            ]
        )
    }

    @Test func appendCostCanBeMeasured() throws {
        let directory = try TemporaryDirectory(prefix: "spool-bench")
        #expect(throws: LogstashError.self) {
            try LogstashSpool(configuration: .init(directory: directory.path, segmentBytes: 1000, maxRecordBytes: 1000))
        }
        let measurement = try LogstashSpool.measureAppend(records: 10_000, payloadBytes: 400, directory: directory.path)
        #expect(measurement.records == 10_000)
        print("spool append (debug build): \(measurement)")
    }

    @Test func aSecondSpoolOnTheSameFolderIsRefusedUntilTheFirstCloses() throws {
        let directory = try TemporaryDirectory(prefix: "spool-twice")
        let first = try LogstashSpool(configuration: .init(directory: directory.path))
        #expect {
            _ = try LogstashSpool(configuration: .init(directory: directory.path))
        } throws: { error in
            (error as? LogstashError)?.code == .spoolUnavailable
                && "\(error)".contains("in use by another logger or process")
        }
        try first.append(Array("one".utf8))
        first.close()
        let second = try LogstashSpool(configuration: .init(directory: directory.path))
        defer { second.close() }
        #expect(second.counterSnapshot.queuedRecords == 1)
    }

    @Test func aZeroLengthSegmentLeftByACrashIsRemovedNotFatal() throws {
        let directory = try TemporaryDirectory(prefix: "spool-empty-segment")
        let spool = try LogstashSpool(configuration: .init(directory: directory.path))
        try spool.append(Array("kept".utf8))
        spool.close()
        // A process killed between creating the next segment file and sizing it leaves 0 bytes behind.
        let empty = directory.file("00000000000000000009.seg")
        #expect(FileManager.default.createFile(atPath: empty, contents: nil))
        let reopened = try LogstashSpool(configuration: .init(directory: directory.path))
        defer { reopened.close() }
        #expect(reopened.counterSnapshot.queuedRecords == 1)
        #expect(!FileManager.default.fileExists(atPath: empty))
        try reopened.append(Array("after".utf8))
        #expect(reopened.counterSnapshot.queuedRecords == 2)
    }

    @Test func aRetiredSegmentIsReusedAndNoneOfItsRecordsComeBack() throws {
        // Segments wholly acknowledged become the spare, zeroed; the next segment reuses it. Nothing written to
        // the spare's earlier life may be found after a restart (close only unmaps: what a killed process leaves).
        let directory = try TemporaryDirectory(prefix: "spool-reuse")
        let configuration = LogstashSpool.Configuration(
            directory: directory.path,
            segmentBytes: 16 << 10,
            maxRecordBytes: 4 << 10
        )
        let spool = try LogstashSpool(configuration: configuration)
        var next = 0
        func appendUntilANewSegmentStarts() throws {
            let segment = spool.endPosition.segment
            while spool.endPosition.segment == segment {
                try spool.append(record(next, padding: 200))
                next += 1
            }
        }
        var inodes: Set<UInt64> = []
        for _ in 0..<6 {
            try appendUntilANewSegmentStarts()
            inodes.formUnion(segmentInodes(in: directory))
            // Everything before the segment just started (its first record stays): its predecessors retire, one
            // becomes the spare.
            let current = SpoolPosition(segment: spool.endPosition.segment, offset: 0)
            let batch = spool.read(from: spool.cursor, before: current, maxBytes: 1 << 20, maxRecords: 10_000)
            spool.acknowledge(upTo: batch.end)
            #expect(FileManager.default.fileExists(atPath: directory.file("spare.tmp")))
        }
        // Seven segments started, and they took no more than two files: the spare was reused each time.
        #expect(inodes.count == 2, "segment files: \(inodes.count)")
        let unacknowledged = spool.counterSnapshot.queuedRecords
        #expect(unacknowledged == 1)
        spool.close()
        #expect(!FileManager.default.fileExists(atPath: directory.file("spare.tmp")))

        let reopened = try LogstashSpool(configuration: configuration)
        defer { reopened.close() }
        #expect(reopened.takeLossesToReport() == 0)
        let expected = ((next - unacknowledged)..<next).map {
            String(decoding: record($0, padding: 200), as: UTF8.self)
        }
        #expect(readAll(reopened) == expected)
    }

    @Test func aReaderAcknowledgingWhileAnotherThreadAppendsGetsEveryRecordOnceInOrder() async throws {
        // Reads copy outside the lock appends take, and retiring segments (zeroing the spare) happens outside it
        // too: with 16 KiB segments, dozens are retired and reused while the appender runs. (ThreadSanitizer runs
        // this suite in CI.)
        let directory = try TemporaryDirectory(prefix: "spool-concurrent")
        let spool = try LogstashSpool(
            configuration: .init(directory: directory.path, segmentBytes: 16 << 10, maxRecordBytes: 4 << 10)
        )
        defer { spool.close() }
        let count = 20_000
        let failure = LockedValue<String?>(nil)
        let appender = Thread {
            for index in 0..<count {
                do {
                    try spool.append(record(index))
                } catch {
                    failure.withLock { $0 = "append \(index): \(error)" }
                    return
                }
            }
        }
        appender.start()
        // The reader on a thread of its own too: it polls, which on the test pool (two threads) would hold one, and
        // suspended between polls it would wait on the pool's other tests (under ThreadSanitizer, for a minute).
        let received = await offThePool { () -> [String] in
            var received: [String] = []
            received.reserveCapacity(count)
            let deadline = ContinuousClock.now + .seconds(60)
            while received.count < count, failure.current == nil, ContinuousClock.now < deadline {
                let batch = spool.read(from: spool.cursor, maxBytes: 64 << 10, maxRecords: 300)
                if batch.recordCount == 0 {
                    usleep(50)
                    continue
                }
                received += lines(batch)
                spool.acknowledge(upTo: batch.end)
            }
            return received
        }
        #expect(failure.current == nil)
        #expect(received.count == count)
        let firstWrong = received.enumerated().first {
            $0.element != String(decoding: record($0.offset), as: UTF8.self)
        }
        #expect(firstWrong == nil, "record \(firstWrong?.offset ?? 0) reads \(firstWrong?.element ?? "")")
        #expect(spool.counterSnapshot.queuedRecords == 0)
        #expect(spool.counterSnapshot.segmentCount <= 2)
    }

    @Test func aSpareLeftByACrashIsDeletedWhenTheFolderOpens() throws {
        // A process killed while zeroing a retired segment leaves its half-zeroed spare: never read, deleted.
        let directory = try TemporaryDirectory(prefix: "spool-stale-spare")
        try LogstashSpool(configuration: .init(directory: directory.path)).close()
        #expect(FileManager.default.createFile(atPath: directory.file("spare.tmp"), contents: Data(record(1))))
        let spool = try LogstashSpool(configuration: .init(directory: directory.path))
        defer { spool.close() }
        #expect(!FileManager.default.fileExists(atPath: directory.file("spare.tmp")))
        #expect(spool.counterSnapshot.queuedRecords == 0)
    }

    @Test func aLockHeldForAMomentIsWaitedForNotRefused() throws {
        // A subprocess being spawned holds a copy of the lock's descriptor until it execs: a spool closed
        // a moment ago may still look locked. Stand-in: another descriptor holds the lock for 100 ms.
        let directory = try TemporaryDirectory(prefix: "spool-transient-lock")
        try LogstashSpool(configuration: .init(directory: directory.path)).close()
        let holder = open(directory.file("spool.lock"), O_RDWR | O_CLOEXEC)
        #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
        // On a thread of its own: Dispatch's shared threads may all be busy with other tests' work.
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.1)
            close(holder)
        }
        let spool = try LogstashSpool(configuration: .init(directory: directory.path))
        spool.close()
    }
}

/// The inode numbers of the segment files in `directory` now.
private func segmentInodes(in directory: TemporaryDirectory) -> Set<UInt64> {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    return Set(
        names.filter { $0.hasSuffix(".seg") }.compactMap { name in
            var info = stat()
            return stat(directory.file(name), &info) == 0 ? UInt64(info.st_ino) : nil
        }
    )
}
