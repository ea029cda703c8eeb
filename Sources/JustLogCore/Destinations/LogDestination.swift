/// Somewhere log records go: the console, a file, a Logstash collector.
///
/// The pipeline calls a destination from one thread at a time, in the order the records were logged.
/// A destination never throws to its caller and never traps: it reports its own failures through the
/// ``DiagnosticSink`` it was given and keeps going.
///
/// Adding a destination is adding a type that conforms to this protocol; nothing else changes:
///
/// ```swift
/// final class CountingDestination: LogDestination {
///     private let count = LockedValue(0)
///     func write(_ batch: LogBatch) { count.withLock { $0 += batch.records.count } }
/// }
/// ```
public protocol LogDestination: AnyObject, Sendable {
    /// Where this destination wants to receive records; see ``DestinationDelivery``.
    var delivery: DestinationDelivery { get }

    /// Writes a batch of records, in order.
    func write(_ batch: LogBatch)

    /// Hands over everything written so far (to the kernel, the collector, …) and then calls `completion`
    /// exactly once, with `nil` or the error that says why not. It may call `completion` on any thread.
    func flush(completion: @escaping @Sendable ((any Error)?) -> Void)

    /// Releases the destination's resources. Called once, after a final ``flush(completion:)``.
    func shutdown()

    /// After ``shutdown()``, why it did not end cleanly (a connection that did not close in time, events left
    /// behind), or `nil`. ``LogPipeline/shutdown(timeout:)`` returns it. Default `nil`.
    var shutdownFailure: (any Error)? { get }

    /// How this destination takes what an earlier run journaled and had not finished writing when it stopped
    /// (see ``EventJournal``). Asked once, on the pipeline's thread, when the pipeline starts with a journal that
    /// holds such events, before anything is written. Default ``JournalRecovery/replay(afterNewestOf:)`` with
    /// `[]`: every such event is written again (at least once).
    func journalRecovery() -> JournalRecovery
}

/// How a destination takes the events recovered from an ``EventJournal`` after the program was stopped (killed,
/// crashed, or out of time at exit) before every destination had written them.
public enum JournalRecovery: Hashable, Sendable {
    /// Write them again, except those up to and including the newest of them whose `event_id` is in this list —
    /// the `event_id`s of the newest events the destination holds, such as a file's last lines. More than the newest
    /// one: a destination's newest line may be one no recovered event matches (JustLog's own report, an event the
    /// journal could not take, one whose record a damaged journal lost), and the lines before it still say where the
    /// destination stands. Empty: write them all again.
    ///
    /// The contract: a destination that lists an event holds every recovered event before it that its level takes
    /// (it wrote them in the order it was given them, and none it failed to write was given again later). One
    /// that cannot promise that (it retries failed batches later, or keeps events unordered) lists nothing. The
    /// first listed that the journal holds is where it resumes: list them newest first.
    case replay(afterNewestOf: [String])
    /// Don't write them: the pipeline's line that says how many were recovered is enough (the console), or the
    /// destination can't write them (a stand-in for one whose settings can't work). When no destination of the run
    /// replays them, they are counted lost and said so, not "recovered".
    case countOnly
}

extension LogDestination {
    public var delivery: DestinationDelivery { .background }
    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) { completion(nil) }
    public func shutdown() {}
    public var shutdownFailure: (any Error)? { nil }
    public func journalRecovery() -> JournalRecovery { .replay(afterNewestOf: []) }
}

/// Where a destination receives its records.
public struct DestinationDelivery: Hashable, Sendable, CustomStringConvertible {
    enum Kind: Hashable, Sendable { case background, inline, durable }
    let kind: Kind

    /// On the pipeline's background thread, in batches: the caller only pays to capture the event.
    public static let background = DestinationDelivery(kind: .background)
    /// On the caller's thread, before the log call returns, one record per batch: for destinations that
    /// must make a record crash-safe (a memory-mapped spool) before the program can be killed.
    public static let inline = DestinationDelivery(kind: .inline)
    /// The record must be crash-safe before the log call returns: in the background when the pipeline has an
    /// ``EventJournal`` (the journal makes every event crash-safe on the caller's thread, and what the destination
    /// had not taken when the program stopped is given to it again at the next start), otherwise ``inline``.
    /// The Logstash destination: with a journal, its encoding leaves the caller's thread.
    public static let durable = DestinationDelivery(kind: .durable)

    /// Where the pipeline delivers: ``durable`` becomes ``background`` with a journal and ``inline`` without.
    public func resolved(journaled: Bool) -> DestinationDelivery {
        kind == .durable ? (journaled ? .background : .inline) : self
    }

    public var description: String {
        switch kind {
        case .background: "background"
        case .inline: "inline"
        case .durable: "durable"
        }
    }
}

/// Records handed to a destination in one call, oldest first.
public struct LogBatch: Sendable {
    /// The records, in the order they were logged.
    public var records: [LogRecord]

    public init(records: [LogRecord]) {
        self.records = records
    }
}
