public import JustLogCore

/// A destination that blocks every write until released: to fill a pipeline's queue on purpose.
public final class BlockingDestination: LogDestination {
    private let gate = LockedValue(false)
    private let captured = LockedValue<Int>(0)

    public init() {}

    public func write(_ batch: LogBatch) {
        while !gate.current { usleepShort() }
        captured.withLock { $0 += batch.records.count }
    }

    public func release() { gate.withLock { $0 = true } }
    public var written: Int { captured.current }
}

/// Fixed values for golden tests: a pinned clock, runtime and event ids.
public enum Fixtures {
    /// 2016-12-24T12:31:38.475Z
    public static let timestamp = LogTimestamp(nanosecondsSinceEpoch: 1_482_582_698_475_000_000)
    public static let runtime = RuntimeInfo(appVersion: "1.0 (1)", osVersion: "10.1", device: "x86_64")
    public static let eventIDs = EventIDGenerator(prefix: 0x0123_4567_89AB_CDEF)
    public static let callSite = CallSite(file: "JustLogDemo/ViewController.swift", function: "error()", line: 47)
    public static let defaultUserInfo: [String: LogValue] = [
        "app": "my iOS App", "environment": "production", "tenant": "UK",
    ]

    public static func builder(defaults: [String: LogValue] = defaultUserInfo) -> RecordBuilder {
        RecordBuilder(defaultUserInfo: defaults, runtime: runtime, eventIDs: eventIDs)
    }

    public static func event(
        _ level: LogLevel,
        _ message: String,
        error: (any Error)? = nil,
        userInfo: [String: Any] = [:]
    ) -> LogEvent {
        LogEvent(
            level: level,
            message: message,
            error: error,
            userInfo: LogValue.fields(userInfo),
            callSite: callSite,
            timestamp: timestamp
        )
    }
}

extension Spool {
    /// ``reserveRecord(_:whileQueuedBytesBelow:)`` of the bytes of `record`.
    package func reserveRecord(_ record: [UInt8], whileQueuedBytesBelow limit: Int) throws -> SpoolReservation? {
        var reserved: SpoolReservation?
        try record.withUnsafeBytes { reserved = try reserveRecord($0, whileQueuedBytesBelow: limit) }
        return reserved
    }
}
