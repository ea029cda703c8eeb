/// One event as destinations receive it: the aggregated form of the JustLog documentation.
///
/// Three parts — ``message``, ``userInfo`` and ``metadata`` — exactly the three top-level keys of the
/// file line (SPEC §2). A sanitizer may change any of them before any destination sees the record;
/// because destinations encode the record themselves, a sanitizer can never produce invalid JSON.
///
/// ```swift
/// let sanitizer: Sanitizer = { record in
///     if record.userInfo["email"] != nil { record.userInfo["email"] = "<redacted>" }
/// }
/// ```
public struct LogRecord: Sendable {
    public var level: LogLevel
    public var message: String
    /// defaultUserInfo, then the call's userInfo, then `log_type`, then the error's fields (see ``RecordBuilder``).
    public var userInfo: [String: LogValue]
    /// The call site, the running program, `timestamp` and `event_id` (see ``MetadataKey``).
    public var metadata: [String: LogValue]
    /// The time of the call (also in ``metadata`` as `timestamp`).
    public var timestamp: LogTimestamp
    /// Unique per event (also in ``metadata`` as `event_id`): lets a collector drop duplicates.
    public var eventID: String

    public init(
        level: LogLevel,
        message: String,
        userInfo: [String: LogValue],
        metadata: [String: LogValue],
        timestamp: LogTimestamp,
        eventID: String
    ) {
        self.level = level
        self.message = message
        self.userInfo = userInfo
        self.metadata = metadata
        self.timestamp = timestamp
        self.eventID = eventID
    }
}

/// A change applied to every record before any destination sees it, such as redacting personal data.
///
/// It runs under the pipeline's lock (in log order, on the caller's thread when an inline destination such
/// as Logstash is configured): it must be quick and must not log through the same logger, which would wait
/// for that lock forever.
public typealias Sanitizer = @Sendable (inout LogRecord) -> Void

/// The keys of the aggregated form's `metadata`.
public enum MetadataKey {
    public static let file = "file"
    public static let function = "function"
    public static let line = "line"
    public static let appVersion = "app_version"
    public static let version = "version"
    public static let device = "device"
    public static let timestamp = "timestamp"
    public static let eventID = "event_id"
}

/// The keys that JustLog itself writes into `userInfo`.
public enum UserInfoKey {
    public static let logType = "log_type"
    public static let errorDomain = "error_domain"
    public static let errorCode = "error_code"
    public static let localizedDescription = "NSLocalizedDescription"
    public static let localizedFailureReason = "NSLocalizedFailureReason"
    public static let localizedRecoverySuggestion = "NSLocalizedRecoverySuggestion"
    public static let errors = "errors"
    /// What was cut from the event to keep it within its ``CaptureLimits``, one cut per `; `-separated part:
    /// `"message: kept 1048576 of 10485760 bytes (limit 1048576); userInfo: kept 1000 of 100000 keys (limit 1000)"`.
    /// Present only when something was cut.
    public static let truncated = "truncated"
}
