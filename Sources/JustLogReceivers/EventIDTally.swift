import JustLogCore

/// Counts the lines a ``JSONLinesReceiver`` delivers (or the events a ``BeatsReceiver`` does) by their `event_id`: how many distinct events
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
package final class EventIDTally: Sendable {
    /// What the tally has seen.
    package struct Snapshot: Sendable, Hashable, CustomStringConvertible {
        /// Every line delivered, invalid ones included.
        package var lines = 0
        /// Distinct `event_id` values.
        package var uniqueEventIDs = 0
        /// Lines whose `event_id` had been seen before.
        package var duplicates = 0
        /// JSON lines without a string `event_id`.
        package var withoutEventID = 0
        /// Lines that were not JSON objects, or too long.
        package var invalid = 0

        package var description: String {
            "\(lines) lines, \(uniqueEventIDs) unique event_id(s), \(duplicates) duplicate(s), \(withoutEventID) without event_id, \(invalid) invalid"
        }
    }

    private struct State: Sendable {
        var snapshot = Snapshot()
        var seen: Set<String> = []
    }

    private let state = LockedValue(State())

    package init() {}

    /// Counts one line. Usable directly as a ``JSONLinesReceiver`` handler.
    @Sendable
    package func record(_ line: JSONLinesReceiver.Line) {
        count(line.parsed)
    }

    /// Counts a group of Beats events and handles them all. Usable directly as a ``BeatsReceiver`` handler.
    @Sendable
    package func record(_ events: [BeatsReceiver.Event]) -> Int {
        for event in events { count(event.parsed) }
        return events.count
    }

    private func count(_ parsed: Result<LogValue, JustLogError>) {
        var eventID: String?
        var valid = false
        if case .success(.object(let object)) = parsed {
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
    package var snapshot: Snapshot { state.withLock { $0.snapshot } }

    /// Whether `eventID` has arrived.
    package func contains(_ eventID: String) -> Bool {
        state.withLock { $0.seen.contains(eventID) }
    }

    /// Every distinct `event_id` seen so far.
    package var eventIDs: Set<String> { state.withLock { $0.seen } }

    /// Polls (every 10 ms) until `count` distinct event ids arrived or `timeout` passed; returns whether they did.
    package func waitUntil(uniqueEventIDs count: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if snapshot.uniqueEventIDs >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return snapshot.uniqueEventIDs >= count
    }
}
