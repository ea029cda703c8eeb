import CJustLogAtomics

/// The lowest level any destination takes, read by every log call without a lock (one relaxed atomic load), so
/// that a call below it costs a few instructions. Set under the pipeline's lock whenever its intake changes; a
/// call racing a reconfiguration sees the old or the new level, as it would under the lock.
final class LevelGate: @unchecked Sendable {
    private let storage: UnsafeMutablePointer<UInt8>

    init(_ level: LogLevel) {
        storage = CacheLine.allocate(repeating: UInt8(level.rawValue))
    }

    deinit {
        CacheLine.deallocate(storage)
    }

    /// Whether `level` is at or above the gate.
    func admits(_ level: LogLevel) -> Bool {
        UInt8(truncatingIfNeeded: level.rawValue) >= cjustlog_atomic_load_u8(storage)
    }

    func set(_ level: LogLevel) {
        cjustlog_atomic_store_u8(storage, UInt8(level.rawValue))
    }
}
