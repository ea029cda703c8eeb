/// The inputs a ``LogstashClient`` gives its state machine, whichever the transport: json_lines
/// (``ConnectionStateMachine``) or Beats (``BeatsStateMachine``).
protocol DeliveryMachine: Sendable {
    typealias Action = DeliveryAction<ContinuousClock.Instant>

    mutating func start(at position: SpoolPosition) -> [Action]
    mutating func connected() -> [Action]
    mutating func connectFailed(_ error: LogstashError, tryingAnotherHost: Bool, hostsTried: Int) -> [Action]
    mutating func batchRead(_ batch: SpoolBatch) -> [Action]
    mutating func writeCompleted(bufferBound: Int?) -> [Action]
    /// The collector acknowledged up to event `sequence` of the window (Beats only).
    mutating func ackReceived(sequence: UInt32) -> [Action]
    /// The answer to ``DeliveryAction/acknowledgeRecords(from:count:)``.
    mutating func recordsAcknowledged(upTo position: SpoolPosition) -> [Action]
    mutating func connectionClosed(error: LogstashError?, peerClosedAfterUs: Bool) -> [Action]
    mutating func timerFired() -> [Action]
    mutating func recordsAvailable() -> [Action]
    mutating func flushRequested(id: Int, upTo: SpoolPosition) -> [Action]
    /// Flush `id`'s caller stopped waiting (its timeout): forget it without completing it.
    mutating func flushAbandoned(id: Int)
    /// Flushes waiting for records to be delivered.
    var pendingFlushCount: Int { get }
    /// `nothingToSend`: the spool holds nothing unconfirmed (a shutdown while connecting then ends at once).
    mutating func shutdownRequested(nothingToSend: Bool) -> [Action]

    var counters: DeliveryCounters { get }
    var unresolvedError: String? { get }
    var shutdownFailure: LogstashError? { get }
    /// Closing gracefully at the end of a shutdown.
    var isClosing: Bool { get }
    /// How activity lines name the collector now (changed on failover).
    var endpoint: String { get set }
}

extension ConnectionStateMachine: DeliveryMachine where C == ContinuousClock {
    mutating func ackReceived(sequence: UInt32) -> [Action] { [] }
    mutating func recordsAcknowledged(upTo position: SpoolPosition) -> [Action] { [] }

    var isClosing: Bool {
        if case .closing = state { return true }
        return false
    }

    var endpoint: String {
        get { configuration.endpoint }
        set { configuration.endpoint = newValue }
    }
}

extension BeatsStateMachine: DeliveryMachine where C == ContinuousClock {
    var isClosing: Bool {
        if case .closing = state { return true }
        return false
    }

    var endpoint: String {
        get { configuration.endpoint }
        set { configuration.endpoint = newValue }
    }
}
