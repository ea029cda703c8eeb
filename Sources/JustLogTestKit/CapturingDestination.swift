public import JustLogCore

/// A destination that keeps what it is given, for assertions in your own tests.
///
/// ```swift
/// let capture = CapturingDestination()
/// let logger = StructuredLogger(configuration: .init(destinations: [.init(capture)]))
/// logger.info("charged", userInfo: ["amount": 12.5])
/// try await logger.flush()
/// #expect(capture.messages == ["charged"])
/// ```
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
    /// The messages of ``records``.
    public var messages: [String] { captured.current.map(\.message) }
    /// How many flushes it received.
    public var flushCount: Int { flushes.current }
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
        TextOutput(isTerminal: isTerminal) { bytes in
            self.storage.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) }
        }
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
