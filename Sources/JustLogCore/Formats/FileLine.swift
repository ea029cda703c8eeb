public import Foundation

/// A line of a log file read back: its time, level and record (for `justlog view` and `justlog ship`).
///
/// ```swift
/// let line = try FileLine(parsing: "2016-12-24 12:31:02.734  📣 VERBOSE: {\"message\":…}")
/// line.record.message
/// ```
public struct FileLine: Sendable {
    public var level: LogLevel
    public var record: LogRecord

    /// Parses a line written by ``LineFormat/writeFileLine(for:into:)``; the line time is read in `zone`
    /// only when the record's metadata has no `timestamp` (older files).
    public init(parsing line: Substring, zone: TimeZone = .current) throws(JustLogError) {
        let text = line.hasSuffix("\n") ? line.dropLast() : line
        guard let jsonStart = text.firstIndex(of: "{") else {
            throw JustLogError(.malformedInput, "no JSON object on the line")
        }
        let prefix = text[..<jsonStart]
        guard prefix.hasSuffix(": ") else {
            throw JustLogError(.malformedInput, "expected '<time>  <emoji> <LEVEL>: ' before the JSON")
        }
        let label = prefix.dropLast(2).split(separator: " ").last.map(String.init) ?? ""
        guard let level = LogLevel(name: label) else {
            throw JustLogError(.malformedInput, "unknown level '\(label)'")
        }
        guard case .object(let object) = try JSONReader.parse(text[jsonStart...]) else {
            throw JustLogError(.malformedInput, "the JSON is not an object")
        }
        guard case .string(let message)? = object[AggregatedFormat.messageKey] else {
            throw JustLogError(.malformedInput, "the JSON has no \"message\" string")
        }
        var metadata: [String: LogValue] = [:]
        if case .object(let value)? = object[AggregatedFormat.metadataKey] { metadata = value }
        var userInfo: [String: LogValue] = [:]
        if case .object(let value)? = object[AggregatedFormat.userInfoKey] { userInfo = value }

        let timestamp: LogTimestamp
        if case .string(let stamp)? = metadata[MetadataKey.timestamp],
            let parsed = LogTimestamp(parsing: Substring(stamp))
        {
            timestamp = parsed
        } else if let parsed = LogTimestamp(parsing: prefix, zone: zone) {
            timestamp = parsed
        } else {
            throw JustLogError(.malformedInput, "no readable time on the line")
        }
        var eventID = ""
        if case .string(let id)? = metadata[MetadataKey.eventID] { eventID = id }
        self.level = level
        self.record = LogRecord(
            level: level,
            message: message,
            userInfo: userInfo,
            metadata: metadata,
            timestamp: timestamp,
            eventID: eventID
        )
    }
}
