/// What a delivery state machine (``ConnectionStateMachine`` for json_lines, ``BeatsStateMachine`` for
/// Lumberjack v2) asks the transport to do. Both return the same actions, so that one transport carries out
/// either.
package enum DeliveryAction<Instant: InstantProtocol>: Sendable, Equatable {
    /// Open a connection (TCP, then TLS if configured); answer `connected()` or `connectFailed(_:tryingAnotherHost:hostsTried:)`.
    case connect
    /// Read a batch from the spool; answer `batchRead(_:)`.
    case readBatch(from: SpoolPosition, maxBytes: Int, maxRecords: Int)
    /// Write this batch (json_lines: its bytes as they are; Beats: as one window); answer `writeCompleted()`
    /// or `connectionClosed(error:)`.
    case write(SpoolBatch)
    /// Let the spool forget everything before this position.
    case acknowledge(upTo: SpoolPosition)
    /// Let the spool forget the records of this extent — batches read one after another — and everything before
    /// it: like ``acknowledge(upTo:)`` its end, without walking the records to count them.
    case acknowledgeExtent(SpoolExtent)
    /// Let the spool forget the `count` records starting at `from` (a partial Beats ACK); answer
    /// `recordsAcknowledged(upTo:)` with the position after them.
    case acknowledgeRecords(from: SpoolPosition, count: Int)
    /// Call `timerFired()` at (or after) this instant; replaces any earlier timer.
    case scheduleTimer(at: Instant)
    /// Close the connection: gracefully (half-close and wait for the peer) or at once. Answer
    /// `connectionClosed(error:)` once it is closed — except after a close at once, which the machine has
    /// already taken into account.
    case close(graceful: Bool)
    /// Complete flush `id` with `nil` (everything requested was written, or with Beats acknowledged) or the
    /// reason it wasn't.
    case completeFlush(id: Int, error: LogstashError?)
    /// Print this activity line (if activity is shown).
    case reportActivity(String)
    /// Records are flowing again after a connection: report drops now, if any.
    case deliveryResumed
    /// The shutdown is done; nothing else will happen.
    case shutdownComplete
}

/// What a delivery state machine has sent and resent.
package struct DeliveryCounters: Sendable, Hashable {
    package var sentRecords: UInt64 = 0
    package var sentBytes: UInt64 = 0
    package var resentRecords: UInt64 = 0
    package var connects: UInt64 = 0
    package var connectionErrors: UInt64 = 0
    /// Records the collector acknowledged (Beats only: json_lines has no acknowledgements).
    package var acknowledgedRecords: UInt64 = 0

    package init() {}
}

/// Reconnect delays: exponential from ``minimum`` doubling up to ``maximum``, each shortened by a random
/// fraction of at most ``jitter`` so that many clients don't reconnect in step.
package struct ReconnectBackoff: Sendable, Hashable {
    /// First reconnect delay. Default 0.5 s.
    package var minimum: Duration = .milliseconds(500)
    /// Longest reconnect delay. Default 30 s.
    package var maximum: Duration = .seconds(30)
    /// Largest fraction taken off a delay at random, 0…1. Default 0.2.
    package var jitter: Double = 0.2

    /// The shortest delay, whatever the settings: a minimum of zero or less, or a jitter of 1, retried a collector
    /// that refuses at once in a busy loop (and a very negative minimum overflowed its doubling).
    package static let floor = Duration.milliseconds(10)

    /// The longest delay, whatever the settings: doubling a delay near `Duration`'s range trapped (review,
    /// helper-51). A year is "never" for a reconnect (and what the event loop's timer takes at most).
    package static let ceiling = Duration.seconds(365 * 86_400)

    package init() {}

    /// The delay after `failures` consecutive failures; `random` is a number in `0..<1`. From ``floor`` to
    /// ``ceiling``.
    package func delay(failures: Int, random: Double) -> Duration {
        let maximum = min(max(maximum, Self.floor), Self.ceiling)
        var delay = min(max(minimum, Self.floor), maximum)
        for _ in 0..<min(failures, 62) where delay < maximum {
            delay = delay * 2  // below a year before: no overflow
        }
        delay = min(delay, maximum)
        let jitter = min(max(jitter, 0), 1) * min(max(random, 0), 1)
        // Clamped again: `Duration * Double` rounds through a `Double`, a few attoseconds either way.
        return min(max(delay * (1 - jitter), Self.floor), maximum)
    }
}

/// Flushes waiting for the records before their position to be delivered.
package struct PendingFlushes: Sendable {
    private var waiting: [(id: Int, upTo: SpoolPosition)] = []

    package init() {}

    package var isEmpty: Bool { waiting.isEmpty }

    package mutating func add(id: Int, upTo: SpoolPosition) {
        waiting.append((id, upTo))
    }

    /// Removes and returns the flushes whose records are all before `position`.
    package mutating func takeDone(upTo position: SpoolPosition) -> [Int] {
        var done: [Int] = []
        waiting.removeAll { flush in
            guard flush.upTo <= position else { return false }
            done.append(flush.id)
            return true
        }
        return done
    }

    /// Forgets flush `id` (its caller stopped waiting); whether it was waiting.
    @discardableResult
    package mutating func remove(id: Int) -> Bool {
        guard let index = waiting.firstIndex(where: { $0.id == id }) else { return false }
        waiting.remove(at: index)
        return true
    }

    /// How many flushes wait.
    package var count: Int { waiting.count }

    /// Removes and returns every flush.
    package mutating func takeAll() -> [Int] {
        defer { waiting.removeAll() }
        return waiting.map(\.id)
    }
}
