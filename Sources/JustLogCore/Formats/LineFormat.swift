public import Foundation

/// The one-line text of a record in the console and in log files (SPEC §2):
///
/// ```text
/// 2016-12-24 12:31:02.734  ℹ️ INFO: a nice information                          ← console
/// 2016-12-24 12:31:02.734  📣 VERBOSE: {"message":"not so important",…}        ← file
/// ```
///
/// The time is local, `yyyy-MM-dd HH:mm:ss.SSS`, followed by two spaces, the level's emoji, its label
/// and a colon.
public struct LineFormat: Sendable {
    /// The zone of the line time (default: the process's local zone, read once).
    public var timeZone: TimeZone
    /// Whether the console line colors its level label with ANSI escapes (only ever on a terminal).
    public var colors: Bool

    public init(timeZone: TimeZone = .current, colors: Bool = false) {
        self.timeZone = timeZone
        self.colors = colors
    }

    /// `  ℹ️ INFO: ` of each level, one after another, and where each level's lies (by raw value): what follows
    /// the time in a file line. (Held by each format: a static is checked for its initialization at every use.
    /// One array, not one per level: taking an inner array out of an outer one retains and releases it, two
    /// atomic operations a line.)
    private let fileLevelTails: (bytes: [UInt8], ranges: [Range<Int>]) = LogLevel.allCases.reduce(into: ([], [])) {
        let start = $0.bytes.count
        $0.bytes += Array("  \($1.emoji) \($1.label): ".utf8)
        $0.ranges.append(start..<$0.bytes.count)
    }

    /// Appends the file line's prefix, `2016-12-24 12:31:02.734  ℹ️ INFO: `, with the time from `times` (which
    /// must write this format's line time: ``TimeTextCache/Form/line(_:)`` in ``timeZone``).
    func writeFilePrefix(
        level: LogLevel,
        timestamp: LogTimestamp,
        times: inout TimeTextCache,
        into out: inout OutputBuffer
    ) {
        _ = out.write(atMost: filePrefixBound(level)) { writer in
            writeFilePrefix(level: level, timestamp: timestamp, times: &times, into: &writer)
            return true
        }
    }

    /// The most bytes ``writeFilePrefix(level:timestamp:times:into:)-(_,_,_,RawWriter)`` writes for `level`.
    func filePrefixBound(_ level: LogLevel) -> Int {
        TimeTextCache.maximumCount + fileLevelTails.ranges[level.rawValue].count
    }

    /// Writes the prefix of a file line into memory reserved for it (``filePrefixBound(_:)``).
    @inline(__always)
    func writeFilePrefix(
        level: LogLevel,
        timestamp: LogTimestamp,
        times: inout TimeTextCache,
        into out: inout RawWriter
    ) {
        times.write(timestamp, into: &out)
        let tail = fileLevelTails.ranges[level.rawValue]
        fileLevelTails.bytes.withUnsafeBytes { out.bytes(UnsafeRawBufferPointer(rebasing: $0[tail])) }
    }

    /// The prefix `2016-12-24 12:31:02.734  ℹ️ INFO: ` of both lines.
    public func prefix(for record: LogRecord) -> String {
        let time = record.timestamp.localLineTime(in: timeZone)
        if colors {
            return
                "\u{1B}[2m\(time)\u{1B}[0m  \(record.level.emoji) \(Self.color(record.level))\(record.level.label)\u{1B}[0m: "
        }
        return "\(time)  \(record.level.emoji) \(record.level.label): "
    }

    /// The console line: the message only, made terminal-safe, with a trailing newline.
    public func consoleLine(for record: LogRecord) -> String {
        prefix(for: record) + TerminalSafeText.escape(record.message) + "\n"
    }

    /// Appends the file line — the prefix, the aggregated JSON and a newline — to `out`.
    public func writeFileLine(for record: LogRecord, into out: inout [UInt8]) {
        out.append(contentsOf: prefix(for: record).utf8)
        AggregatedFormat.write(record, into: &out)
        out.append(UInt8(ascii: "\n"))
    }

    /// The ANSI color of a level's label on a terminal (shared with `justlog view` and `receive`).
    package static func color(_ level: LogLevel) -> String {
        switch level {
        case .verbose: "\u{1B}[90m"
        case .debug: "\u{1B}[36m"
        case .info: "\u{1B}[32m"
        case .warning: "\u{1B}[33m"
        case .error: "\u{1B}[1;31m"
        }
    }
}
