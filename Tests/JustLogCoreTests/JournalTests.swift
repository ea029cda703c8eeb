import Foundation
import JustLogTestSupport
import Testing

@testable import JustLogCore

@Suite struct JournalTests {
    static let prefix: UInt64 = 0x1234_5678_9abc_def0

    private func event(_ index: Int, error: (any Error)? = nil) -> LogEvent {
        LogEvent(
            level: index % 5 == 0 ? .warning : .info,
            message: "journal event \(index) ✓",
            error: error,
            userInfo: [
                "index": .int(Int64(index)), "big": .uint(.max), "ratio": .double(-0.25), "ok": .bool(true),
                "none": .null, "nested": ["list": [1, "two", ["three": 3.5]], "empty": .object([:])],
            ],
            metadata: ["logger": "tests"],
            callSite: CallSite(file: "Tests/JournalTests.swift", function: "event(_:)", line: UInt(100 + index)),
            timestamp: LogTimestamp(nanosecondsSinceEpoch: 1_700_000_000_000_000_000 + Int64(index) * 1_000_000),
            truncations: index == 3 ? ["userInfo.tags: kept 1 of 2 elements (limit 1)"] : []
        )
    }

    private func encoded(_ event: LogEvent, sequence: UInt64, limits: CaptureLimits = CaptureLimits()) -> [UInt8] {
        var bytes: [UInt8] = []
        let chain = event.error.map { ErrorChain($0, limits: limits) }
        JournalCodec.encode(event, chain: chain, eventIDPrefix: Self.prefix, into: &bytes)
        JournalCodec.setSequence(sequence, in: &bytes)
        return bytes
    }

    @Test func aJournaledEventBuildsTheSameRecordAsTheEventItself() throws {
        let underlying = NSError(domain: "com.example.disk", code: 28, userInfo: ["path": "/var/log"])
        let error = NSError(
            domain: "com.just-eat.test",
            code: 1234,
            userInfo: [
                NSLocalizedDescriptionKey: "description", NSLocalizedFailureReasonErrorKey: "error value",
                NSUnderlyingErrorKey: underlying,
            ]
        )
        let original = event(3, error: error)
        let bytes = encoded(original, sequence: 77)
        let (entry, consumed) = try bytes.withUnsafeBytes { try JournalCodec.decode($0) }
        #expect(consumed == bytes.count)
        #expect(entry.sequence == 77)
        #expect(entry.eventIDPrefix == Self.prefix)
        let builder = RecordBuilder(
            defaultUserInfo: ["app": "tests"],
            runtime: RuntimeInfo(appVersion: "1.0 (1)", osVersion: "10.1", device: "x86_64"),
            eventIDs: EventIDGenerator(prefix: Self.prefix)
        )
        let expected = builder.record(for: original, sequence: 77)
        let rebuilt = builder.record(for: entry.event, sequence: entry.sequence)
        #expect(rebuilt.message == expected.message)
        #expect(rebuilt.level == expected.level)
        #expect(rebuilt.userInfo == expected.userInfo)
        #expect(rebuilt.metadata == expected.metadata)
        #expect(rebuilt.eventID == expected.eventID)
        #expect(rebuilt.userInfo["errors"] != nil)
    }

    @Test func aDamagedRecordIsAnErrorNeverATrap() throws {
        let bytes = encoded(event(1), sequence: 1)
        for length in 0..<bytes.count {
            let cut = Array(bytes[..<length])
            #expect(throws: JournalCodec.DecodingError.self) {
                try cut.withUnsafeBytes { _ = try JournalCodec.decode($0) }
            }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var damaged = bytes
            let position = Int.random(in: 0..<damaged.count, using: &generator)
            damaged[position] ^= UInt8.random(in: 1...255, using: &generator)
            _ = try? damaged.withUnsafeBytes { try JournalCodec.decode($0) }
        }
    }

    @Test func eventIDsAreReadBackIntoPrefixAndSequence() {
        let id = EventIDGenerator(prefix: Self.prefix).id(for: 0x0001_0000_0000_0042)
        #expect(EventIDGenerator.components(of: id)! == (Self.prefix, 0x0001_0000_0000_0042))
        #expect(EventIDGenerator.components(of: "not-an-id") == nil)
        #expect(EventIDGenerator.components(of: String(repeating: "g", count: 36)) == nil)
    }

    /// What an earlier run left: `count` journaled events, of which the file holds the first `written` (the last
    /// of them torn by the crash when `torn`). After them, when `tail` says so, the file's newest line is JustLog's own
    /// report (`report`), or the journal never held the last of them (`unjournaled`: too large for it).
    private func earlierRun(
        in folder: TemporaryDirectory,
        count: Int,
        written: Int,
        torn: Bool,
        tail: String = "",
        journal configuration: EventJournal.Configuration? = nil
    ) throws {
        let journal = try EventJournal(
            configuration: configuration ?? .init(directory: folder.file("app.log.journal"))
        )
        for index in 0..<count where !(tail == "unjournaled" && index == written - 1) {
            _ = journal.append(encoded(event(index), sequence: UInt64(index)))
        }
        journal.close()
        let builder = RecordBuilder(eventIDs: EventIDGenerator(prefix: Self.prefix))
        var bytes: [UInt8] = []
        let format = LineFormat(timeZone: .current, colors: false)
        for index in 0..<written {
            format.writeFileLine(for: builder.record(for: event(index), sequence: UInt64(index)), into: &bytes)
        }
        if torn {
            var line: [UInt8] = []
            format.writeFileLine(for: builder.record(for: event(written), sequence: UInt64(written)), into: &line)
            bytes += line.prefix(line.count / 2)
        }
        if tail == "report" {
            let report = LogEvent.report("JustLog dropped 3 event(s)", userInfo: ["dropped_events": .uint(3)])
            format.writeFileLine(for: RecordBuilder().record(for: report, sequence: UInt64(count + 7)), into: &bytes)
        }
        try Data(bytes).write(to: folder.appending("app.log"))
    }

    private func pipeline(on folder: TemporaryDirectory, _ destinations: [any LogDestination]) throws -> LogPipeline {
        let journal = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        return LogPipeline(
            setup: .init(routes: destinations.map { .init($0) }, journal: journal),
            diagnostics: DiagnosticSink { _ in }
        )
    }

    /// The file resumes after the newest recovered event it holds: its last whole line; or, when no recovered event
    /// matches that line — JustLog's own report, or an event the journal never held — the newest line before it that
    /// one matches. (Before, only the last line was read: a file whose last line matched nothing got every recovered
    /// event a second time.)
    @Test(arguments: ["whole", "torn", "report", "unjournaled"])
    func theFileGetsWhatAnEarlierRunJournaledAfterItsNewestEventEachOnce(tail: String) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // (The cases added later are smaller: under ThreadSanitizer, in CI, these tests together held both cores for
        // minutes, and tests with a time limit ran out of it.)
        let (count, written) = tail == "whole" || tail == "torn" ? (3_000, 1_234) : (600, 234)
        try await offPool {
            try earlierRun(in: folder, count: count, written: written, torn: tail == "torn", tail: tail)
        }
        let file = try FileDestination(configuration: .init(url: folder.appending("app.log")))
        let pipeline = try pipeline(on: folder, [file])
        // The recovery's subject is what is written, not how fast: a minute of patience (under ThreadSanitizer, beside
        // sanitized child processes, its writes once made no progress for the default 5 s).
        let failure = await pipeline.shutdown(timeout: 60)
        #expect(failure == nil, "\(String(describing: failure))")
        let records = try await fileRecords(folder.appending("app.log")).filter {
            !$0.message.hasPrefix("JustLog dropped")
        }
        // Before indexing: a short file must fail the test, not crash the test process.
        try #require(records.count == count + 1, "\(records.count) lines")
        #expect(records.prefix(count).map(\.message) == (0..<count).map { "journal event \($0) ✓" })
        #expect(records[count - 1].eventID == EventIDGenerator(prefix: Self.prefix).id(for: UInt64(count - 1)))
        #expect(records.last?.userInfo["recovered_events"] == .int(Int64(tail == "unjournaled" ? count - 1 : count)))
    }

    /// Rotated just before the kill: the file holds only JustLog's report, its predecessor the events. The file reads
    /// on into its predecessor for the newest event it holds.
    @Test(.disabled(if: underThreadSanitizer, heavyUnderThreadSanitizer))
    func aFileRotatedJustBeforeTheKillResumesAfterTheNewestEventOfItsPredecessor() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try await offPool { try earlierRun(in: folder, count: 600, written: 234, torn: false, tail: "report") }
        let text = try String(contentsOf: folder.appending("app.log"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        try (lines.dropLast().joined(separator: "\n") + "\n").write(
            to: folder.appending("app.log.1"),
            atomically: false,
            encoding: .utf8
        )
        try (lines.last! + "\n").write(to: folder.appending("app.log"), atomically: false, encoding: .utf8)
        let file = try FileDestination(configuration: .init(url: folder.appending("app.log")))
        let pipeline = try pipeline(on: folder, [file])
        #expect(await pipeline.shutdown(timeout: 60) == nil)
        let messages = try ["app.log.1", "app.log"].flatMap { name in
            try String(contentsOf: folder.appending(name), encoding: .utf8).split(separator: "\n")
                .map { try FileLine(parsing: $0).record.message }
        }
        #expect(messages.filter { $0.hasPrefix("journal event") } == (0..<600).map { "journal event \($0) ✓" })
    }

    /// The records of the file at `url`, read and parsed off Swift Testing's two-thread pool (see ``offPool(_:)``).
    private func fileRecords(_ url: URL) async throws -> [LogRecord] {
        try await offThePool {
            Result {
                try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
                    .map { try FileLine(parsing: $0).record }
            }
        }.get()
    }

    /// Runs a test's heavy synchronous set-up off Swift Testing's two-thread pool: under ThreadSanitizer it takes
    /// seconds, and a pool thread held that long starves other tests' waits (one's caller then ran out of patience).
    private func offPool(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await offThePool { Result { try work() } }.get()
    }

    /// Journals events 0..<`count` (none acknowledged) and writes `lines` to the file, as `(message, sequence, level)`.
    private func journalAndFile(
        in folder: TemporaryDirectory,
        count: Int,
        lines: [(message: String, sequence: Int, level: LogLevel)]
    ) throws {
        let journal = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        for index in 0..<count { _ = journal.append(encoded(event(index), sequence: UInt64(index))) }
        journal.close()
        let builder = RecordBuilder(eventIDs: EventIDGenerator(prefix: Self.prefix))
        var bytes: [UInt8] = []
        let format = LineFormat(timeZone: .current, colors: false)
        for line in lines {
            var event = event(line.sequence)
            event.message = line.message
            event.level = line.level
            format.writeFileLine(for: builder.record(for: event, sequence: UInt64(line.sequence)), into: &bytes)
        }
        try Data(bytes).write(to: folder.appending("app.log"))
    }

    /// An earlier run whose pipeline used the same `event_id` prefix (one setup's builder given to a second pipeline):
    /// its lines, older in the file, carry ids the journal holds again. The file resumes after the newest line that
    /// matches, not after the one latest in the journal (review, helper-38: that one skipped 500 events).
    @Test(.disabled(if: underThreadSanitizer, heavyUnderThreadSanitizer))
    func aFileResumesAfterItsNewestMatchingLineThoughOlderLinesReuseTheIDs() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try await offPool {
            try journalAndFile(
                in: folder,
                count: 1_000,
                lines: (0..<600).map { ("older run \($0)", $0, .info) }
                    + (0..<100).map { ("journal event \($0) ✓", $0, .info) }
            )
        }
        let file = try FileDestination(configuration: .init(url: folder.appending("app.log")))
        let pipeline = try pipeline(on: folder, [file])
        #expect(await pipeline.shutdown(timeout: 60) == nil)
        let messages = try String(contentsOf: folder.appending("app.log"), encoding: .utf8).split(separator: "\n")
            .map { try FileLine(parsing: $0).record.message }.filter { $0.hasPrefix("journal event") }
        #expect(messages == (0..<1_000).map { "journal event \($0) ✓" })
    }

    /// One file routed twice, at `warning` and at every level: the pipeline writes a batch route by route, so the file
    /// is not in journal order — killed between the two routes' writes, its newest line (a warning) comes after an
    /// event it does not hold (review, helper-38). Such a destination is given everything again: duplicates, not a
    /// loss.
    @Test func aDestinationRoutedTwiceIsGivenEveryRecoveredEvent() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Batch 0..<4: the warning route wrote 0, the other 0…3; batch 4..<10: the warning route wrote 5, then the kill.
        try journalAndFile(
            in: folder,
            count: 10,
            lines: [0, 0, 1, 2, 3, 5].map { ("journal event \($0) ✓", $0, $0 % 5 == 0 ? .warning : .info) }
        )
        let file = try FileDestination(configuration: .init(url: folder.appending("app.log")))
        let pipeline = LogPipeline(
            setup: .init(
                routes: [.init(file, minimumLevel: .warning), .init(file)],
                journal: try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
            ),
            diagnostics: DiagnosticSink { _ in }
        )
        #expect(await pipeline.shutdown(timeout: 60) == nil)
        let messages = try String(contentsOf: folder.appending("app.log"), encoding: .utf8).split(separator: "\n")
            .map { try FileLine(parsing: $0).record.message }
        #expect(Set(messages.filter { $0.hasPrefix("journal event") }) == Set((0..<10).map { "journal event \($0) ✓" }))
    }

    @Test func aDestinationThatCountsOnlyGetsTheLineThatSaysHowManyAndOthersGetEverything() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try earlierRun(in: folder, count: 50, written: 0, torn: false)
        let everything = CapturingDestination()
        let countOnly = CountOnlyDestination()
        let pipeline = try pipeline(on: folder, [everything, countOnly])
        await pipeline.shutdown()
        #expect(everything.records.count == 51)
        #expect(countOnly.capture.records.map(\.message) == [everything.records.last?.message])
    }

    /// A record the codec can't read (written by a newer version) is skipped, counted and reported; the records
    /// after it arrive. (Reads copied the records one after another, `\n` between: the codec could not tell where an
    /// unreadable one ended, and the rest of its read — up to 256 events — was lost with it.)
    @Test func aRecordOfANewerVersionIsSkippedAndReportedAndTheRecordsAfterItArrive() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let earlier = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        for index in 0..<50 {
            var record = encoded(event(index), sequence: UInt64(index))
            if index == 20 { record[0] = JournalCodec.version &+ 1 }
            _ = earlier.append(record)
        }
        earlier.close()
        let reports = LockedValue<[String]>([])
        let capture = CapturingDestination()
        let pipeline = LogPipeline(
            setup: .init(
                routes: [.init(capture)],
                journal: try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
            ),
            diagnostics: DiagnosticSink { line in reports.withLock { $0.append(line) } }
        )
        await pipeline.shutdown()
        let messages = capture.records.map(\.message)
        #expect(messages.dropLast(2) == (0..<50).filter { $0 != 20 }.map { "journal event \($0) ✓" })
        #expect(capture.records.dropLast().last?.userInfo["recovered_events"] == .uint(49))
        // Counted and said in the log too, not only on the diagnostics sink.
        #expect(capture.records.last?.userInfo["lost_events"] == .uint(1))
        #expect(pipeline.currentStatistics.dropped == 1)
        let reported = reports.current
        #expect(
            reported.contains { $0.hasPrefix("JustLog: lost 1 event(s)") && $0.contains("1 could not be read") },
            "\(reported)"
        )
    }

    /// Review (helper-34): what the journal found lost when it was opened (a segment deleted, damaged records) was
    /// said on the diagnostics sink only: not in the pipeline's statistics, and no line in the log said so.
    /// - `middle`: the file holds the events up to the deleted segment's and past it (the run was killed before the
    ///   journal was acknowledged). The report comes after the recovery, so that the file still resumes after its
    ///   newest event (review, helper-36: written first, the report was the file's newest line, and every
    ///   recovered event was written a second time).
    /// - `newest`: no segment left says how many the deleted one held; it held the file's newest event, and the file
    ///   resumes after the newest one the journal still has.
    @Test(.disabled(if: underThreadSanitizer, heavyUnderThreadSanitizer), arguments: ["middle", "newest"])
    func eventsTheJournalFoundLostAtOpenAreCountedAndReportedInTheLog(deleted segment: String) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let journal = EventJournal.Configuration(directory: folder.file("app.log.journal"), segmentBytes: 64 << 10)
        let total = 1_500
        let newest = segment == "newest"
        try await offPool {
            try earlierRun(in: folder, count: total, written: total - 10, torn: false, journal: journal)
        }
        let segments = try FileManager.default.contentsOfDirectory(atPath: journal.directory)
            .filter { $0.hasSuffix(".seg") }.sorted()
        try #require(segments.count >= 3, "\(segments)")
        #expect(unlink(journal.directory + "/" + (newest ? segments.last! : segments[1])) == 0)

        let reports = LockedValue<[String]>([])
        let diagnostics = DiagnosticSink { line in reports.withLock { $0.append(line) } }
        let file = try FileDestination(configuration: .init(url: folder.appending("app.log")))
        let pipeline = LogPipeline(
            setup: .init(
                routes: [.init(file)],
                journal: try EventJournal(configuration: journal, diagnostics: diagnostics)
            ),
            diagnostics: diagnostics
        )
        #expect(await pipeline.shutdown(timeout: 60) == nil)
        let records = try await fileRecords(folder.appending("app.log"))
        let events = records.map(\.message).filter { $0.hasPrefix("journal event") }
        #expect(events.count == Set(events).count, "\(events.count - Set(events).count) event(s) written twice")
        let written = Set(events)
        let missing = (0..<total).filter { !written.contains("journal event \($0) ✓") }
        if newest {
            #expect(
                missing == Array(total - 10..<total),
                "only the newest segment's events that the file had not are lost"
            )
            #expect(records.last?.userInfo["lost_events_unknown"] == .bool(true), "\(String(describing: records.last))")
            #expect(records.last?.message.contains("how many is unknown") == true)
            #expect(pipeline.currentStatistics.dropped == 0)
        } else {
            #expect(missing.isEmpty, "the file had the deleted segment's events, and got the last ten: \(missing)")
            let reported = records.last?.userInfo["lost_events"]
            #expect(reported != nil && reported != .int(0), "\(String(describing: records.last))")
            #expect(reported.map { .int(Int64(pipeline.currentStatistics.dropped)) == $0 } == true)
            #expect(reports.current.contains { $0.contains("could not be read") }, "\(reports.current)")
        }
    }

    /// A record the pipeline's thread can't read among those it reads while the program runs is skipped alone: the
    /// records after it in the same read are written, in order, plain ones straight from their bytes and the others
    /// the general way.
    @Test func theBackgroundSkipsAnUnreadableRecordAloneAndWritesTheRestInOrder() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let journal = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        defer { journal.close() }
        let file = try FileDestination(configuration: .init(url: folder.appending("app.log")))
        let dispatcher = RecordDispatcher(
            routes: [.init(file)],
            builder: RecordBuilder(eventIDs: EventIDGenerator(prefix: Self.prefix)),
            sanitizer: nil,
            journal: journal
        )
        func plain(_ index: Int) -> LogEvent {
            LogEvent(
                level: .info,
                message: "plain event \(index)",
                userInfo: ["index": .int(Int64(index))],
                callSite: CallSite(file: "Tests/JournalTests.swift", function: "plain(_:)", line: 7),
                timestamp: LogTimestamp(nanosecondsSinceEpoch: 1_700_000_000_000_000_000)
            )
        }
        for index in 0..<6 {
            var record = encoded(index.isMultiple(of: 2) ? plain(index) : event(index), sequence: UInt64(index))
            if index == 3 { record[0] = JournalCodec.version &+ 1 }
            _ = journal.append(record)
        }
        let records = journal.read(from: journal.cursor, maxRecords: 10)
        #expect(records.recordCount == 6)
        let written = dispatcher.writeBackground(journaled: records)
        #expect(written.records == 5 && written.unreadable == 1)
        file.shutdown()
        let messages = try String(contentsOf: folder.appending("app.log"), encoding: .utf8).split(separator: "\n")
            .map { try FileLine(parsing: $0).record.message }
        #expect(
            messages == ["plain event 0", "journal event 1 ✓", "plain event 2", "plain event 4", "journal event 5 ✓"]
        )
    }

    @Test func whatWasWrittenIsNotRecoveredAgain() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let first = CapturingDestination()
        let pipeline = try pipeline(on: folder, [first])
        for index in 0..<500 { pipeline.submit(event(index)) }
        await pipeline.shutdown()
        #expect(first.records.count == 500)
        let second = CapturingDestination()
        let restarted = try self.pipeline(on: folder, [second])
        restarted.submit(event(500))
        await restarted.shutdown()
        #expect(second.records.map(\.message) == ["journal event 500 ✓"])
    }

    // MARK: - A full queue spills into the journal

    private func spillingPipeline(
        on folder: TemporaryDirectory,
        _ destinations: [any LogDestination],
        journalBytes: Int = 64 << 20,
        diagnostics: DiagnosticSink = DiagnosticSink { _ in }
    ) throws -> LogPipeline {
        let journal = try EventJournal(
            configuration: .init(
                directory: folder.file("app.log.journal"),
                segmentBytes: 64 << 10,
                maxTotalBytes: journalBytes
            )
        )
        return LogPipeline(
            setup: .init(
                routes: destinations.map { .init($0) },
                configuration: .init(capacity: 8, fullQueueWait: 0),
                journal: journal
            ),
            diagnostics: diagnostics
        )
    }

    @Test func aFullQueueSpillsIntoTheJournalAndLosesNothingInOrder() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let blocking = BlockingDestination()
        let capture = CapturingDestination()
        let inline = CapturingDestination(delivery: .inline)
        let pipeline = try spillingPipeline(on: folder, [blocking, capture, inline])
        // No patience at all (fullQueueWait 0): without the journal, all but the first few would be dropped.
        for index in 0..<3_000 { pipeline.submit(event(index)) }
        #expect(pipeline.currentStatistics.dropped == 0)
        #expect(inline.records.count == 3_000, "inline destinations still get every event on the caller's thread")
        #expect(capture.records.count < 3_000, "the background destinations are held up")
        blocking.release()
        try await pipeline.flush()
        #expect(capture.records.map(\.message) == (0..<3_000).map { "journal event \($0) ✓" })
        #expect(
            capture.records.map { EventIDGenerator.components(of: $0.eventID)?.sequence }
                == (0..<3_000).map(UInt64.init)
        )
        #expect(capture.records.map(\.eventID) == inline.records.map(\.eventID))
        #expect(capture.records.map(\.userInfo) == inline.records.map(\.userInfo))
        #expect(capture.records.map(\.metadata) == inline.records.map(\.metadata))
        let statistics = pipeline.currentStatistics
        #expect(statistics.delivered == 3_000)
        #expect(statistics.dropped == 0)
        await pipeline.shutdown()
        // Everything written was acknowledged: nothing is recovered by the next run.
        let next = CapturingDestination()
        let restarted = try spillingPipeline(on: folder, [next])
        await restarted.shutdown()
        #expect(next.records.isEmpty)
    }

    @Test func aDestinationMayHoldThePipelineBackOnlyWhileTheJournalIsLessThanHalfFull() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let blocking = BlockingDestination()
        let holding = HoldingBackRecorder()
        // 256 KiB of journal: half is 128 KiB, a few hundred events.
        let pipeline = try spillingPipeline(on: folder, [blocking, holding], journalBytes: 256 << 10)
        let mayWait = try #require(holding.mayWait, "a pipeline with a journal tells the destination")
        #expect(mayWait())
        for index in 0..<1_000 { pipeline.submit(event(index)) }
        #expect(!mayWait(), "the journal is half full: waiting would hold the calls back")
        blocking.release()
        try await pipeline.flush()
        #expect(mayWait())
        await pipeline.shutdown()

        let unjournaled = HoldingBackRecorder()
        let memoryOnly = LogPipeline(setup: .init(routes: [.init(unjournaled)]))
        #expect(unjournaled.mayWait == nil, "without a journal, nothing would hold what is logged meanwhile")
        await memoryOnly.shutdown()
    }

    @Test func aCallerWaitingAtHalfTheJournalSpillsAgainOnceTheWorkerFreesRoomThoughADestinationHoldsItBack()
        async throws
    {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Holds every write back while it may (like a Logstash spool at its cap whose records the collector can't
        // confirm yet): the worker moves only when the journal is half full, and a caller waiting then must spill
        // into the room the worker freed, not wait for the queue until it gives up. The patience and the queue's
        // wait are long so that only that wrong wait can drop: with 0.5 s, a chunk of 256 records written slowly
        // (ThreadSanitizer, sibling tests on two cores) outlasted the wait and dropped, the design working.
        let holding = HoldingWhileItMay(patience: .seconds(600))
        let journal = try EventJournal(
            configuration: .init(
                directory: folder.file("app.log.journal"),
                segmentBytes: 64 << 10,
                maxTotalBytes: 256 << 10
            )
        )
        let pipeline = LogPipeline(
            setup: .init(
                routes: [.init(holding)],
                configuration: .init(capacity: 8, fullQueueWait: 30),
                journal: journal
            )
        )
        let count = 5_000
        let events = (0..<count).map { event($0) }
        // On a thread of its own: a caller starved on the test pool never reached half the journal, and the test
        // then showed nothing. It stops at the first drop (each would cost the queue's wait).
        await offThePool {
            for (index, event) in events.enumerated() {
                pipeline.submit(event)
                if index % 100 == 99, pipeline.currentStatistics.dropped > 0 { return }
            }
        }
        #expect(pipeline.currentStatistics.dropped == 0, "no caller waited for the queue until it gave up")
        #expect(holding.holdsEndedByTheJournal > 0, "no hold ended at half the journal: the case did not happen")
        holding.stopHolding()
        try await pipeline.flush()
        let messages = holding.capture.records.map(\.message)
        #expect(messages.count == count)
        #expect(messages.elementsEqual((0..<count).lazy.map { "journal event \($0) ✓" }), "every event, in order")
        await pipeline.shutdown()
    }

    @Test func pastHalfTheJournalAFullQueueFallsBackToDroppingAndCountsEveryLoss() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let blocking = BlockingDestination()
        let capture = CapturingDestination()
        let diagnostics = LineCapture()
        // 128 KiB of journal: about 64 KiB of spilled events, a few hundred.
        let pipeline = try spillingPipeline(
            on: folder,
            [blocking, capture],
            journalBytes: 128 << 10,
            diagnostics: diagnostics.diagnostics
        )
        for index in 0..<3_000 { pipeline.submit(event(index)) }
        let dropped = pipeline.currentStatistics.dropped
        #expect(dropped > 0)
        #expect(dropped < 3_000 - 100, "at least the spilled ones are kept")
        blocking.release()
        try await pipeline.flush()
        let events = capture.records.filter { $0.message.hasPrefix("journal event") }
        let reported = reportedDrops(in: capture.records)
        #expect(UInt64(events.count) + pipeline.currentStatistics.dropped == 3_000)
        #expect(reported == pipeline.currentStatistics.dropped, "every loss is reported")
        let sequences = events.compactMap { EventIDGenerator.components(of: $0.eventID)?.sequence }
        #expect(sequences.count == events.count, "every kept event has the event id it was given")
        #expect(sequences == sequences.sorted(), "what is kept stays in order")
        await pipeline.shutdown()
    }
}

/// A journal's or spool's folder is where this program's records go and what it writes over: a folder another user
/// could write in is not used (review, helper-69: one made ahead in a shared log folder, with links planted as the
/// cursor and a segment, had the program overwrite and truncate the files they pointed to).
@Suite struct SpoolFolderOwnershipTests {
    /// A link another user made as the folder is not followed, root's program included.
    @Test(.enabled(if: geteuid() == 0, "needs root to make a link another user owns"))
    func aLinkAnotherUserMadeAsTheFolderIsRefusedAndLeftUntouched() throws {
        let parent = try TemporaryDirectory(prefix: "spool-owner")
        defer { parent.remove() }
        let folder = parent.file("app.log.journal")
        let target = parent.file("elsewhere")
        #expect(mkdir(target, 0o700) == 0)
        #expect(symlink(target, folder) == 0)
        #expect(lchown(folder, 65_534, 65_534) == 0)
        let error = #expect(throws: JustLogError.self) {
            try Spool(configuration: .init(directory: folder), diagnostics: DiagnosticSink { _ in }).close()
        }
        #expect(error?.code == .spoolUnavailable)
        #expect(error?.message.contains("is a symbolic link another user") == true, "\(String(describing: error))")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: target)) == [])
    }

    /// A folder of this user's that others can write in (made with umask 002, a volume's group permissions) is made
    /// owner-only and used: before, other users could plant links there as the cursor and segments.
    @Test(arguments: [0o777, 0o770, 0o2775])
    func aFolderOthersCanWriteIsMadeOwnerOnlyAndUsed(mode: Int) throws {
        let parent = try TemporaryDirectory(prefix: "spool-owner")
        defer { parent.remove() }
        let folder = parent.file("app.log.journal")
        #expect(mkdir(folder, 0o700) == 0)
        #expect(chmod(folder, mode_t(mode)) == 0)
        let spool = try Spool(configuration: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        try spool.append(Array("kept".utf8))
        spool.close()
        var info = stat()
        #expect(stat(folder, &info) == 0)
        #expect(info.st_mode & 0o022 == 0, "mode \(String(info.st_mode & 0o7777, radix: 8))")
    }

    /// A hard link planted as a segment (a file of this user's elsewhere: records written there would change it) is
    /// moved aside, not written.
    @Test func aSegmentThatIsAHardLinkIsMovedAsideNotWritten() throws {
        let parent = try TemporaryDirectory(prefix: "spool-hard-link")
        defer { parent.remove() }
        let folder = parent.file("app.log.journal")
        let spool = try Spool(configuration: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        spool.close()
        let precious = parent.file("precious")
        #expect(FileManager.default.createFile(atPath: precious, contents: Data(repeating: 7, count: 64 << 10)))
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasSuffix(".seg") }
        )
        #expect(unlink(folder + "/" + segment) == 0)
        #expect(link(precious, folder + "/" + segment) == 0)
        let again = try Spool(configuration: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        try again.append(Array("kept".utf8))
        again.close()
        #expect(FileManager.default.contents(atPath: precious) == Data(repeating: 7, count: 64 << 10))
    }

    /// Its `spool.lock` deleted while a spool holds it (a cleaner of old files in /tmp), the next spool made a new
    /// one and took it: two spools writing one folder's files (review, helper-69). The folder itself is locked too.
    @Test func aSecondSpoolStaysOutThoughTheLockFileWasDeleted() throws {
        let parent = try TemporaryDirectory(prefix: "spool-lock-deleted")
        defer { parent.remove() }
        let folder = parent.file("app.log.journal")
        let first = try Spool(configuration: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        defer { first.close() }
        #expect(unlink(folder + "/spool.lock") == 0)
        let second = try Spool(unopened: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        let error = #expect(throws: JustLogError.self) { try second.open(waitingForLock: .milliseconds(50)) }
        #expect(error?.message.contains("in use by another logger or process") == true, "\(String(describing: error))")
        second.close()
    }

    /// A spool waiting for the folder's lock while its holder deletes the folder (a journal no logger writes any
    /// more, see `StrayJournals`) makes the folder again, rather than take the deleted one's lock and fail there.
    @Test func aSpoolWaitingForAFolderItsHolderDeletesMakesItAgain() async throws {
        let parent = try TemporaryDirectory(prefix: "spool-deleted-while-waiting")
        defer { parent.remove() }
        let folder = parent.file("app.log.journal")
        let first = try Spool(configuration: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        let second = try Spool(unopened: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        let opened = LockedValue<String?>(nil)
        Thread.detachNewThread {
            do {
                try second.open(waitingForLock: .seconds(3_600))
                opened.withLock { $0 = "opened" }
            } catch {
                opened.withLock { $0 = "\(error)" }
            }
        }
        // (If the second has not started waiting yet, it makes the folder anew all the same. It waits as long as it
        // takes: on a loaded machine this task resumed after the second had waited a minute — CI's full run.)
        try await Task.sleep(for: .milliseconds(300))
        #expect(first.closeRemovingFolderIfEmpty())
        #expect(await eventually(timeout: .seconds(600)) { opened.current != nil })
        #expect(opened.current == "opened")
        try second.append(Array("kept".utf8))
        second.close()
        let again = try Spool(configuration: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        defer { again.close() }
        #expect(again.read(from: again.cursor, maxBytes: 1 << 20, maxRecords: 10).recordCount == 1)
    }

    /// A folder of this user's, or a link this user made to one (a journal kept on another disk), is used.
    @Test(arguments: [false, true])
    func aFolderOrLinkOfThisUsersIsUsed(throughALink: Bool) throws {
        let parent = try TemporaryDirectory(prefix: "spool-owner")
        defer { parent.remove() }
        let folder = parent.file("app.log.journal")
        if throughALink {
            #expect(mkdir(parent.file("elsewhere"), 0o750) == 0)
            #expect(symlink(parent.file("elsewhere"), folder) == 0)
        }
        let spool = try Spool(configuration: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        try spool.append(Array("kept".utf8))
        spool.close()
        let again = try Spool(configuration: .init(directory: folder), diagnostics: DiagnosticSink { _ in })
        defer { again.close() }
        #expect(again.read(from: again.cursor, maxBytes: 1 << 20, maxRecords: 10).recordCount == 1)
    }
}

/// The fast lane when the destinations fall behind: at half the journal a log call waits there for room, as a call
/// waits for a full queue, instead of leaving the fast lane for the memory queue — where every event would cost its
/// caller a capture and the pipeline's thread a rebuilt record, and a stream faster than the destinations would
/// slow down to half what they can write (BENCHMARKS part 18).
@Suite struct FastLaneBackPressureTests {
    /// A pipeline whose destinations all read a journal of `journalBytes` (the fast lane is open): a call's record
    /// takes ~250 bytes, so half of 256 KiB is ~500 calls.
    private func pipeline(
        on folder: TemporaryDirectory,
        _ destinations: [any LogDestination],
        journalBytes: Int = 256 << 10,
        fullQueueWait: Double,
        writes: Spool.Configuration.SegmentWrites = .byFileSystem
    ) throws -> (LogPipeline, EventJournal) {
        var configuration = EventJournal.Configuration(
            directory: folder.file("app.log.journal"),
            segmentBytes: 64 << 10,
            maxTotalBytes: journalBytes
        )
        configuration.segmentWrites = writes
        let journal = try EventJournal(configuration: configuration)
        let pipeline = LogPipeline(
            setup: .init(
                routes: destinations.map { .init($0) },
                configuration: .init(fullQueueWait: fullQueueWait),
                journal: journal
            ),
            diagnostics: DiagnosticSink { _ in }
        )
        return (pipeline, journal)
    }

    /// Fast-lane call `index`: "fast lane event <index>", with `padding` bytes of padding in its `userInfo`.
    fileprivate static func log(_ index: Int, padding: Int, to pipeline: LogPipeline) {
        pipeline.submitCall(
            .info,
            "fast lane event \(index)",
            error: nil,
            userInfo: ["index": index, "padding": String(repeating: "p", count: padding)],
            callSite: CallSite(file: #fileID, function: #function, line: #line)
        )
    }

    /// Makes `count` fast-lane calls on a thread of its own (a call may wait); the flag says when it is done.
    private func logOnAThread(_ pipeline: LogPipeline, count: Int, padding: Int = 100) -> LockedValue<Bool> {
        let done = LockedValue(false)
        Thread.detachNewThread {
            for index in 0..<count { Self.log(index, padding: padding, to: pipeline) }
            done.withLock { $0 = true }
        }
        return done
    }

    private func expectEveryEventInOrder(_ capture: CapturingDestination, count: Int) {
        let messages = capture.records.map(\.message)
        #expect(messages.count == count)
        #expect(messages.elementsEqual((0..<count).lazy.map { "fast lane event \($0)" }), "every event, in order")
    }

    /// Also with the journal written through the file (as on btrfs: each record written under the spool's lock, no
    /// place reserved to fill after it), which the fast lane takes the same way.
    @Test(arguments: [Spool.Configuration.SegmentWrites.mapped, .throughFile])
    func aFastLaneCallerWaitsAtHalfTheJournalForRoomInsteadOfLeavingTheFastLane(
        writes: Spool.Configuration.SegmentWrites
    ) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let blocking = BlockingDestination()
        let capture = CapturingDestination()
        // The caller's patience is not what this tests: it must outlast the test's own wait for the caller (a full
        // run on a loaded machine took over 60 s to see it, and the caller gave up its event).
        let (pipeline, journal) = try pipeline(on: folder, [blocking, capture], fullQueueWait: 600, writes: writes)
        #expect(pipeline.intake.journalOnly, "every destination reads the journal: the fast lane is open")
        let count = 3_000
        let done = logOnAThread(pipeline, count: count)
        // The memory queue has room for all 3,000: a call that left the fast lane at half the journal would not wait.
        #expect(
            await eventually(timeout: .seconds(60)) { pipeline.currentStatistics.callersWaiting == 1 },
            "a call waits at half the journal"
        )
        #expect(!done.current)
        #expect(!journal.isLessThanHalfFull)
        blocking.release()
        #expect(await eventually(timeout: .seconds(120)) { done.current })
        try await pipeline.flush()
        expectEveryEventInOrder(capture, count: count)
        #expect(pipeline.currentStatistics.dropped == 0)
        #expect(journal.unacknowledgedBytes == 0, "every event went through the journal and was acknowledged")
        await pipeline.shutdown()
    }

    @Test func aStalledDestinationCostsTheFastLaneOneWaitNotAWaitPerCall() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let blocking = BlockingDestination()
        let capture = CapturingDestination()
        // 3,000 calls of ~390 bytes take ~1.1 MiB of a 1.5 MiB journal: ~1,000 of them past its half, none at its cap.
        let (pipeline, journal) = try pipeline(
            on: folder,
            [blocking, capture],
            journalBytes: 1536 << 10,
            fullQueueWait: 0.5
        )
        let count = 3_000
        // Each call timed alone (the whole run's time would pass 0.5 s on a loaded machine without any wait).
        let done = LockedValue(false)
        let callsThatWaited = LockedValue(0)
        Thread.detachNewThread {
            for index in 0..<count {
                let started = ContinuousClock.now
                Self.log(index, padding: 200, to: pipeline)
                if ContinuousClock.now - started >= .milliseconds(500) { callsThatWaited.withLock { $0 += 1 } }
            }
            done.withLock { $0 = true }
        }
        // Waiting 0.5 s each, the calls past half the journal would take over 8 minutes. Once one call has waited in
        // vain, the others queue in memory (room for 16,384) until the destinations move again.
        #expect(await eventually(timeout: .seconds(60)) { done.current }, "the calls were not held a wait each")
        #expect(callsThatWaited.current >= 1, "a call waited for the journal, in vain")
        #expect(!journal.isLessThanHalfFull, "the calls went past half the journal")
        #expect(pipeline.currentStatistics.dropped == 0)
        blocking.release()
        try await pipeline.flush()
        expectEveryEventInOrder(capture, count: count)
        #expect(pipeline.currentStatistics.dropped == 0)
        await pipeline.shutdown()
    }

    /// A destination holds the pipeline back (a Logstash spool at its cap) only while the journal takes any call's
    /// record: below half of it, a record that would start a segment past the cap still can't be journaled, and its
    /// call would wait for a worker held back until the destination gives up (for Logstash: while the collector
    /// takes events, however slowly).
    @Test func aDestinationHoldsThePipelineBackOnlyWhileTheJournalTakesTheLargestRecordACallMayBring() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Holds far longer than this test waits: a call that waited for it would never return in time.
        let holding = HoldingWhileItMay(patience: .seconds(600), holding: false)
        // Two segments of 64 KiB: half the journal is one segment's bytes.
        let (pipeline, journal) = try pipeline(
            on: folder,
            [holding],
            journalBytes: 128 << 10,
            fullQueueWait: 600
        )
        @Sendable func log(_ index: Int, padding: Int) { Self.log(index, padding: padding, to: pipeline) }
        // ~50 KB written and acknowledged: they stay in the first segment until the rest of it is acknowledged.
        for index in 0..<45 { log(index, padding: 1_000) }
        try await pipeline.flush()
        holding.startHolding()
        // One more in the first segment: below half the journal, with room for the largest record, the destination
        // holds the pipeline back.
        log(45, padding: 1_000)
        #expect(await eventually(timeout: .seconds(120)) { holding.isHoldingAWrite }, "the destination holds")
        let done = LockedValue(false)
        Thread.detachNewThread {
            // ~32 KB more: they fill the first segment and start the second, below half the journal.
            for index in 46..<75 { log(index, padding: 1_000) }
            // ~50 KB: more than the second segment has left, so it would start a third, past the cap.
            log(75, padding: 50_000)
            done.withLock { $0 = true }
        }
        #expect(
            await eventually(timeout: .seconds(120)) { done.current },
            "the call with the large record was not held waiting for the held-back destination"
        )
        holding.stopHolding()
        try await pipeline.flush()
        expectEveryEventInOrder(holding.capture, count: 76)
        #expect(pipeline.currentStatistics.dropped == 0)
        #expect(journal.unacknowledgedBytes == 0)
        await pipeline.shutdown()
    }

    /// What an earlier run left in the journal is recovered when the logger is set up, not when the first event
    /// comes: left with no room below its half, it would hold that event's call waiting for progress only the
    /// recovery makes (`fullQueueWait`, and then every call after it, at the cap).
    @Test func aJournalAnEarlierRunLeftPastItsHalfIsRecoveredAtSetupNotAtTheFirstEvent() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let configuration = EventJournal.Configuration(
            directory: folder.file("app.log.journal"),
            segmentBytes: 64 << 10,
            maxTotalBytes: 256 << 10
        )
        // The earlier run: events journaled past half the journal, never written.
        let earlier = try EventJournal(configuration: configuration, diagnostics: DiagnosticSink { _ in })
        var left = 0
        while earlier.isLessThanHalfFull, left < 100_000 {
            var bytes: [UInt8] = []
            JournalCodec.encode(Fixtures.event(.info, "earlier \(left)"), chain: nil, eventIDPrefix: 7, into: &bytes)
            JournalCodec.setSequence(UInt64(left), in: &bytes)
            #expect(earlier.append(bytes) != nil)
            left += 1
        }
        earlier.close()

        // This run: `Logger.shared`'s way, a pipeline holding events until its setup.
        let pipeline = LogPipeline(holdingUpTo: 100, diagnostics: DiagnosticSink { _ in })
        let capture = CapturingDestination()
        let journal = try EventJournal(configuration: configuration, diagnostics: DiagnosticSink { _ in })
        await offThePool {
            _ = pipeline.reconfigure {
                .init(routes: [.init(capture)], configuration: .init(fullQueueWait: 60), journal: journal)
            }
        }
        #expect(pipeline.intake.journalOnly, "the fast lane is open")
        #expect(
            await eventually(timeout: .seconds(120)) { journal.isLessThanHalfFull },
            "recovered without an event to wake the pipeline"
        )
        let done = logOnAThread(pipeline, count: 1)
        #expect(await eventually(timeout: .seconds(120)) { done.current }, "the call did not wait")
        try await pipeline.flush()
        let messages = capture.records.map(\.message)
        #expect(messages.filter { $0.hasPrefix("earlier ") }.count == left)
        #expect(messages.last == "fast lane event 0")
        #expect(pipeline.currentStatistics.dropped == 0)
        await pipeline.shutdown()
    }

    /// Events queued in memory are journaled too (for a crash): they must not take the journal to its cap, where it
    /// would drop its oldest records — events queued by their place alone, that nobody has written. The queue is
    /// full when the journal is: the newest events are dropped and counted, as for any full queue.
    @Test func eventsQueuedInMemoryNeverTakeTheJournalToItsCapWhereItWouldDropTheOldest() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let blocking = BlockingDestination()
        let capture = CapturingDestination()
        let (pipeline, _) = try pipeline(on: folder, [blocking, capture], fullQueueWait: 0)
        let count = 3_000
        let done = logOnAThread(pipeline, count: count, padding: 200)
        #expect(await eventually(timeout: .seconds(60)) { done.current })
        let dropped = pipeline.currentStatistics.dropped
        #expect(dropped > 0, "3,000 calls don't fit in 256 KiB of journal")
        blocking.release()
        try await pipeline.flush()
        let messages = capture.records.map(\.message).filter { $0.hasPrefix("fast lane event") }
        // Half of the 256 KiB journal holds ~330 such events: what is kept is there to be checked.
        #expect(messages.count >= 300, "kept \(messages.count)")
        #expect(messages.count + Int(dropped) == count, "every loss is counted")
        #expect(
            messages.elementsEqual((0..<messages.count).lazy.map { "fast lane event \($0)" }),
            "what is kept is the oldest, whole, in order: the journal dropped nothing at its cap"
        )
        await pipeline.shutdown()
    }

    /// A destination that logs through its own pipeline while it writes makes its calls on the pipeline's thread,
    /// the one thread that makes room: past half the journal they don't wait for room (they would only wait out
    /// `fullQueueWait` — here an hour — with the pipeline stopped meanwhile); what finds no room is dropped and
    /// counted.
    @Test func callsOnThePipelinesOwnThreadNeverWaitForRoom() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let logging = LoggingWhileWriting(calls: 3_000)
        let capture = CapturingDestination()
        let (pipeline, _) = try pipeline(on: folder, [logging, capture], fullQueueWait: 3_600)
        logging.pipeline.withLock { $0 = pipeline }
        pipeline.submitCall(
            .info,
            "the first event",
            error: nil,
            userInfo: [:],
            callSite: CallSite(file: #fileID, function: #function, line: #line)
        )
        let waitingCallers = { pipeline.currentStatistics.callersWaiting }
        #expect(await eventually(timeout: .seconds(90)) { logging.done || waitingCallers() > 0 })
        // On failure the pipeline's thread is left waiting: the test ends without flushing or shutting down (the
        // destination holds the pipeline, so no deinit shuts it down on the test's thread either).
        try #require(waitingCallers() == 0, "a call on the pipeline's thread waits for room only it can make")
        try #require(logging.done, "the destination's calls returned")
        try await pipeline.flush()
        let dropped = Int(pipeline.currentStatistics.dropped)
        let logged = capture.records.map(\.message).filter { $0.hasPrefix("logged while writing") }
        #expect(dropped > 0, "3,000 calls don't fit in 256 KiB of journal")
        #expect(logged.count + dropped == 3_000, "every call written or counted")
        await pipeline.shutdown()
    }
}

/// A journal serves one pipeline, once (see ``LogPipeline/Setup/journal``).
@Suite struct OneJournalOnePipelineTests {
    private static func log(_ index: Int, padding: Int, to pipeline: LogPipeline) {
        FastLaneBackPressureTests.log(index, padding: padding, to: pipeline)
    }

    /// A journal in `folder`, and one sink for it and the pipelines it is handed to (one line in all is expected).
    private static func journal(
        in folder: TemporaryDirectory
    ) throws -> (EventJournal, DiagnosticSink, LockedValue<[String]>) {
        let reports = LockedValue<[String]>([])
        let sink = DiagnosticSink { line in reports.withLock { $0.append(line) } }
        let journal = try EventJournal(
            configuration: .init(directory: folder.file("app.log.journal")),
            diagnostics: sink
        )
        return (journal, sink, reports)
    }

    /// One line was said, the refusal: why (`reason`), and that the pipeline runs without the journal.
    private static func expectOneRefusal(
        _ reports: LockedValue<[String]>,
        saying reason: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let said = reports.withLock { $0 }
        #expect(said.count == 1, "\(said)", sourceLocation: sourceLocation)
        #expect(said.first?.contains(reason) == true, "\(said)", sourceLocation: sourceLocation)
        let runsWithout = said.first?.contains("this pipeline runs without it") == true
        #expect(runsWithout, "\(said)", sourceLocation: sourceLocation)
    }

    /// A journal handed to a second pipeline while it serves a first: before, both wrote into it and each read the
    /// other's records as its own — each destination got the other pipeline's events, and events neither got
    /// (each acknowledged records the other had not written yet), with nothing said. The second now runs without it,
    /// and says so; each destination gets its own pipeline's events, all of them, in order.
    @Test func aJournalServesOnePipelineASecondRunsWithoutItAndSaysWhy() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let (journal, sink, reports) = try Self.journal(in: folder)
        let first = CapturingDestination()
        let second = CapturingDestination()
        let one = LogPipeline(
            setup: .init(routes: [.init(first)], journal: journal),
            diagnostics: sink
        )
        let two = LogPipeline(
            setup: .init(routes: [.init(second)], journal: journal),
            diagnostics: sink
        )
        for index in 0..<300 {
            Self.log(index, padding: 10, to: one)
            Self.log(1_000 + index, padding: 10, to: two)
        }
        let failures = (await one.shutdown(timeout: 60), await two.shutdown(timeout: 60))
        #expect(failures.0 == nil && failures.1 == nil, "\(failures)")
        #expect(first.records.map(\.message) == (0..<300).map { "fast lane event \($0)" })
        #expect(second.records.map(\.message) == (1_000..<1_300).map { "fast lane event \($0)" })
        Self.expectOneRefusal(reports, saying: "already serves another pipeline")
    }

    /// A pipeline retires its setup's journal by closing it: a reconfiguration handed the same journal again runs
    /// without it, says so at once (not at the first event it can't journal), and loses no event.
    @Test func aReconfigurationGivenTheJournalItRetiredRunsWithoutItAndSaysWhy() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let (journal, sink, reports) = try Self.journal(in: folder)
        let capture = CapturingDestination()
        let pipeline = LogPipeline(
            setup: .init(routes: [.init(capture)], journal: journal),
            diagnostics: sink
        )
        for index in 0..<100 { Self.log(index, padding: 10, to: pipeline) }
        let failure = await offThePool { pipeline.reconfigure { .init(routes: [.init(capture)], journal: journal) } }
        #expect(failure == nil, "\(String(describing: failure))")
        Self.expectOneRefusal(reports, saying: "is closed")
        for index in 100..<200 { Self.log(index, padding: 10, to: pipeline) }
        let shutdown = await pipeline.shutdown(timeout: 60)
        #expect(shutdown == nil, "\(String(describing: shutdown))")
        #expect(capture.records.map(\.message) == (0..<200).map { "fast lane event \($0)" })
        #expect(reports.withLock { $0 }.count == 1, "nothing more to say: no call tried the closed journal")
    }
}

/// Holds every record only in memory, as a Logstash destination does while its spool can't be used.
final class HoldingInMemoryDestination: MemoryHolding {
    private let state = LockedValue((holding: true, records: [String]()))
    func write(_ batch: LogBatch) { state.withLock { $0.records += batch.records.map(\.message) } }
    var holdsRecordsOnlyInMemory: Bool { state.withLock { $0.holding } }
}

/// What the journal keeps back for a destination that holds records only in memory (see ``MemoryHolding``).
@Suite struct MemoryHoldingTests {
    /// Review (helper-42): the journal kept back for a holding destination was left unacknowledged when the
    /// destinations were replaced; the new setup's journal on the same folder then gave those events to every new
    /// destination again — to one that stayed open a second time — and said they were recovered from an earlier
    /// run. A reconfiguration now acknowledges what was kept (the old destination reports what it still holds).
    @Test func aSetupWhileEventsAreKeptForAHoldingDestinationGivesThemToNoDestinationAgain() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let configuration = EventJournal.Configuration(directory: folder.file("app.log.journal"))
        let holding = HoldingInMemoryDestination()
        let kept = CapturingDestination()
        let journal = try EventJournal(configuration: configuration)
        let pipeline = LogPipeline(setup: .init(routes: [.init(holding), .init(kept)], journal: journal))
        for index in 0..<100 { FastLaneBackPressureTests.log(index, padding: 10, to: pipeline) }
        #expect(await pipeline.flush(timeout: 60) == nil)
        let replacement = CapturingDestination()
        let failure = await offThePool {
            pipeline.reconfigure(keepingOpen: { [kept] }) {
                // A new journal on the same folder, as `Logger.setup()` opens one.
                .init(
                    routes: [.init(replacement), .init(kept)],
                    journal: try? EventJournal(configuration: configuration)
                )
            }
        }
        #expect(failure == nil, "\(String(describing: failure))")
        #expect(await pipeline.shutdown(timeout: 60) == nil)
        let expected = (0..<100).map { "fast lane event \($0)" }
        #expect(kept.records.map(\.message) == expected, "each once, and no report of a recovery")
        #expect(replacement.records.isEmpty, "\(replacement.records.map(\.message).prefix(3))")
    }
}

/// A background destination that, on its first write, logs `calls` events through its own pipeline.
final class LoggingWhileWriting: LogDestination {
    let pipeline = LockedValue<LogPipeline?>(nil)
    let calls: Int
    private let finished = LockedValue(false)

    init(calls: Int) {
        self.calls = calls
    }

    var done: Bool { finished.current }

    func write(_ batch: LogBatch) {
        guard !finished.current, let pipeline = pipeline.current else { return }
        for index in 0..<calls {
            pipeline.submitCall(
                .info,
                "logged while writing \(index)",
                error: nil,
                userInfo: ["padding": String(repeating: "p", count: 200)],
                callSite: CallSite(file: #fileID, function: #function, line: #line)
            )
        }
        finished.withLock { $0 = true }
    }
}

/// A background destination that records what the pipeline told it about holding it back.
final class HoldingBackRecorder: PipelineHoldingBack, @unchecked Sendable {
    private let told = LockedValue<(@Sendable () -> Bool)?>(nil)
    var mayWait: (@Sendable () -> Bool)? { told.current }

    func pipelineAttached(mayWait: @escaping @Sendable () -> Bool) {
        told.withLock { $0 = mayWait }
    }

    func write(_ batch: LogBatch) {}
}

/// A background destination that holds each write back while the pipeline says it may (at most `patience`), then
/// keeps what it was given.
final class HoldingWhileItMay: PipelineHoldingBack, @unchecked Sendable {
    let capture = CapturingDestination()
    let patience: Duration
    private let state: LockedValue<(mayWait: (@Sendable () -> Bool)?, holding: Bool)>

    init(patience: Duration, holding: Bool = true) {
        self.patience = patience
        self.state = LockedValue((nil, holding))
    }

    func startHolding() {
        state.withLock { $0.holding = true }
    }

    func pipelineAttached(mayWait: @escaping @Sendable () -> Bool) {
        state.withLock { $0.mayWait = mayWait }
    }

    func stopHolding() {
        state.withLock { $0.holding = false }
    }

    /// Whether a write is being held back now.
    var isHoldingAWrite: Bool { holdingNow.current }
    private let holdingNow = LockedValue(false)

    /// Writes held back until the pipeline said it may no longer wait (its journal half full).
    var holdsEndedByTheJournal: Int { endedByTheJournal.current }
    private let endedByTheJournal = LockedValue(0)

    func write(_ batch: LogBatch) {
        let deadline = ContinuousClock.now + patience
        var held = false
        while ContinuousClock.now < deadline {
            let (mayWait, holding) = state.current
            guard holding, mayWait?() == true else {
                if held, holding { endedByTheJournal.withLock { $0 += 1 } }
                break
            }
            held = true
            holdingNow.withLock { $0 = true }
            usleep(1_000)
        }
        holdingNow.withLock { $0 = false }
        capture.write(batch)
    }
}

/// A destination that, like the console, does not take recovered events again.
final class CountOnlyDestination: LogDestination {
    let capture = CapturingDestination()
    func write(_ batch: LogBatch) { capture.write(batch) }
    func journalRecovery() -> JournalRecovery { .countOnly }
}

/// Why a recovery test of single-threaded logic does not run under ThreadSanitizer: in CI's sanitized run, which shares
/// two cores among the whole filter, these recoveries of thousands of events held both cores for minutes, and tests
/// with a time limit ran out of it. They run in every other run (root and unprivileged).
let heavyUnderThreadSanitizer: Comment =
    "single-threaded recovery logic, heavy under ThreadSanitizer (CI's sanitized run starved); runs in the other runs"

extension FastLaneBackPressureTests {
    /// A destination stalled past `fullQueueWait` costs events once the journal nears its cap: each one is counted,
    /// and the report says as many. The others arrive in order. (A failed CI run once seemed to show a drop counted
    /// for an event that arrived; this is the check that it can't.)
    @Test func everyEventAStalledDestinationCostsIsCountedAndReportedAndTheOthersArriveInOrder() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let blocking = BlockingDestination()
        let capture = CapturingDestination()
        let (pipeline, _) = try pipeline(on: folder, [blocking, capture], fullQueueWait: 1)
        let count = 3_000
        let done = logOnAThread(pipeline, count: count)
        #expect(await eventually(timeout: .seconds(60)) { pipeline.currentStatistics.callersWaiting == 1 })
        // Four times the patience: the calls past the journal's cap wait in vain and their events are dropped.
        try await Task.sleep(for: .seconds(4))
        blocking.release()
        #expect(await eventually(timeout: .seconds(120)) { done.current })
        try await pipeline.flush()
        let records = capture.records
        let events = records.filter { $0.message.hasPrefix("fast lane event ") }
        let reports = records.filter { $0.userInfo["dropped_events"] != nil }
        let dropped = pipeline.currentStatistics.dropped
        #expect(UInt64(events.count) + dropped == UInt64(count), "every event arrived or was counted dropped")
        #expect(reportedDrops(in: reports) == dropped, "the reports say every drop counted")
        #expect(records.count == events.count + reports.count, "nothing else arrived")
        let indices = events.compactMap { Int($0.message.dropFirst("fast lane event ".count)) }
        #expect(indices == indices.sorted() && Set(indices).count == indices.count, "in order, each once")
        await pipeline.shutdown()
    }
}
