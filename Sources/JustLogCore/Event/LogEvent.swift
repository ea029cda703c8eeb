/// What a log call captures on the caller's thread, before anything is merged or formatted.
///
/// Capturing is cheap on purpose: the message string, the caller's `userInfo` (already turned into
/// ``LogValue``s), the error, the call site and one clock reading. The pipeline turns it into a
/// ``LogRecord`` later.
public struct LogEvent: Sendable {
    public var level: LogLevel
    public var message: String
    public var error: (any Error)?
    /// The call's own `userInfo`; defaults are merged in later.
    public var userInfo: [String: LogValue]
    /// Extra metadata from the call (the swift-log bridge puts `logger` and `source` here).
    public var metadata: [String: LogValue]
    public var callSite: CallSite
    public var timestamp: LogTimestamp
    /// What capturing ``userInfo`` cut to stay within its ``CaptureLimits``, one line per cut
    /// (`userInfo.ids: kept 1000 of 5000 elements (limit 1000)`); the record reports them as
    /// ``UserInfoKey/truncated``. Empty for almost every event.
    public var truncations: [String]

    public init(
        level: LogLevel,
        message: String,
        error: (any Error)? = nil,
        userInfo: [String: LogValue] = [:],
        metadata: [String: LogValue] = [:],
        callSite: CallSite,
        timestamp: LogTimestamp,
        truncations: [String] = []
    ) {
        self.level = level
        self.message = message
        self.error = error
        self.userInfo = userInfo
        self.metadata = metadata
        self.callSite = callSite
        self.timestamp = timestamp
        self.truncations = truncations
    }
}

extension LogEvent {
    /// The event of a log call, its `userInfo` captured from the caller's values within `limits` (see
    /// ``ValueCapture``), ``Sensitive`` values replaced as `privacy` says: what a front end calls on the caller's
    /// thread. The message and the error are kept as
    /// they are; the ``RecordBuilder`` applies the message limit and captures the error chain.
    ///
    /// ```swift
    /// let event = LogEvent(level: .info, message: "checkout", capturing: ["basket": ["pizza", "chips"]],
    ///                      callSite: CallSite(file: #fileID, function: #function, line: #line), timestamp: .now())
    /// ```
    public init(
        level: LogLevel,
        message: String,
        error: (any Error)? = nil,
        capturing userInfo: [String: Any]?,
        limits: CaptureLimits = CaptureLimits(),
        privacy: PrivacyPolicy = .default,
        callSite: CallSite,
        timestamp: LogTimestamp
    ) {
        var userInfoValues: [String: LogValue] = [:]
        var truncations: [String] = []
        if let userInfo, !userInfo.isEmpty {
            var capture = ValueCapture(limits: limits, privacy: privacy)
            userInfoValues = capture.fields(userInfo)
            truncations = capture.truncations
        }
        self.init(
            level: level,
            message: message,
            error: error,
            userInfo: userInfoValues,
            callSite: callSite,
            timestamp: timestamp,
            truncations: truncations
        )
    }
}

extension LogEvent {
    /// An event JustLog logs about itself (events dropped or lost): a warning whose call site is the
    /// JustLog code that reports it.
    package static func report(
        _ message: String,
        userInfo: [String: LogValue],
        timestamp: LogTimestamp = .now(),
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) -> LogEvent {
        LogEvent(
            level: .warning,
            message: message,
            userInfo: userInfo,
            callSite: CallSite(file: file, function: function, line: line),
            timestamp: timestamp
        )
    }
}

/// Where a log call was made.
public struct CallSite: Hashable, Sendable {
    /// `#fileID` or `#filePath` of the call; ``fileName`` is its last path component.
    public var file: String
    public var function: String
    public var line: UInt

    @inlinable
    public init(file: String, function: String, line: UInt) {
        self.file = file
        self.function = function
        self.line = line
    }

    /// The last path component of ``file``: `ViewController.swift`.
    public var fileName: String {
        guard let slash = file.utf8.lastIndex(of: UInt8(ascii: "/")) else { return file }
        return String(file[file.utf8.index(after: slash)...])
    }
}
