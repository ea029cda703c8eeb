import Foundation
import JustLogCore
import JustLogTestSupport

/// Records and log files written by a real `FileDestination`, for the view and ship tests.
enum LogFiles {
    static func record(
        _ level: LogLevel,
        _ message: String,
        userInfo: [String: LogValue] = [:],
        at timestamp: LogTimestamp = .now(),
        id: String? = nil
    ) -> LogRecord {
        var info = userInfo
        info[UserInfoKey.logType] = .string(level.logType)
        let eventID = id ?? UUID().uuidString.lowercased()
        return LogRecord(
            level: level,
            message: message,
            userInfo: info,
            metadata: [
                MetadataKey.timestamp: .string(timestamp.rfc3339), MetadataKey.eventID: .string(eventID),
                MetadataKey.file: "Checkout.swift", MetadataKey.function: "pay()", MetadataKey.line: "42",
            ],
            timestamp: timestamp,
            eventID: eventID
        )
    }

    /// A file destination on `url` (UTC line times), rotating past `maximumFileSize`.
    static func destination(_ url: URL, maximumFileSize: Int = 10 << 20, retained: Int = 5) throws -> FileDestination {
        try FileDestination(
            configuration: .init(
                url: url,
                maximumFileSize: maximumFileSize,
                retainedFileCount: retained,
                timeZone: TimeZone(identifier: "UTC")!
            ),
            diagnostics: DiagnosticSink { _ in }
        )
    }

    /// Writes each record in its own batch (so rotation can happen between any two).
    static func write(_ records: [LogRecord], to destination: FileDestination) {
        for record in records { destination.write(LogBatch(records: [record])) }
    }
}
