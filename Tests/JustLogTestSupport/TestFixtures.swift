public import JustLogCore

/// A destination that keeps what it is given, for assertions.
public final class CapturingDestination: LogDestination {
    private let captured = LockedValue<[LogRecord]>([])
    private let flushes = LockedValue(0)
    public let delivery: DestinationDelivery

    public init(delivery: DestinationDelivery = .background) {
        self.delivery = delivery
    }

    public func write(_ batch: LogBatch) {
        captured.withLock { $0.append(contentsOf: batch.records) }
    }

    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        flushes.withLock { $0 += 1 }
        completion(nil)
    }

    /// Everything written so far, in order.
    public var records: [LogRecord] { captured.current }
    /// How many flushes it received.
    public var flushCount: Int { flushes.current }
}

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

/// Captures what a console, a command or a diagnostics sink writes, for assertions.
public final class LineCapture: Sendable {
    private let storage = LockedValue<[String]>([])
    /// Whether ``output`` claims to be a terminal (to test colors).
    public let isTerminal: Bool

    public init(isTerminal: Bool = false) {
        self.isTerminal = isTerminal
    }

    public var output: TextOutput {
        TextOutput(isTerminal: isTerminal) { bytes in self.storage.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
    }

    public var diagnostics: DiagnosticSink {
        DiagnosticSink { line in self.storage.withLock { $0.append(line) } }
    }

    /// Everything written, joined.
    public var text: String { storage.current.joined() }
    /// Each write, in order.
    public var writes: [String] { storage.current }
    /// The text split into non-empty lines.
    public var lines: [String] { text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
}

/// Fixed values for golden tests: a pinned clock, runtime and event ids.
public enum Fixtures {
    /// 2016-12-24T12:31:38.475Z
    public static let timestamp = LogTimestamp(nanosecondsSinceEpoch: 1_482_582_698_475_000_000)
    public static let runtime = RuntimeInfo(appVersion: "1.0 (1)", osVersion: "10.1", device: "x86_64")
    public static let eventIDs = EventIDGenerator(prefix: 0x0123_4567_89AB_CDEF)
    public static let callSite = CallSite(file: "JustLogDemo/ViewController.swift", function: "error()", line: 47)
    public static let defaultUserInfo: [String: LogValue] = ["app": "my iOS App", "environment": "production", "tenant": "UK"]

    public static func builder(defaults: [String: LogValue] = defaultUserInfo) -> RecordBuilder {
        RecordBuilder(defaultUserInfo: defaults, runtime: runtime, eventIDs: eventIDs)
    }

    public static func event(_ level: LogLevel, _ message: String, error: (any Error)? = nil, userInfo: [String: Any] = [:]) -> LogEvent {
        LogEvent(level: level, message: message, error: error, userInfo: LogValue.fields(userInfo), callSite: callSite, timestamp: timestamp)
    }
}
