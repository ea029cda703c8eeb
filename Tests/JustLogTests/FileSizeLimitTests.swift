import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

/// A program under a file-size limit (`ulimit -f`; the child sets it for itself, which any user may do): JustLog
/// makes the limit fail its writes with EFBIG instead of letting SIGXFSZ kill the program; the file rotates at the
/// limit (below its own maximum), and only an event whose line the limit can't take at all is lost, counted exactly.
@Suite struct FileSizeLimitTests {
    static let limit = 256 << 10
    static let count = 10_000

    /// Before (review, helper-52), the file stopped at the limit for good: every later line was counted as lost
    /// (the default 10 MiB maximum is far past it), where a rotation there loses nothing.
    @Test func aProgramAtItsFileSizeLimitRotatesThereAndLosesNothing() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Logger.shared keeps 5 rotated files: the events take ~4 MB, 1 MiB files hold them all.
        let limit = 1 << 20
        let child = try await runChild(["file-size-limit", folder.path, "\(Self.count)", "\(limit)"])
        let files = try logFiles(in: folder)
        #expect(files.count > 2, "the file rotated \(files.count - 1) times")
        var messages: [String] = []
        for file in files {
            #expect(try size(of: file) <= limit, "\(file.lastPathComponent) passed the limit")
            messages += try wholeLineMessages(in: file)
        }
        #expect(messages == (0..<Self.count).map { "child event \($0)" })
        #expect(!child.errorOutput.contains("lost"), "stderr: \(child.errorOutput)")
        let said =
            "the process's file-size limit (ulimit -f) is \(limit) bytes, below the log file's 10485760-byte maximum"
        #expect(child.errorOutput.components(separatedBy: said).count == 2, "said once; stderr: \(child.errorOutput)")
    }

    /// A limit set while the file is open and already larger (or a file system's largest file): the write that
    /// fails with EFBIG rotates the file, and the lines it held go to the new one.
    @Test func aFileSizeLimitMetWhileTheFileIsOpenRotatesItThereAndLosesNothing() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let child = try await runChild(["file-size-limit-lowered", folder.path, "\(Self.count)", "\(Self.limit)"])
        let files = try logFiles(in: folder)
        #expect(files.count > 3, "the file rotated \(files.count - 1) times")
        var messages: [String] = []
        for file in files {
            // The first holds the events logged before the limit.
            if file != files.first { #expect(try size(of: file) <= Self.limit, "\(file.lastPathComponent)") }
            messages += try wholeLineMessages(in: file)
        }
        #expect(messages == (0..<Self.count).map { "child event \($0)" })
        #expect(!child.errorOutput.contains("lost"), "stderr: \(child.errorOutput)")
        #expect(
            child.errorOutput.contains("grow no further than") && child.errorOutput.contains("it is rotated there"),
            "stderr: \(child.errorOutput)"
        )
    }

    /// An event whose line alone is longer than the limit is lost alone, counted, and rotates nothing away; the
    /// lines around it are written. Before (review, helper-57), it rotated the file, failed in the new one, and the
    /// rest of its batch and a second of later lines were counted lost with it.
    @Test func anEventLongerThanTheLimitIsLostAloneAndTheOthersAreWritten() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let limit = 64 << 10
        let count = 2_000
        let child = try await runChild(["file-size-limit-oversized", folder.path, "\(count)", "\(limit)"])
        var events: [Int] = []
        var reported = 0
        let files = try logFiles(in: folder)
        // Rotated only when full: a long line rotates nothing away (review, helper-58).
        for (older, newer) in zip(files, files.dropFirst()) {
            let firstLine = try String(contentsOf: newer, encoding: .utf8).prefix { $0 != "\n" }.utf8.count + 1
            #expect(try size(of: older) + firstLine > limit, "\(older.lastPathComponent) rotated before it was full")
        }
        for file in files {
            #expect(try size(of: file) <= limit, "\(file.lastPathComponent) passed the limit")
            for record in try wholeLineRecords(in: file) {
                if record.message.hasPrefix("JustLog could not write") {
                    if case .int(let lost)? = record.userInfo["lost_events"] { reported += Int(lost) }
                } else {
                    events.append(Int(record.message.dropFirst("child event ".count)) ?? -1)
                }
            }
        }
        let oversized = (0..<count).filter { $0 % 100 == 50 }
        #expect(events == (0..<count).filter { $0 % 100 != 50 }, "stderr: \(child.errorOutput)")
        #expect(reported == oversized.count, "the file says how many were lost")
    }

    /// A limit that takes an event's line but not the line that reports a loss (it holds the reason): the count is
    /// said on standard error (at a flush, at the end) instead, and writing goes on. Before (review, helper-58), the report failed at every
    /// batch and every later event was lost until exit.
    @Test func aLossReportLongerThanTheLimitIsSaidOnStandardErrorAndWritingGoesOn() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // An event's line here is ~360 bytes; the loss report's, with its reason and the file's path, ~500.
        let limit = 450
        let count = 200
        let child = try await runChild(["file-size-limit-oversized", folder.path, "\(count)", "\(limit)"])
        var events: [Int] = []
        for file in try logFiles(in: folder) {
            for record in try wholeLineRecords(in: file) where !record.message.hasPrefix("JustLog could not write") {
                events.append(Int(record.message.dropFirst("child event ".count)) ?? -1)
            }
        }
        #expect(events == (0..<count).filter { $0 % 100 != 50 }, "stderr: \(child.errorOutput)")
        // A flush while the report waits does not fail (writing works) and says the count (review, helper-59).
        let path = folder.appending("child.log").path
        #expect(child.errorOutput.contains("flush after 60: ok"), "stderr: \(child.errorOutput)")
        #expect(
            child.errorOutput.contains("1 event(s) lost writing to \(path) so far, 1 of them not yet reported"),
            "stderr: \(child.errorOutput)"
        )
        // The 2 losses, exactly, said on standard error at the end.
        let said = "2 event(s) lost writing to \(path) so far, 2 of them not yet reported in the file"
        #expect(child.errorOutput.contains(said), "stderr: \(child.errorOutput)")
    }

    /// A rotation refused (a directory where the rotated file goes) while the file meets the limit: what the limit
    /// refuses meanwhile is lost, counted; once the way is clear the file rotates, says how many were lost, and
    /// every later event is written. Before (review, helper-57), the report was written first, into the full file:
    /// it never fit, and every later event was lost until exit. With a limit below the report's line (450 bytes;
    /// an event's takes ~360), the count is said on standard error instead — and a flush while writing fails says
    /// why, not that it works (helper-60).
    @Test(arguments: [64 << 10, 450])
    func aFullFileWhoseRotationWasRefusedRotatesOnceItMayAndLosesNothingAfter(limit: Int) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let count = 1_000
        let child = try await runChild(["file-size-limit-refused", folder.path, "\(count)", "\(limit)"])
        var events: [Int] = []
        var after: [Int] = []
        var reported = 0
        for file in try logFiles(in: folder) {
            for record in try wholeLineRecords(in: file) {
                if record.message.hasPrefix("JustLog could not write") {
                    if case .int(let lost)? = record.userInfo["lost_events"] { reported += Int(lost) }
                } else if record.message.hasPrefix("after ") {
                    after.append(Int(record.message.dropFirst("after ".count)) ?? -1)
                } else {
                    events.append(Int(record.message.dropFirst("child event ".count)) ?? -1)
                }
            }
        }
        let refused = "flush while refused: "
        #expect(
            child.errorOutput.contains(refused) && !child.errorOutput.contains(refused + "ok"),
            "a flush while writing fails returns the error; stderr: \(child.errorOutput)"
        )
        if limit > 450 {
            #expect(after == Array(0..<100), "stderr: \(child.errorOutput)")
            #expect(events.count > 0 && events.count < count, "\(events.count) events before the way was cleared")
            #expect(events == Array(0..<events.count), "the events the file took are the first ones, in order")
            #expect(reported == count - events.count, "the loss report is exact")
        } else {
            // One line a file and one file kept: the file says little; standard error says the count — every
            // event but the first, said at the flush and not grown by the end.
            #expect(reported == 0, "no report fits")
            #expect(after.last == 99, "stderr: \(child.errorOutput)")
            let path = folder.appending("child.log").path
            #expect(
                lastCount(before: " event(s) lost writing to \(path) so far", in: child.errorOutput) == count - 1,
                "stderr: \(child.errorOutput)"
            )
        }
    }

    /// Runs the test child with `arguments` and waits for it (at most 2 minutes); records an issue unless it
    /// exits with 0.
    private func runChild(_ arguments: [String]) async throws -> ChildProcess {
        let child = try ChildProcess(arguments: arguments)
        let status = await child.waitForExit(timeout: .seconds(120))
        #expect(
            status == 0,
            "exit status \(status.map { "\($0)" } ?? "none") (25 is SIGXFSZ); stderr: \(child.errorOutput)"
        )
        return child
    }

    /// The log files in `folder`, oldest first: child.log.N … child.log.1, then child.log.
    private func logFiles(in folder: TemporaryDirectory) throws -> [URL] {
        let rotated = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .compactMap { name in name.hasPrefix("child.log.") ? Int(name.dropFirst("child.log.".count)) : nil }
            .sorted(by: >)
        return rotated.map { folder.appending("child.log.\($0)") } + [folder.appending("child.log")]
    }

    /// A limit below one line: no rotation makes room, every line is lost, counted exactly, and reported in the
    /// file once the limit is raised.
    @Test func programWhoseFileSizeLimitIsRaisedAgainWritesTheExactLossReportAndEveryLaterEvent() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let child = try await runChild(["file-size-limit-raised", folder.path, "\(Self.count)", "100"])

        let records = try wholeLineRecords(in: folder.appending("child.log"))
        let half = Self.count / 2
        var events: [Int] = []
        var reported: [Int] = []
        for record in records {
            if record.message.hasPrefix("JustLog could not write") {
                if case .int(let lost)? = record.userInfo["lost_events"] { reported.append(Int(lost)) }
                #expect(
                    events.last.map { $0 < half } ?? true,
                    "the report comes before the events logged after the limit was raised"
                )
            } else {
                events.append(Int(record.message.dropFirst("child event ".count)) ?? -1)
            }
        }
        let before = events.filter { $0 < half }
        #expect(before.isEmpty, "\(before.count) events from before the limit was raised")
        #expect(before == before.sorted() && Set(before).count == before.count, "events out of order or repeated")
        #expect(reported == [half - before.count], "one report with the exact count")
        #expect(
            events.filter { $0 >= half } == Array(half..<Self.count),
            "an event logged after the limit was raised is missing"
        )
        // Writing never failed — each line was too long for the limit — and that is said once.
        #expect(
            child.errorOutput.components(separatedBy: "such an event is lost alone and counted").count == 2,
            "stderr: \(child.errorOutput)"
        )
    }

    @Test func programWhoseFileRotatesBelowItsFileSizeLimitLosesNothing() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let rotateAt = 200 << 10
        let child = try await runChild([
            "file-size-limit-rotating", folder.path, "\(Self.count)", "\(Self.limit)", "\(rotateAt)",
        ])
        #expect(!child.errorOutput.contains("lost"), "stderr: \(child.errorOutput)")

        // Oldest first: child.log.N … child.log.1, then child.log.
        let rotated = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .compactMap { name in name.hasPrefix("child.log.") ? Int(name.dropFirst("child.log.".count)) : nil }
            .sorted(by: >)
        #expect(rotated.count >= 10, "the file rotated \(rotated.count) times")
        let files = rotated.map { folder.appending("child.log.\($0)") } + [folder.appending("child.log")]
        var messages: [String] = []
        for file in files {
            #expect(try size(of: file) <= rotateAt, "\(file.lastPathComponent) passed the rotation size")
            messages += try wholeLineMessages(in: file)
        }
        #expect(messages == (0..<Self.count).map { "child event \($0)" })
    }

    private func size(of url: URL) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? -1
    }

    /// The messages of every line of the file; a line that is not a whole file line is recorded as an issue.
    private func wholeLineMessages(in url: URL) throws -> [String] {
        try wholeLineRecords(in: url).map(\.message)
    }

    /// The record of every line of the file; a line that is not a whole file line is recorded as an issue.
    private func wholeLineRecords(in url: URL) throws -> [LogRecord] {
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.isEmpty || text.hasSuffix("\n"), "\(url.lastPathComponent) ends in the middle of a line")
        return text.split(separator: "\n").enumerated().compactMap { number, line in
            do {
                return try FileLine(parsing: line).record
            } catch {
                Issue.record(
                    "\(url.lastPathComponent) line \(number + 1) is not a whole line (\(error)): …\(line.suffix(80))"
                )
                return nil
            }
        }
    }

    /// The number just before the last occurrence of `suffix` in `text`.
    private func lastCount(before suffix: String, in text: String) -> Int? {
        guard let range = text.range(of: suffix, options: .backwards) else { return nil }
        return Int(String(text[..<range.lowerBound].reversed().prefix { $0.isNumber }.reversed()))
    }
}
