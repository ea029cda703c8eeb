import JustLogCore

/// Counts the lines a ``JSONLinesReceiver`` delivers by their `event_id`: how many distinct events
/// arrived, how many arrived more than once (at-least-once delivery resends), and how many lines had no
/// `event_id` or were not JSON. Thread-safe; pass ``record(_:)`` as the receiver's handler.
///
/// ```swift
/// let tally = EventIDTally()
/// let receiver = JSONLinesReceiver(configuration: .init(), handler: tally.record)
/// let port = try await receiver.start()
/// // … log through a LogstashClient to 127.0.0.1:port …
/// let arrived = await tally.waitUntil(uniqueEventIDs: 1000, timeout: .seconds(10))
/// await receiver.stop()
/// print(tally.snapshot)   // 1000 lines, 1000 unique event_id(s), 0 duplicate(s), …
/// ```
public final class EventIDTally: Sendable {
    /// What the tally has seen.
    public struct Snapshot: Sendable, Hashable, CustomStringConvertible {
        /// Every line delivered, invalid ones included.
        public var lines = 0
        /// Distinct `event_id` values.
        public var uniqueEventIDs = 0
        /// Lines whose `event_id` had been seen before.
        public var duplicates = 0
        /// JSON lines without a string `event_id`.
        public var withoutEventID = 0
        /// Lines that were not JSON objects, or too long.
        public var invalid = 0

        public var description: String {
            "\(lines) lines, \(uniqueEventIDs) unique event_id(s), \(duplicates) duplicate(s), \(withoutEventID) without event_id, \(invalid) invalid"
        }
    }

    private struct State: Sendable {
        var snapshot = Snapshot()
        var seen: Set<String> = []
    }

    private let state = LockedValue(State())

    public init() {}

    /// Counts one line. Usable directly as a ``JSONLinesReceiver`` handler.
    @Sendable
    public func record(_ line: JSONLinesReceiver.Line) {
        var eventID: String?
        var valid = false
        if case .success(.object(let object)) = line.parsed {
            valid = true
            if case .string(let id)? = object["event_id"] { eventID = id }
        }
        state.withLock { state in
            state.snapshot.lines += 1
            guard valid else {
                state.snapshot.invalid += 1
                return
            }
            guard let eventID else {
                state.snapshot.withoutEventID += 1
                return
            }
            if state.seen.insert(eventID).inserted {
                state.snapshot.uniqueEventIDs += 1
            } else {
                state.snapshot.duplicates += 1
            }
        }
    }

    /// A copy of the counts so far.
    public var snapshot: Snapshot { state.withLock { $0.snapshot } }

    /// Whether `eventID` has arrived.
    public func contains(_ eventID: String) -> Bool {
        state.withLock { $0.seen.contains(eventID) }
    }

    /// Every distinct `event_id` seen so far.
    public var eventIDs: Set<String> { state.withLock { $0.seen } }

    /// Polls (every 10 ms) until `count` distinct event ids arrived or `timeout` passed; returns whether they did.
    public func waitUntil(uniqueEventIDs count: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if snapshot.uniqueEventIDs >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return snapshot.uniqueEventIDs >= count
    }
}
