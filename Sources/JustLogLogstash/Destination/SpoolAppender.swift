import JustLogCore

/// Puts the Logstash destination's records into its spool, in order — and keeps the destination working
/// while the spool can't take them (its folder can't be created or locked, a full disk, a file-size limit).
///
/// While the spool is unavailable, records are held in memory, in order, up to ``memoryLimit`` bytes; past
/// it they are dropped and counted. Appending then costs no system call: the spool is tried again only by
/// ``retry()`` (the destination calls it on a timer, and on flush and shutdown). Once it works, the held
/// records go into the spool first, in order, then the new ones.
///
/// Thread-safe; its lock is taken before the spool's, never the other way round.
final class SpoolAppender: @unchecked Sendable {
    /// What one call did; the destination turns it into metrics, diagnostics and report events.
    struct Outcome {
        /// Records that went into the spool (held ones included).
        var spooled = 0
        /// The spool stopped taking records during this call, for this reason.
        var becameUnavailable: LogstashError?
        /// Records dropped in this call because the memory buffer was full.
        var droppedForMemory = 0
        /// Records the spool refused on their own (too large, empty, spool closed): dropped.
        var rejected: [LogstashError] = []
        /// The spool opened during this call (its recovery may have found losses to report).
        var opened = false
        /// The spool works again after failing: what happened meanwhile.
        var recovered: Recovery?
    }

    /// What happened while the spool was unavailable.
    struct Recovery {
        /// Why it was unavailable (the first reason).
        var error: LogstashError
        /// Records held in memory and now spooled.
        var heldAndSpooled: Int
        /// Records dropped because the memory buffer was full.
        var dropped: UInt64
    }

    /// Where the destination stands while the spool is unavailable.
    struct Unavailability {
        /// The latest reason.
        var error: LogstashError
        /// Records waiting in memory.
        var held: Int
        /// Records dropped because the memory buffer was full, since the spool became unavailable.
        var dropped: UInt64
    }

    let spool: LogstashSpool
    /// The most bytes held in memory (each record counts its size plus 64 bytes of overhead).
    let memoryLimit: Int

    private let lock = SpoolLock()
    private var state: State = .spooling
    private var held: [[UInt8]] = []
    private var heldStart = 0
    private var heldBytes = 0
    private var droppedForMemory: UInt64 = 0
    private var heldAndSpooled = 0

    private enum State {
        case spooling
        /// Unavailable since `first`; `latest` is the last reason seen.
        case holding(first: LogstashError, latest: LogstashError)
    }

    private static let overheadPerRecord = 64

    init(spool: LogstashSpool, memoryLimit: Int) {
        self.spool = spool
        self.memoryLimit = max(0, memoryLimit)
    }

    /// Opens the spool (waiting up to `lockWait` for a lock holder letting go); if it can't be opened, the
    /// appender starts out holding records.
    func open(lockWait: Duration) -> Outcome {
        lock.withLock {
            var outcome = Outcome()
            do {
                try spool.open(waitingForLock: lockWait)
                outcome.opened = true
            } catch {
                let reason = Self.reason(error)
                state = .holding(first: reason, latest: reason)
                outcome.becameUnavailable = reason
            }
            return outcome
        }
    }

    /// Appends `record` to the spool, or holds it while the spool is unavailable.
    func append(_ record: [UInt8]) -> Outcome {
        record.withUnsafeBytes { append($0) }
    }

    /// Appends `record` to the spool, or holds a copy of it while the spool is unavailable.
    func append(_ record: UnsafeRawBufferPointer) -> Outcome {
        append(lines: record, lengths: [record.count])
    }

    /// Appends records laid end to end in `lines`, `lengths` bytes each, in order — under one lock, and the spool's
    /// once for the lot — or holds copies of them while the spool is unavailable, in order; a record the spool
    /// refuses on its own (too large, empty, spool closed) is counted in ``Outcome/rejected``.
    func append(lines: UnsafeRawBufferPointer, lengths: [Int]) -> Outcome {
        lock.withLock {
            var outcome = Outcome()
            var index = lengths.startIndex
            var offset = 0
            while index < lengths.endIndex {
                if case .spooling = state {
                    let rest = UnsafeRawBufferPointer(rebasing: lines[offset...])
                    let (appended, failure) = spool.appendRecords(rest, lengths: lengths[index...])
                    outcome.spooled += appended
                    for _ in 0..<appended {
                        offset += lengths[index]
                        index += 1
                    }
                    guard let failure else { break }
                    // The record at `index` was not appended: the spool stopped working, or refused it alone.
                    let record = UnsafeRawBufferPointer(rebasing: lines[offset..<offset + lengths[index]])
                    if let error = classify(failure, &outcome) {
                        state = .holding(first: error, latest: error)
                        outcome.becameUnavailable = error
                        hold(Array(record), &outcome)
                    }
                } else {
                    hold(Array(lines[offset..<offset + lengths[index]]), &outcome)
                }
                offset += lengths[index]
                index += 1
            }
            return outcome
        }
    }

    /// Tries the spool again now if it is unavailable: opens it if needed, then appends the held records in
    /// order. Does nothing (no system call) while the spool works.
    func retry() -> Outcome {
        lock.withLock {
            var outcome = Outcome()
            guard case .holding(let first, _) = state else { return outcome }
            if !spool.isOpen {
                do {
                    try spool.open(waitingForLock: .zero)
                    outcome.opened = true
                } catch {
                    state = .holding(first: first, latest: Self.reason(error))
                    return outcome
                }
            }
            while heldStart < held.count {
                if let error = held[heldStart].withUnsafeBytes({ put($0, &outcome) }) {
                    state = .holding(first: first, latest: error)
                    compactHeld()
                    return outcome
                }
                heldBytes -= held[heldStart].count + Self.overheadPerRecord
                held[heldStart] = []
                heldStart += 1
                heldAndSpooled += 1
            }
            held.removeAll()
            heldStart = 0
            heldBytes = 0
            outcome.recovered = Recovery(error: first, heldAndSpooled: heldAndSpooled, dropped: droppedForMemory)
            droppedForMemory = 0
            heldAndSpooled = 0
            state = .spooling
            return outcome
        }
    }

    /// Where things stand while the spool is unavailable; `nil` while it works.
    var unavailability: Unavailability? {
        lock.withLock {
            guard case .holding(_, let latest) = state else { return nil }
            return Unavailability(error: latest, held: held.count - heldStart, dropped: droppedForMemory)
        }
    }

    /// Whether the spool is unavailable: records given since are held in memory, or were dropped and counted there
    /// — either way a crash would lose them, and the count (see ``MemoryHolding``).
    var isHoldingInMemory: Bool {
        lock.withLock {
            guard case .holding = state else { return false }
            return true
        }
    }

    // MARK: - Helpers (lock held)

    /// Appends one record; returns the error if the spool is unavailable (the record is then not spooled).
    private func put(_ record: UnsafeRawBufferPointer, _ outcome: inout Outcome) -> LogstashError? {
        do {
            try spool.append(record)
            outcome.spooled += 1
            return nil
        } catch {
            return classify(error, &outcome)
        }
    }

    /// What the spool's refusal of one record means: it stopped working (the error, returned), or it refused that
    /// record alone (counted in `outcome.rejected`; `nil`).
    private func classify(_ error: any Error, _ outcome: inout Outcome) -> LogstashError? {
        if let error = error as? LogstashError, error.code == .spoolUnavailable { return error }
        outcome.rejected.append(Self.reason(error))
        return nil
    }

    private func hold(_ record: [UInt8], _ outcome: inout Outcome) {
        let cost = record.count + Self.overheadPerRecord
        guard heldBytes + cost <= memoryLimit else {
            droppedForMemory += 1
            outcome.droppedForMemory += 1
            return
        }
        held.append(record)
        heldBytes += cost
    }

    private func compactHeld() {
        guard heldStart > 0 else { return }
        held.removeFirst(heldStart)
        heldStart = 0
    }

    private static func reason(_ error: any Error) -> LogstashError {
        error as? LogstashError
            ?? LogstashError(code: .spoolUnavailable, message: "the spool can't be used", cause: error)
    }
}
