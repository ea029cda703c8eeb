import CJustLogAtomics

/// What a plain log call needs to encode its record for the journal's fast lane — whether the lane is open, the
/// lowest level, the capture limits, the `event_id` prefix — read without the pipeline's lock (a sequence lock:
/// about 30 instructions, where the lock and a copy of the whole ``LogPipeline/Intake`` cost about 300).
///
/// Published under the pipeline's lock whenever its intake changes, with a new version. The call encodes with
/// what it read, then hands the record over under the lock with that version: a reconfiguration in between
/// changed the version, and the call takes the full path instead (see ``PipelineQueue/submitJournaled``).
final class FastLaneGate: @unchecked Sendable {
    /// A consistent copy of the gate's values.
    struct Lane {
        /// The version to hand the record over with.
        var version: UInt64
        var minimumLevel: LogLevel
        var captureLimits: CaptureLimits
        var eventIDPrefix: UInt64
    }

    private let storage: UnsafeMutablePointer<cjustlog_seqlock>

    init() {
        storage = CacheLine.allocate(repeating: cjustlog_seqlock())
    }

    deinit {
        CacheLine.deallocate(storage)
    }

    /// The open lane, or `nil` when it is closed (some destination is written on the caller's thread, or there is
    /// no journal) or being changed right now.
    @inline(__always)
    func current() -> Lane? {
        let snapshot = cjustlog_seqlock_read(storage)
        guard snapshot.version != 0, snapshot.values.0 & 1 == 1, let level = Self.level(snapshot.values.0 >> 8)
        else { return nil }
        return Lane(
            version: snapshot.version,
            minimumLevel: level,
            captureLimits: CaptureLimits(
                maximumDepth: Int(truncatingIfNeeded: snapshot.values.2),
                maximumKeys: Int(truncatingIfNeeded: snapshot.values.3),
                maximumElements: Int(truncatingIfNeeded: snapshot.values.4),
                maximumBytes: Int(truncatingIfNeeded: snapshot.values.5),
                maximumMessageBytes: Int(truncatingIfNeeded: snapshot.values.6)
            ),
            eventIDPrefix: snapshot.values.1
        )
    }

    /// The level whose raw value is `raw`: `LogLevel(rawValue:)` is a call the optimizer leaves out of line (~10
    /// instructions a log call); this switch folds into a range check.
    @inline(__always)
    private static func level(_ raw: UInt64) -> LogLevel? {
        switch raw {
        case 0: .verbose
        case 1: .debug
        case 2: .info
        case 3: .warning
        case 4: .error
        default: nil
        }
    }

    /// Publishes `intake` (one caller at a time: the pipeline's lock held); returns its version.
    func publish(_ intake: LogPipeline.Intake) -> UInt64 {
        let open: UInt64 = intake.journalOnly && intake.journal != nil ? 1 : 0
        let limits = intake.captureLimits
        var values: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (
            open | UInt64(intake.minimumLevel.rawValue) << 8,
            intake.eventIDPrefix,
            // Bit patterns: the limits are public `var`s, and one set below zero after `init` must not trap here.
            UInt64(bitPattern: Int64(limits.maximumDepth)),
            UInt64(bitPattern: Int64(limits.maximumKeys)),
            UInt64(bitPattern: Int64(limits.maximumElements)),
            UInt64(bitPattern: Int64(limits.maximumBytes)),
            UInt64(bitPattern: Int64(limits.maximumMessageBytes))
        )
        return withUnsafePointer(to: &values) { pointer in
            pointer.withMemoryRebound(to: UInt64.self, capacity: 7) { cjustlog_seqlock_write(storage, $0) }
        }
    }
}
