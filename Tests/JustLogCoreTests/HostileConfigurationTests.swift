import Foundation
import JustLogCore
import JustLogTestKit
import JustLogTestSupport
import Testing

// Absurd values a program may set — negative limits, `Int.max`, dates past what a timestamp holds — are clamped or
// refused with a clear error, never a trap that kills the program (review, helper-48: each of these trapped).

@Suite struct HostileConfigurationTests {
    /// `Date.distantFuture` (year 4001), an infinite or a NaN date in `userInfo`: the log call trapped on
    /// `Int64(seconds) * 10^9`; each is now written out.
    @Test func datesATimestampCantHoldAreWrittenOutNotATrap() async throws {
        let capture = CapturingDestination()
        let logger = StructuredLogger(configuration: .init(destinations: [.init(capture)], runtime: Fixtures.runtime))
        logger.info(
            "dates",
            userInfo: [
                "future": Date.distantFuture, "past": Date.distantPast,
                "infinite": Date(timeIntervalSince1970: .infinity), "nan": Date(timeIntervalSince1970: .nan),
                "ordinary": Date(timeIntervalSince1970: 1_482_582_698.475),
            ]
        )
        try await logger.flush()
        _ = await logger.pipeline.shutdown(timeout: 5)
        let userInfo = try #require(capture.records.first?.userInfo)
        #expect(userInfo["future"] == .string("4001-01-01T00:00:00.000Z"))
        #expect(userInfo["ordinary"] == .string("2016-12-24T12:31:38.475Z"))
        #expect(userInfo["infinite"] == .string("inf s since 1970-01-01T00:00:00Z"))
        #expect(userInfo["nan"] == .string("nan s since 1970-01-01T00:00:00Z"))
        guard case .string(let past) = userInfo["past"] else {
            Issue.record("\(String(describing: userInfo["past"]))")
            return
        }
        #expect(past.hasSuffix("T00:00:00.000Z") && past.count == 24, "\(past)")
        // The public initializer clamps; the exact one says it can't.
        #expect(LogTimestamp(Date.distantFuture) > LogTimestamp(Date(timeIntervalSince1970: 4_000_000_000)))
        #expect(LogTimestamp(exactly: Date.distantFuture) == nil)
        #expect(LogTimestamp(Date(timeIntervalSince1970: .nan)).nanosecondsSinceEpoch == 0)
        #expect(LogTimestamp(nanosecondsSinceEpoch: .min).rfc3339.hasPrefix("1677-"))
    }

    /// A line whose time is past 2262 (four digits of years reach 9999) is not a time: `justlog receive --pretty`
    /// trapped on a collector's line that said so, as did `FileLine(parsing:)` behind `view` and `ship`.
    @Test func aTimeATimestampCantHoldDoesNotParse() {
        #expect(LogTimestamp(parsing: "9999-12-31T00:00:00.000Z") == nil)
        #expect(LogTimestamp(parsing: "0000-01-01T00:00:00.000Z") == nil)
        #expect(LogTimestamp(parsing: "2262-01-01T00:00:00.000Z") != nil)
        #expect(LogTimestamp(parsing: "1678-01-01T00:00:00.000Z") != nil)
        #expect((try? FileLine(parsing: "9999-12-31 00:00:00.000 [INFO] x.swift - f:1 - m")) == nil)
    }

    /// Limits set negative after the initializer (which clamped them) trapped at the first log call.
    @Test func negativeCaptureLimitsSetLaterAreZero() async throws {
        var limits = CaptureLimits()
        limits.maximumElements = -1
        limits.maximumMessageBytes = -1
        limits.maximumBytes = .min
        limits.maximumKeys = -5
        limits.maximumDepth = -5
        let clamped: [Int] = [
            limits.maximumElements, limits.maximumMessageBytes, limits.maximumBytes, limits.maximumKeys,
            limits.maximumDepth,
        ]
        #expect(clamped == [0, 0, 0, 0, 0])
        let capture = CapturingDestination()
        let logger = StructuredLogger(
            configuration: .init(destinations: [.init(capture)], runtime: Fixtures.runtime, captureLimits: limits)
        )
        logger.info("a message", userInfo: ["ids": [1, 2, 3]])
        try await logger.flush()
        _ = await logger.pipeline.shutdown(timeout: 5)
        #expect(capture.records.count == 1)
        #expect(capture.records.first?.message == "…[truncated]")
    }

    /// A file size set below 1 after the initializer trapped at a rotation; `Int.max` rotated files made every
    /// rotation try 9 × 10^18 renames.
    @Test func fileSizesAndCountsSetLaterAreClamped() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        var configuration = FileDestination.Configuration(url: folder.appending("clamped.log"))
        configuration.maximumFileSize = -1
        configuration.retainedFileCount = .max
        #expect(configuration.maximumFileSize == 1)
        #expect(configuration.retainedFileCount == FileDestination.Configuration.maximumRetainedFileCount)
        configuration.retainedFileCount = -3
        #expect(configuration.retainedFileCount == 0)
        configuration.retainedFileCount = 2
        let file = try FileDestination(configuration: configuration)
        let logger = StructuredLogger(configuration: .init(destinations: [.init(file)], runtime: Fixtures.runtime))
        for index in 0..<5 { logger.info("line \(index)") }
        try await logger.flush()
        _ = await logger.pipeline.shutdown(timeout: 5)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(files == ["clamped.log", "clamped.log.1", "clamped.log.2"], "\(files)")
    }

    /// A queue of no events set after the initializer (which clamped it) was always full: every call waited its
    /// `fullQueueWait` and its event was dropped (review, helper-48).
    @Test func aQueueSizeSetLaterToNothingIsOne() async throws {
        var pipeline = LogPipeline.Configuration()
        pipeline.capacity = 0
        pipeline.maximumQueuedBytes = .min
        #expect(pipeline.capacity == 1 && pipeline.maximumQueuedBytes == 1)
        let capture = CapturingDestination()
        let logger = StructuredLogger(
            configuration: .init(destinations: [.init(capture)], runtime: Fixtures.runtime, pipeline: pipeline)
        )
        for index in 0..<3 { logger.info("event \(index)") }
        try await logger.flush()
        _ = await logger.pipeline.shutdown(timeout: 5)
        #expect(capture.records.map(\.message) == ["event 0", "event 1", "event 2"])
    }

    /// A journal segment of `Int.max` bytes trapped on `2 *` it; one set to `Int.min` later, on `- 256`.
    @Test func journalSizesAreClamped() {
        var configuration = EventJournal.Configuration(directory: "/nonexistent", segmentBytes: .max)
        #expect(configuration.segmentBytes == 1 << 30)
        configuration.segmentBytes = .min
        #expect(configuration.segmentBytes == 64 << 10)
        // The cap holds two segments, set later too (review, helper-49).
        var later = EventJournal.Configuration(directory: "/nonexistent")
        later.segmentBytes = 256 << 20
        #expect(later.maxTotalBytes == 512 << 20)
        // A spool's segment of `Int.min` bytes, or past 1 GiB, is refused (the check subtracted from it), as is a
        // record limit near `Int.max` (the check added to it).
        for (segmentBytes, maxRecordBytes) in [(Int.min, 1), (Int.max, 1), ((1 << 30) + 1, 1), (4 << 20, Int.max)] {
            var spool = Spool.Configuration(directory: "/nonexistent")
            spool.segmentBytes = segmentBytes
            spool.maxRecordBytes = maxRecordBytes
            #expect(throws: JustLogError.self) { _ = try Spool(unopened: spool, diagnostics: DiagnosticSink { _ in }) }
        }
    }

    /// "Wait forever" for a folder's lock (`Duration.seconds(Int64.max)`) trapped converting the tries to `Int`.
    @Test func aLockWaitOfForeverIsADayOfTries() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let spool = try Spool(unopened: .init(directory: folder.path), diagnostics: DiagnosticSink { _ in })
        defer { spool.close() }
        try spool.open(waitingForLock: .seconds(Int64.max))
        try spool.append(Array("a record".utf8))
    }
}
