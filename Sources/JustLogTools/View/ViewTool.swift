package import Foundation
package import JustLogCore

/// What `justlog view` does: reads log files written by the file destination and prints their events —
/// filtered by level, text and time — as readable aligned lines or as the aggregated JSON, and with
/// ``Options/follow`` keeps following the last file through rotations (`tail -F`) until its task is
/// cancelled.
///
/// - Files are read in the order given: pass rotated files oldest first (`app.log.2 app.log.1 app.log`).
/// - A line that can't be read back goes to ``Options/errors`` as `FILE:LINE: reason`; reading continues.
/// - Following: appended lines are shown as they come (polled every ``Options/pollInterval``). When the
///   file is renamed away and a new one created at the path (its inode changes), the rest of the old
///   file is read and the new one is followed from its start; when the file shrinks (truncated in
///   place), it is read again from its start.
///
/// ```swift
/// let tool = ViewTool(options: .init(files: ["app.log.1", "app.log"], minimumLevel: .warning, grep: "payment"))
/// let summary = try await tool.run()   // summary.shown, summary.malformed
/// ```
package struct ViewTool: Sendable {
    /// How `justlog view` reads and prints.
    package struct Options: Sendable {
        /// The files, read in this order; the last one is followed with ``follow``.
        package var files: [String]
        /// Only events at this level or above (default: all).
        package var minimumLevel: LogLevel
        /// Only events whose message or a `userInfo` value contains this text, ignoring case.
        package var grep: String?
        /// Only events logged at or after this time.
        package var since: LogTimestamp?
        /// Keep reading the last file as it grows and is rotated, until cancelled.
        package var follow: Bool
        /// Print the aggregated JSON of each event (one object per line) instead of readable lines.
        package var json: Bool
        /// When readable lines are colored (default: on a terminal).
        package var colors: ConsoleDestination.ColorMode
        /// The zone of the times shown, and of line times in files that have no `metadata.timestamp`.
        package var timeZone: TimeZone
        /// How often a followed file is checked for new lines (default 200 ms).
        package var pollInterval: Duration
        /// Where events go (default standard output).
        package var output: TextOutput
        /// Where malformed-line reports go (default standard error).
        package var errors: TextOutput

        package init(
            files: [String],
            minimumLevel: LogLevel = .verbose,
            grep: String? = nil,
            since: LogTimestamp? = nil,
            follow: Bool = false,
            json: Bool = false,
            colors: ConsoleDestination.ColorMode = .automatic,
            timeZone: TimeZone = .current,
            pollInterval: Duration = .milliseconds(200),
            output: TextOutput = .standardOutput,
            errors: TextOutput = .standardError
        ) {
            self.files = files
            self.minimumLevel = minimumLevel
            self.grep = grep
            self.since = since
            self.follow = follow
            self.json = json
            self.colors = colors
            self.timeZone = timeZone
            self.pollInterval = pollInterval
            self.output = output
            self.errors = errors
        }
    }

    /// What was read.
    package struct Summary: Sendable, Hashable {
        /// Events read back.
        package var events = 0
        /// Events printed (those that passed the filters).
        package var shown = 0
        /// Lines that could not be read back.
        package var malformed = 0
        /// Rotations followed.
        package var rotations = 0
        /// Files with lines but not one log line among them (not written by JustLog's file destination).
        package var filesWithoutLogLines: [String] = []

        package init() {}
    }

    package var options: Options

    package init(options: Options) {
        self.options = options
    }

    /// Ctrl-C or SIGTERM (the task cancelled) while reading: exit 130, not 0 — what was printed is not the whole
    /// file. Reading stopped only once it reached the end, then succeeded: a large file, `/dev/zero` or a FIFO kept
    /// being read past the first signal (review, helper-72).
    private static func stopIfInterrupted() throws {
        guard Task.isCancelled else { return }
        throw ToolError("interrupted before the end of the file(s)", exitCode: ToolError.interrupted)
    }

    /// Reads every file in order, then — with ``Options/follow`` — follows the last one until the task is
    /// cancelled.
    ///
    /// - Throws: ``ToolError`` when no file is given or a file can't be opened (before anything is printed).
    package func run() async throws -> Summary {
        guard !options.files.isEmpty else {
            throw ToolError.usage("no log file given: name one or more files, such as app.log")
        }
        // Open every file first, so a wrong name fails before anything is printed.
        var readers = try options.files.map { try LogFileReader(path: $0) }
        var printer = Printer(options: options)
        var last = readers.removeLast()
        for reader in readers {
            printer.drain(reader)
            try Self.stopIfInterrupted()
            printer.finishFile(reader)
        }
        printer.drain(last, atEnd: !options.follow)
        try Self.stopIfInterrupted()
        guard options.follow else {
            printer.finishFile(last)
            printer.reportUnlisted()
            if !printer.summary.filesWithoutLogLines.isEmpty {
                throw ToolError(
                    "\(printer.summary.filesWithoutLogLines.map(TerminalSafeText.escape).joined(separator: ", ")) has no log line: give files written by JustLog's file destination"
                )
            }
            return printer.summary
        }

        while !Task.isCancelled {
            if printer.readAvailable(last) { continue }
            switch last.pathState() {
            case .same(let size) where size < last.offset:
                last.restartFromBeginning()
                continue
            case .replaced:
                // Rotated: the old file may have got lines since the last read; finish it, then the files rotated
                // after it (when the reader fell behind several rotations), then switch to the new one — opened
                // first, so that a rotation during the look-up can't skip a file.
                let newest: LogFileReader
                do {
                    // Nothing at the path yet (between the rename and the new file): wait for it.
                    guard let opened = try LogFileReader.openIfPresent(last.path) else { break }
                    newest = opened
                } catch {
                    printer.drain(last, atEnd: true)
                    throw ToolError(
                        "stopped following: \(last.path) was rotated, and the new file can't be read: \((error as? ToolError)?.message ?? "\(error)")"
                    )
                }
                printer.drain(last, atEnd: true)
                if let newer = last.filesRotatedAfterThisOne(before: newest) {
                    for file in newer {
                        printer.drain(file, atEnd: true)
                        printer.summary.rotations += 1
                    }
                } else {
                    printer.warnOnce(
                        "\(TerminalSafeText.escape(last.path)) was replaced and the file being read is gone (deleted, rotated past the retention, or renamed again at every look) before it was read to the end: lines of files rotated meanwhile may be missing"
                    )
                }
                last = newest
                printer.summary.rotations += 1
                continue
            case .same, .missing:
                break
            }
            try? await Task.sleep(for: options.pollInterval)
        }
        return printer.summary
    }
}

// MARK: - Filtering and printing

extension ViewTool {
    struct Printer {
        /// Malformed lines listed one by one; past it they are only counted, and the count is said at the end.
        static let listedProblems = 20

        let options: Options
        let renderer: EventLineRenderer
        var summary = Summary()
        /// Events and malformed lines in the file being read, to find files with no log line at all.
        private var fileEvents = 0
        private var fileMalformed = 0

        init(options: Options) {
            self.options = options
            let colors =
                switch options.colors {
                case .always: true
                case .never: false
                case .automatic: options.output.isTerminal
                }
            renderer = EventLineRenderer(colors: colors, timeZone: options.timeZone)
        }

        /// The file `reader` is read to its end: remember it if it had lines but no log line.
        mutating func finishFile(_ reader: LogFileReader) {
            if fileEvents == 0 && fileMalformed > 0 { summary.filesWithoutLogLines.append(reader.path) }
            fileEvents = 0
            fileMalformed = 0
        }

        /// Warnings already said (each once).
        private var warned = Set<String>()

        /// Says `warning` on the error output, once.
        mutating func warnOnce(_ warning: String) {
            guard warned.insert(warning).inserted else { return }
            options.errors.write(Array("justlog: \(warning)\n".utf8))
        }

        /// Says how many malformed lines were not listed.
        func reportUnlisted() {
            let unlisted = summary.malformed - Self.listedProblems
            guard unlisted > 0 else { return }
            options.errors.write(Array("… and \(unlisted) more line(s) that are not log lines\n".utf8))
        }

        /// Reads `reader` to its current end (and its last partial line when `atEnd`).
        mutating func drain(_ reader: LogFileReader, atEnd: Bool = true) {
            while !Task.isCancelled, readAvailable(reader) {}
            if atEnd, !Task.isCancelled, let line = reader.finishPartialLine() { show([line], from: reader) }
        }

        /// Reads and shows what is available; `false` when there was nothing.
        mutating func readAvailable(_ reader: LogFileReader) -> Bool {
            guard let lines = reader.readLines() else { return false }
            show(lines, from: reader)
            return true
        }

        mutating func show(_ lines: [LogFileReader.Line], from reader: LogFileReader) {
            var out: [UInt8] = []
            var problems: [UInt8] = []
            for line in lines {
                if line.tooLong {
                    summary.malformed += 1
                    fileMalformed += 1
                    if summary.malformed <= Self.listedProblems {
                        problems += Array(
                            "\(reader.path):\(line.number): line longer than \(LogFileReader.maxLineBytes) bytes, skipped\n"
                                .utf8
                        )
                    }
                    continue
                }
                if line.bytes.isEmpty { continue }
                let text = String(decoding: line.bytes, as: UTF8.self)
                let parsed: FileLine
                do {
                    parsed = try FileLine(parsing: Substring(text), zone: options.timeZone)
                } catch {
                    summary.malformed += 1
                    fileMalformed += 1
                    if summary.malformed <= Self.listedProblems {
                        problems += Array(
                            "\(TerminalSafeText.escape(reader.path)):\(line.number): \(TerminalSafeText.escape(error.message))\n"
                                .utf8
                        )
                    }
                    continue
                }
                summary.events += 1
                fileEvents += 1
                guard matches(parsed.record) else { continue }
                summary.shown += 1
                if options.json {
                    if let brace = line.bytes.firstIndex(of: UInt8(ascii: "{")) {
                        out +=
                            options.output.isTerminal
                            ? Self.terminalSafe(json: line.bytes[brace...]) : Array(line.bytes[brace...])
                        out.append(UInt8(ascii: "\n"))
                    }
                } else {
                    out += Array(render(parsed.record).utf8)
                }
            }
            options.output.write(out)
            options.errors.write(problems)
        }

        /// A JSON line for a terminal: the C1 controls (U+0080…U+009F: some terminals take U+009B for CSI) and the
        /// bidirectional controls, which JSON may hold raw, written as `\u` escapes — the same JSON, nothing a
        /// terminal acts on (review, helper-72). (The readable form escapes them too: ``TerminalSafeText``.)
        static func terminalSafe(json bytes: ArraySlice<UInt8>) -> [UInt8] {
            // Always the text decoded again (a byte that is no UTF-8, a lone 0x9B, becomes U+FFFD), and raw C0
            // controls too (a `\r` between tokens would write over the line: review, helper-73).
            let text = String(decoding: bytes, as: UTF8.self)
            var out = ""
            for scalar in text.unicodeScalars {
                switch scalar.value {
                case 0x00..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                    let hex = String(scalar.value, radix: 16, uppercase: false)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default:
                    out.unicodeScalars.append(scalar)
                }
            }
            return Array(out.utf8)
        }

        func matches(_ record: LogRecord) -> Bool {
            guard record.level >= options.minimumLevel else { return false }
            if let since = options.since, record.timestamp < since { return false }
            if let grep = options.grep, !grep.isEmpty {
                if record.message.range(of: grep, options: .caseInsensitive) != nil { return true }
                return record.userInfo.values.contains { $0.text.range(of: grep, options: .caseInsensitive) != nil }
            }
            return true
        }

        func render(_ record: LogRecord) -> String {
            renderer.render(
                time: record.timestamp,
                level: record.level,
                message: record.message,
                fields: EventLineRenderer.fields(of: record.userInfo, excluding: [UserInfoKey.logType])
            )
        }
    }
}

// MARK: - Parsing --since

extension ViewTool {
    /// Parses a `--since` value: RFC 3339 (`2024-05-01T12:00:00Z`, `…+02:00`, with or without
    /// fractions), a local `yyyy-MM-dd HH:mm:ss[.SSS]` or `yyyy-MM-dd`, or a time ago: `90s`, `10m`, `2h`, `1d`.
    ///
    /// - Throws: ``ToolError`` that shows the accepted forms.
    package static func parseSince(_ text: String, now: Date = Date(), zone: TimeZone = .current) throws -> LogTimestamp
    {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let unit = trimmed.last, let amount = Double(trimmed.dropLast()), amount >= 0 {
            let seconds: Double? =
                switch unit {
                case "s": amount
                case "m": amount * 60
                case "h": amount * 3600
                case "d": amount * 86400
                default: nil
                }
            if let seconds { return LogTimestamp(now.addingTimeInterval(-seconds)) }
        }
        let bytes = Array(trimmed.utf8)
        // `2024-05-01 12:00:00.000` (a line time, local) or `2024-05-01T12:00:00.000Z`.
        if bytes.count == 23 || (bytes.count == 24 && bytes[23] == UInt8(ascii: "Z")),
            let stamp = LogTimestamp(parsing: Substring(trimmed), zone: zone)
        {
            return stamp
        }
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime],
        ] {
            formatter.formatOptions = options
            if let date = formatter.date(from: trimmed) { return LogTimestamp(date) }
        }
        if bytes.count == 19, let stamp = LogTimestamp(parsing: Substring(trimmed + ".000"), zone: zone) {
            return stamp
        }
        if bytes.count == 10, let stamp = LogTimestamp(parsing: Substring(trimmed + " 00:00:00.000"), zone: zone) {
            return stamp
        }
        throw ToolError(
            "--since '\(text)' is not a time: give RFC 3339 (2024-05-01T12:00:00Z), local '2024-05-01 12:00:00', or a time ago such as 10m, 2h, 1d"
        )
    }
}
