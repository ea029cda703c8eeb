import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The file destination on a real full disk: a 1 MiB tmpfs. Mounting one needs root; as any other user these
/// tests are skipped, and `FileSizeLimitTests` (a file-size limit in a child process, where a write also stops
/// part-way) covers the same ground.
@Suite struct FileDiskFullTests {
    static let isRoot = getuid() == 0

    func records(_ count: Int, from start: Int) -> [LogRecord] {
        let builder = Fixtures.builder()
        let padding = String(repeating: "p", count: 400)
        return (start..<start + count).map { index in
            builder.record(for: Fixtures.event(.info, "event \(index) \(padding)"), sequence: UInt64(index))
        }
    }

    /// Rotation frees the file it deletes on another thread (see `DescriptorCloser`) — unless the disk is short of
    /// space: then the space must be back before the next write. Here that other thread never runs (a suspended
    /// queue), and the rotations on a nearly full disk must still lose nothing.
    @Test(.enabled(if: isRoot, "mounting a tmpfs needs root"))
    func rotationOnANearlyFullDiskGetsTheSpaceBackBeforeTheNextWrite() throws {
        let folder = try TemporaryDirectory(prefix: "tmpfs")
        defer { folder.remove() }
        let disk = try TmpfsMount(at: folder.path, size: "1m")
        defer { disk.unmount() }
        // 400 KiB taken; the log's two files of up to 200 KiB fit in the rest, a third held by the closer would not.
        try Data(repeating: 0x42, count: 400 << 10).write(to: folder.appending("blocker"))
        let queue = DispatchQueue(label: "stalled closer")
        queue.suspend()
        let closer = DescriptorCloser.on(queue, maximumWaiting: 8)
        let diagnostics = LineCapture()
        let file = try FileDestination(
            configuration: .init(url: folder.appending("app.log"), maximumFileSize: 200 << 10, retainedFileCount: 1),
            diagnostics: diagnostics.diagnostics,
            clock: ContinuousClock(),
            closer: closer
        )
        // ~700-byte lines: 2,000 of them, about seven rotations.
        for batch in 0..<100 { file.write(LogBatch(records: records(20, from: batch * 20))) }
        #expect(diagnostics.writes.isEmpty, "\(diagnostics.writes)")
        let lines = try String(contentsOf: folder.appending("app.log"), encoding: .utf8).split(separator: "\n")
        let last = try lines.last.map { try FileLine(parsing: $0).record.message }
        #expect(last?.hasPrefix("event 1999 ") == true, "\(last ?? "no line")")
        queue.resume()
        file.shutdown()
    }

    @Test(.enabled(if: isRoot, "mounting a tmpfs needs root; FileSizeLimitTests covers a full file as any user"))
    func fullDiskLeavesNoTornLineCountsTheLossExactlyAndResumesWhenSpaceReturns() throws {
        let folder = try TemporaryDirectory(prefix: "tmpfs")
        defer { folder.remove() }
        let disk = try TmpfsMount(at: folder.path, size: "1m")
        defer { disk.unmount() }
        // Another file takes 400 KiB of the disk; the log fills the rest.
        let blocker = folder.appending("blocker")
        try Data(repeating: 0x42, count: 400 << 10).write(to: blocker)
        let url = folder.appending("app.log")
        let diagnostics = LineCapture()
        let clock = ManualClock()
        let file = try FileDestination(
            configuration: .init(url: url, maximumFileSize: 64 << 20, retryInterval: 1),
            diagnostics: diagnostics.diagnostics,
            clock: clock
        )
        defer { file.shutdown() }

        // Uneven batches of ~700-byte lines until a write fails: the failing one stops part-way through a line.
        var logged = 0
        let sizes = [1, 5, 23, 64, 7, 41]
        for round in 0..<500 where !diagnostics.text.contains("No space left on device") {
            let count = sizes[round % sizes.count]
            file.write(LogBatch(records: records(count, from: logged)))
            logged += count
        }
        #expect(diagnostics.text.contains("No space left on device"), "the disk never filled up: \(diagnostics.writes)")
        // Still full: batches within the retry interval, then one retry after it.
        for _ in 0..<3 {
            file.write(LogBatch(records: records(10, from: logged)))
            logged += 10
        }
        clock.advance(by: .seconds(1))
        file.write(LogBatch(records: records(10, from: logged)))
        logged += 10

        // Space returns.
        try FileManager.default.removeItem(at: blocker)
        clock.advance(by: .seconds(1))
        let firstAfterSpaceReturned = logged
        for _ in 0..<5 {
            file.write(LogBatch(records: records(20, from: logged)))
            logged += 20
        }
        let flushError = LockedValue<String?>("not called")
        file.flush { error in flushError.withLock { $0 = error.map { "\($0)" } } }
        #expect(flushError.current == nil)

        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.hasSuffix("\n"), "the file ends in the middle of a line")
        var present: [Int] = []
        var reportedInFile = 0
        for (number, line) in text.split(separator: "\n").enumerated() {
            let record: LogRecord
            do {
                record = try FileLine(parsing: line).record
            } catch {
                Issue.record("line \(number + 1) is not a whole line (\(error)): \(line.prefix(60))…\(line.suffix(60))")
                continue
            }
            if record.message.hasPrefix("JustLog could not write") {
                reportedInFile += lostEvents(in: record)
            } else {
                present.append(Int(record.message.split(separator: " ")[1]) ?? -1)
            }
        }
        #expect(present == present.sorted() && Set(present).count == present.count, "events out of order or repeated")
        #expect(
            reportedInFile == logged - present.count,
            "\(logged) logged, \(present.count) in the file, \(reportedInFile) reported lost"
        )
        #expect(reportedInFile > 0)
        #expect(
            Array(present.suffix(logged - firstAfterSpaceReturned)) == Array(firstAfterSpaceReturned..<logged),
            "an event logged after space returned is missing"
        )
        #expect(reportedOnDiagnostics(diagnostics.lines) == reportedInFile, "\(diagnostics.writes)")
    }

    private func lostEvents(in record: LogRecord) -> Int {
        switch record.userInfo["lost_events"] {
        case .int(let count)?: Int(count)
        case .uint(let count)?: Int(count)
        default: 0
        }
    }

    /// The sum of the "works again; N event(s) were lost" reports.
    private func reportedOnDiagnostics(_ lines: [String]) -> Int {
        lines.compactMap { line -> Int? in
            guard let range = line.range(of: "works again; ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }.reduce(0, +)
    }
}
