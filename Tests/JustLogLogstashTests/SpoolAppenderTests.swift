import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

@testable import JustLogLogstash

/// `SpoolAppender.append(lines:lengths:)`: a batch of lines into the Logstash spool under one lock, in order,
/// whatever happens to the spool partway.
@Suite struct SpoolAppenderTests {
    /// `lines` end to end, and their lengths.
    static func batch(_ lines: [String]) -> (bytes: [UInt8], lengths: [Int]) {
        (lines.flatMap { Array($0.utf8) }, lines.map(\.utf8.count))
    }

    /// Every record the spool holds, in order.
    static func spooled(_ spool: LogstashSpool) -> [String] {
        let batch = spool.read(from: spool.cursor, maxBytes: 64 << 20, maxRecords: .max)
        return batch.bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast().map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    static func append(_ lines: [String], to appender: SpoolAppender) -> SpoolAppender.Outcome {
        let (bytes, lengths) = batch(lines)
        return bytes.withUnsafeBytes { appender.append(lines: $0, lengths: lengths) }
    }

    @Test func aBatchIsSpooledWholeAndInOrder() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let spool = try LogstashSpool(configuration: .init(directory: folder.file("spool")))
        defer { spool.close() }
        let appender = SpoolAppender(spool: spool, memoryLimit: 1 << 20)
        let lines = (0..<500).map { "{\"message\":\"line \($0)\"}" }
        let outcome = Self.append(lines, to: appender)
        #expect(outcome.spooled == 500)
        #expect(outcome.rejected.isEmpty && outcome.becameUnavailable == nil)
        #expect(Self.spooled(spool) == lines)
    }

    @Test func aRecordTheSpoolRefusesAloneIsCountedAndTheRestOfTheBatchIsSpooled() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let spool = try LogstashSpool(configuration: .init(directory: folder.file("spool"), maxRecordBytes: 16))
        defer { spool.close() }
        let appender = SpoolAppender(spool: spool, memoryLimit: 1 << 20)
        let outcome = Self.append(["first", String(repeating: "x", count: 17), "second", "", "third"], to: appender)
        #expect(outcome.spooled == 3)
        #expect(outcome.rejected.map(\.code) == [.recordTooLarge, .emptyRecord])
        #expect(outcome.becameUnavailable == nil)
        #expect(Self.spooled(spool) == ["first", "second", "third"])
    }

    /// The spool's folder is removed while it is open: the records that fit the current segment are spooled,
    /// the next one needs a new segment file and can't have it — the spool is unavailable — and the rest of the
    /// batch is held in memory, in order, until a retry finds the folder again.
    @Test func whenTheSpoolStopsPartwayTheRestIsHeldAndSpooledInOrderOnRetry() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let directory = folder.file("spool")
        let spool = try LogstashSpool(
            configuration: .init(directory: directory, segmentBytes: 4096, maxRecordBytes: 1024)
        )
        defer { spool.close() }
        let appender = SpoolAppender(spool: spool, memoryLimit: 1 << 20)
        try FileManager.default.removeItem(atPath: directory)
        let lines = (0..<200).map { "{\"message\":\"line \($0)\"}" }
        let outcome = Self.append(lines, to: appender)
        let error = try #require(outcome.becameUnavailable, "a segment file can't be created without the folder")
        #expect(error.code == .spoolUnavailable)
        #expect(outcome.spooled > 0 && outcome.spooled < 200, "some fit the open segment: \(outcome.spooled)")
        #expect(appender.unavailability?.held == 200 - outcome.spooled)
        #expect(Self.spooled(spool) == Array(lines.prefix(outcome.spooled)))

        let later = Self.append(["after"], to: appender)
        #expect(later.spooled == 0, "held behind the others while the spool is unavailable")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let retried = appender.retry()
        #expect(retried.recovered?.heldAndSpooled == 201 - outcome.spooled)
        #expect(appender.unavailability == nil)
        #expect(Self.spooled(spool) == lines + ["after"])
    }
}
