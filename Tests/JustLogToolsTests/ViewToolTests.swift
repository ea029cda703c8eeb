import Foundation
import JustLogCore
import JustLogTestSupport
import JustLogTools
import Testing

private let utc = TimeZone(identifier: "UTC")!

/// The message of a readable line without fields: what follows the padded level label.
private func shownMessage(_ line: String) -> String {
    for level in LogLevel.allCases {
        if let range = line.range(of: level.label) {
            return line[range.upperBound...].trimmingCharacters(in: .whitespaces)
        }
    }
    return line
}

/// Runs the view tool (not following) and returns its summary and what it printed.
private func view(
    _ files: [String],
    _ change: (inout ViewTool.Options) -> Void = { _ in }
) async throws -> (ViewTool.Summary, LineCapture, LineCapture) {
    let output = LineCapture()
    let errors = LineCapture()
    var options = ViewTool.Options(
        files: files,
        colors: .never,
        timeZone: utc,
        output: output.output,
        errors: errors.output
    )
    change(&options)
    let summary = try await ViewTool(options: options).run()
    return (summary, output, errors)
}

@Suite struct ViewToolTests {
    static let base = LogTimestamp(nanosecondsSinceEpoch: 1_482_582_698_475_000_000)  // 2016-12-24T12:31:38.475Z

    /// A file with one event per level, one of them old.
    private func sampleFile(_ folder: TemporaryDirectory) throws -> String {
        let url = folder.appending("app.log")
        let file = try LogFiles.destination(url)
        LogFiles.write(
            [
                LogFiles.record(
                    .verbose,
                    "starting",
                    at: LogTimestamp(nanosecondsSinceEpoch: Self.base.nanosecondsSinceEpoch - 3_600_000_000_000),
                    id: "e0"
                ),
                LogFiles.record(.info, "Payment accepted", userInfo: ["amount": 12.5], at: Self.base, id: "e1"),
                LogFiles.record(
                    .warning,
                    "gateway slow",
                    userInfo: ["service": "payment-gw", "latency ms": 2350],
                    at: Self.base,
                    id: "e2"
                ),
                LogFiles.record(.error, "checkout failed", userInfo: ["order": ["id": 7]], at: Self.base, id: "e3"),
            ],
            to: file
        )
        file.shutdown()
        return url.path
    }

    @Test func printsAlignedReadableLines() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let (summary, output, errors) = try await view([try sampleFile(folder)])
        #expect(
            output.lines == [
                "2016-12-24 11:31:38.475  📣 VERBOSE  starting",
                "2016-12-24 12:31:38.475  ℹ️ INFO     Payment accepted amount=12.5",
                #"2016-12-24 12:31:38.475  ⚠️ WARNING  gateway slow "latency ms"=2350 service=payment-gw"#,
                #"2016-12-24 12:31:38.475  ☠️ ERROR    checkout failed order={"id":7}"#,
            ]
        )
        #expect(errors.text.isEmpty)
        #expect(summary.events == 4)
        #expect(summary.shown == 4)
    }

    @Test func filtersByMinimumLevel() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let (summary, output, _) = try await view([try sampleFile(folder)]) { $0.minimumLevel = .warning }
        #expect(output.lines.map { $0.contains("gateway slow") || $0.contains("checkout failed") } == [true, true])
        #expect(summary.shown == 2)
    }

    @Test func grepSearchesMessageAndUserInfoValuesIgnoringCase() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let (_, output, _) = try await view([try sampleFile(folder)]) { $0.grep = "PAYMENT" }
        #expect(output.lines.count == 2)
        #expect(output.lines[0].contains("Payment accepted"))
        #expect(output.lines[1].contains("gateway slow"))
    }

    @Test func sinceDropsOlderEvents() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let since = try ViewTool.parseSince("2016-12-24T12:00:00Z")
        let (summary, output, _) = try await view([try sampleFile(folder)]) { $0.since = since }
        #expect(summary.shown == 3)
        #expect(!output.text.contains("starting"))
    }

    @Test func jsonPrintsTheAggregatedFormOnePerLine() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let (_, output, _) = try await view([try sampleFile(folder)]) {
            $0.json = true
            $0.minimumLevel = .error
        }
        #expect(output.lines.count == 1)
        guard case .object(let object) = try JSONReader.parse(output.lines[0]) else {
            Issue.record("not a JSON object: \(output.text)")
            return
        }
        #expect(Set(object.keys) == ["message", "metadata", "userInfo"])
        #expect(object["message"] == "checkout failed")
        if case .object(let metadata)? = object["metadata"] { #expect(metadata["event_id"] == "e3") }
    }

    /// `view --json` of `url`, its output a terminal: its summary and what it printed.
    private func viewJSONOnATerminal(_ url: URL) async throws -> (ViewTool.Summary, LineCapture) {
        let terminal = LineCapture(isTerminal: true)
        let options = ViewTool.Options(
            files: [url.path],
            json: true,
            output: terminal.output,
            errors: LineCapture().output
        )
        return (try await ViewTool(options: options).run(), terminal)
    }

    /// `--json` on a terminal printed C1 controls (U+009B, taken for CSI by some terminals) and bidirectional
    /// overrides raw, as JSON allows (review, helper-72): on a terminal they are `\u` escapes — the same JSON.
    @Test func jsonOnATerminalEscapesWhatATerminalWouldActOn() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let url = folder.appending("app.log")
        let file = try LogFiles.destination(url)
        LogFiles.write([LogFiles.record(.error, "csi \u{9B}2J bidi \u{202E}olleh", at: Self.base, id: "e9")], to: file)
        let (_, terminal) = try await viewJSONOnATerminal(url)
        #expect(!terminal.text.unicodeScalars.contains { $0.value == 0x9B || $0.value == 0x202E }, "\(terminal.text)")
        #expect(terminal.text.contains(#"\u009b2J"#) && terminal.text.contains(#"\u202eolleh"#), "\(terminal.text)")
        guard case .object(let object) = try JSONReader.parse(terminal.lines[0]) else {
            Issue.record("not a JSON object: \(terminal.text)")
            return
        }
        #expect(object["message"] == "csi \u{9B}2J bidi \u{202E}olleh")
    }

    /// A raw carriage return between a line's JSON tokens (whitespace JSON allows) returned the cursor on a terminal,
    /// so that the rest of the line wrote over its start (review, helper-73): escaped too.
    @Test func jsonOnATerminalEscapesARawCarriageReturnBetweenTokens() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let url = folder.appending("app.log")
        let file = try LogFiles.destination(url)
        LogFiles.write([LogFiles.record(.error, "shown", at: Self.base, id: "e8")], to: file)
        var bytes = [UInt8](try Data(contentsOf: url))
        let brace = try #require(bytes.firstIndex(of: UInt8(ascii: "{")))
        bytes.insert(UInt8(ascii: "\r"), at: brace + 1)
        try Data(bytes).write(to: url)
        let (summary, terminal) = try await viewJSONOnATerminal(url)
        #expect(summary.shown == 1)
        #expect(!terminal.text.dropLast().contains("\r"), "\(terminal.text.debugDescription)")
    }

    /// Ctrl-C (the task cancelled) while reading: exit 130, not a success — it read on to the end and exited 0
    /// (review, helper-72).
    @Test func anInterruptedReadFailsWith130() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let path = try sampleFile(folder)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await ViewTool(
                options: .init(files: [path], output: LineCapture().output, errors: LineCapture().output)
            ).run()
        }
        let error = await #expect(throws: ToolError.self) { try await task.value }
        #expect(error?.exitCode == ToolError.interrupted)
    }

    @Test func aMalformedLineIsReportedWithFileAndLineAndReadingGoesOn() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let path = try sampleFile(folder)
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.insert("this is not a log line", at: 1)
        lines.insert("2016-12-24 12:31:38.475  ℹ️ INFO: {\"message\":", at: 3)
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)

        let (summary, output, errors) = try await view([path])
        #expect(output.lines.count == 4)
        #expect(summary.malformed == 2)
        let reports = errors.lines
        #expect(reports.count == 2)
        #expect(reports[0] == "\(path):2: no JSON object on the line")
        #expect(reports[1].hasPrefix("\(path):4: invalid JSON at byte"))
    }

    /// Issue #10: `view` on a binary printed one error line per input line (253,603 for one file) and exited 0.
    @Test func aFileWithNoLogLineFailsAfterListingTwentyProblemsAndCountingTheRest() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let log = try sampleFile(folder)
        let other = folder.file("notes.txt")
        try (0..<500).map { "line \($0) of something else" }.joined(separator: "\n").write(
            toFile: other,
            atomically: true,
            encoding: .utf8
        )
        let output = LineCapture()
        let errors = LineCapture()
        var options = ViewTool.Options(files: [log, other], timeZone: utc)
        options.output = output.output
        options.errors = errors.output
        await #expect {
            _ = try await ViewTool(options: options).run()
        } throws: { error in
            (error as? ToolError)?.message
                == "\(other) has no log line: give files written by JustLog's file destination"
        }
        #expect(output.lines.count == 4, "the log file's events are still shown")
        #expect(errors.lines.count == 21)
        #expect(errors.lines.last == "… and 480 more line(s) that are not log lines")
    }

    @Test func readsRotatedFilesInTheOrderGiven() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let url = folder.appending("app.log")
        let file = try LogFiles.destination(url, maximumFileSize: 1000, retained: 10)
        LogFiles.write((0..<20).map { LogFiles.record(.info, "event \($0)") }, to: file)
        file.shutdown()
        let rotated = (1...10).map { "\(url.path).\($0)" }.filter { FileManager.default.fileExists(atPath: $0) }
        #expect(
            rotated.count >= 3,
            "\((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []) \((try? String(contentsOf: url, encoding: .utf8)) ?? "")"
        )
        let (summary, output, errors) = try await view(rotated.reversed() + [url.path])
        #expect(errors.text.isEmpty)
        #expect(summary.events == 20)
        #expect(output.lines.map(shownMessage) == (0..<20).map { "event \($0)" })
    }

    @Test func aMissingFileIsAOneLineErrorBeforeAnythingIsPrinted() async throws {
        let folder = try TemporaryDirectory(prefix: "view")
        let path = try sampleFile(folder)
        let output = LineCapture()
        await #expect {
            _ = try await ViewTool(options: .init(files: [path, folder.file("missing.log")], output: output.output))
                .run()
        } throws: { error in
            (error as? ToolError)?.message
                == "\(folder.file("missing.log")): No such file or directory; give the path of a log file written by the file destination"
        }
        #expect(output.text.isEmpty)
    }

    @Test func followShowsAppendedLinesThroughRotationsByAFileDestination() async throws {
        let folder = try TemporaryDirectory(prefix: "view-follow")
        let url = folder.appending("app.log")
        let file = try LogFiles.destination(url, maximumFileSize: 1000, retained: 20)
        defer { file.shutdown() }
        LogFiles.write([LogFiles.record(.info, "event 0")], to: file)

        let output = LineCapture()
        let errors = LineCapture()
        let tool = ViewTool(
            options: .init(
                files: [url.path],
                follow: true,
                colors: .never,
                timeZone: utc,
                pollInterval: .milliseconds(5),
                output: output.output,
                errors: errors.output
            )
        )
        let task = Task { try await tool.run() }
        defer { task.cancel() }
        #expect(await eventually { output.lines.count == 1 })

        // One event at a time, each shown before the next is written: at most one rotation between polls.
        for index in 1..<20 {
            LogFiles.write([LogFiles.record(index % 2 == 0 ? .info : .warning, "event \(index)")], to: file)
            let shown = await eventually(timeout: .seconds(60)) { output.lines.count == index + 1 }
            #expect(shown, "event \(index) was not shown: \(output.text)")
            if !shown { break }
        }
        task.cancel()
        let summary = try await task.value
        #expect(summary.rotations >= 4)
        #expect(FileManager.default.fileExists(atPath: url.path + ".4"))
        #expect(output.lines.map(shownMessage) == (0..<20).map { "event \($0)" })
        #expect(errors.text.isEmpty)
    }

    /// Issue #10: `view -f` silently skipped a whole rotated file (32,463 events) when it fell behind. Here two
    /// rotations happen between two polls: the file rotated in between must be read too, in order.
    @Test func followReadsEveryFileRotatedWhileItWasBehind() async throws {
        let folder = try TemporaryDirectory(prefix: "view-behind")
        defer { folder.remove() }
        let url = folder.appending("app.log")
        func line(_ message: String) -> String {
            #"2016-12-24 12:31:38.475  ℹ️ INFO: {"message":"\#(message)","metadata":{},"userInfo":{}}"# + "\n"
        }
        try line("first file").write(to: url, atomically: false, encoding: .utf8)
        let output = LineCapture()
        let errors = LineCapture()
        let tool = ViewTool(
            options: .init(
                files: [url.path],
                follow: true,
                colors: .never,
                timeZone: utc,
                pollInterval: .milliseconds(300),
                output: output.output,
                errors: errors.output
            )
        )
        let task = Task { try await tool.run() }
        defer { task.cancel() }
        #expect(await eventually { output.lines.count == 1 })
        // Two rotations as the file destination makes them, well within one poll interval.
        let manager = FileManager.default
        try manager.moveItem(atPath: url.path, toPath: url.path + ".1")
        try line("second file").write(to: url, atomically: false, encoding: .utf8)
        try manager.moveItem(atPath: url.path + ".1", toPath: url.path + ".2")
        try manager.moveItem(atPath: url.path, toPath: url.path + ".1")
        try line("third file").write(to: url, atomically: false, encoding: .utf8)
        #expect(await eventually(timeout: .seconds(120)) { output.lines.count >= 3 })
        task.cancel()
        let summary = try await task.value
        #expect(output.lines.map(shownMessage) == ["first file", "second file", "third file"])
        #expect(summary.rotations == 2)
        #expect(errors.text.isEmpty, "\(errors.text)")
    }

    /// The files a follower that fell behind must catch up on lie between the one it had open and the new file at
    /// the path — which it opens *before* looking them up: a rotation between the look-up and that opening skipped a
    /// whole file (the follower opened the file after it). Here the new file is rotated right after it was opened.
    @Test func aFileRotatedRightAfterItWasOpenedAsTheNewestIsNotAlsoCaughtUpOn() throws {
        let folder = try TemporaryDirectory(prefix: "view-rotated-newest")
        defer { folder.remove() }
        let path = folder.file("app.log")
        let manager = FileManager.default
        try "first\n".write(toFile: path, atomically: false, encoding: .utf8)
        let following = try LogFileReader(path: path)
        try manager.moveItem(atPath: path, toPath: path + ".1")
        try "second\n".write(toFile: path, atomically: false, encoding: .utf8)
        let newest = try LogFileReader(path: path)
        try manager.moveItem(atPath: path + ".1", toPath: path + ".2")
        try manager.moveItem(atPath: path, toPath: path + ".1")
        try "third\n".write(toFile: path, atomically: false, encoding: .utf8)
        // "second" is the newest opened: the follower reads it next, then follows its rotation to "third".
        #expect(try #require(following.filesRotatedAfterThisOne(before: newest)).map(\.path) == [])

        // Opened after both rotations, the newest is "third": "second" (now .1) is the one to catch up on.
        let third = try LogFileReader(path: path)
        #expect(try #require(following.filesRotatedAfterThisOne(before: third)).map(\.path) == [path + ".1"])
    }

    @Test func followStartsAgainWhenTheFileIsTruncated() async throws {
        let folder = try TemporaryDirectory(prefix: "view-truncate")
        let url = folder.appending("app.log")
        let file = try LogFiles.destination(url)
        defer { file.shutdown() }
        LogFiles.write([LogFiles.record(.info, "before truncation, a long message to make the file longer")], to: file)
        let output = LineCapture()
        let tool = ViewTool(
            options: .init(
                files: [url.path],
                follow: true,
                colors: .never,
                pollInterval: .milliseconds(5),
                output: output.output
            )
        )
        let task = Task { try await tool.run() }
        defer { task.cancel() }
        #expect(await eventually { output.lines.count == 1 })
        #expect(truncate(url.path, 0) == 0)
        // Write through another handle, as a copytruncate rotation leaves the writer appending at 0.
        try Array(#"2016-12-24 12:31:38.475  ℹ️ INFO: {"message":"after","metadata":{},"userInfo":{}}"#.utf8 + [10])
            .withUnsafeBytes { try Data($0).write(to: url) }
        #expect(await eventually { output.lines.count == 2 })
        #expect(output.lines.last?.hasSuffix("after") == true)
        task.cancel()
        _ = try await task.value
    }

    @Test(arguments: [
        ("2016-12-24T12:31:38Z", 1_482_582_698_000),
        ("2016-12-24T12:31:38.475Z", 1_482_582_698_475),
        ("2016-12-24T14:31:38+02:00", 1_482_582_698_000),
        ("2016-12-24 12:31:38", 1_482_582_698_000),
        ("2016-12-24 12:31:38.475", 1_482_582_698_475),
        ("2016-12-24", 1_482_537_600_000),
        ("10m", 1_482_582_098_475),
        ("2h", 1_482_575_498_475),
        ("1d", 1_482_496_298_475),
    ])
    func sinceAcceptsRFC3339LocalTimesAndTimesAgo(text: String, expectedMilliseconds: Int64) throws {
        let now = Self.base.date
        let stamp = try ViewTool.parseSince(text, now: now, zone: utc)
        #expect(stamp.nanosecondsSinceEpoch / 1_000_000 == expectedMilliseconds)
    }

    @Test func sinceRejectsOtherTextWithTheAcceptedForms() {
        #expect {
            _ = try ViewTool.parseSince("yesterday")
        } throws: { error in
            (error as? ToolError)?.message.contains("give RFC 3339 (2024-05-01T12:00:00Z)") == true
        }
    }
}
