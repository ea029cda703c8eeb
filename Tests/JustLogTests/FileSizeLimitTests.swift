import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

/// A program under a file-size limit (`ulimit -f`; the child sets it for itself, which any user may do): JustLog
/// makes the limit fail its writes with EFBIG instead of letting SIGXFSZ kill the program, and handles that like a
/// full disk.
@Suite struct FileSizeLimitTests {
    static let limit = 256 << 10
    static let count = 10_000

    @Test func programAtItsFileSizeLimitIsNotKilledKeepsWholeLinesAndCountsTheLossExactly() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let child = try ChildProcess(arguments: ["file-size-limit", folder.path, "\(Self.count)", "\(Self.limit)"])
        let status = await child.waitForExit(timeout: .seconds(120))
        #expect(
            status == 0,
            "exit status \(status.map { "\($0)" } ?? "none") (25 is SIGXFSZ); stderr: \(child.errorOutput)"
        )

        let url = folder.appending("child.log")
        #expect(try size(of: url) <= Self.limit)
        let messages = try wholeLineMessages(in: url)
        let events = messages.compactMap {
            $0.hasPrefix("child event ") ? Int($0.dropFirst("child event ".count)) : nil
        }
        #expect(events.count > 0 && events.count < Self.count, "\(events.count) events in the file")
        #expect(events == events.sorted() && Set(events).count == events.count, "events out of order or repeated")
        // What the program's stderr says was lost is exactly what is missing from the file.
        let reported = lastCount(before: " event(s) lost writing to \(url.path)", in: child.errorOutput)
        #expect(
            reported == Self.count - events.count,
            "\(events.count) events in the file; stderr: \(child.errorOutput)"
        )
    }

    @Test func programWhoseFileSizeLimitIsRaisedAgainWritesTheExactLossReportAndEveryLaterEvent() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let child = try ChildProcess(arguments: [
            "file-size-limit-raised", folder.path, "\(Self.count)", "\(Self.limit)",
        ])
        let status = await child.waitForExit(timeout: .seconds(120))
        #expect(
            status == 0,
            "exit status \(status.map { "\($0)" } ?? "none") (25 is SIGXFSZ); stderr: \(child.errorOutput)"
        )

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
        #expect(before.count > 0 && before.count < half, "\(before.count) events from before the limit was raised")
        #expect(before == before.sorted() && Set(before).count == before.count, "events out of order or repeated")
        #expect(reported == [half - before.count], "one report with the exact count")
        #expect(
            events.filter { $0 >= half } == Array(half..<Self.count),
            "an event logged after the limit was raised is missing"
        )
        #expect(
            child.errorOutput.contains(
                "writing to \(folder.appending("child.log").path) works again; \(half - before.count) event(s) were lost"
            ),
            "stderr: \(child.errorOutput)"
        )
    }

    @Test func programWhoseFileRotatesBelowItsFileSizeLimitLosesNothing() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let rotateAt = 200 << 10
        let child = try ChildProcess(
            arguments: ["file-size-limit-rotating", folder.path, "\(Self.count)", "\(Self.limit)", "\(rotateAt)"]
        )
        let status = await child.waitForExit(timeout: .seconds(120))
        #expect(
            status == 0,
            "exit status \(status.map { "\($0)" } ?? "none") (25 is SIGXFSZ); stderr: \(child.errorOutput)"
        )
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
