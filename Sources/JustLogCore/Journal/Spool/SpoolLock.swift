#if os(Linux)
import Synchronization
#elseif canImport(Darwin)
import os
#endif

/// A plain mutex (no Foundation, no extra package) guarding the spool's files and counters.
///
/// Every log call takes it once (its record is copied into the journal under it), so it is the cheapest lock the
/// platform has: the standard library's `Mutex` on Linux (a compare-and-swap each way while uncontended, a
/// futex otherwise; no availability limit there), `OSAllocatedUnfairLock` on Apple platforms (`Mutex` needs
/// macOS 15 / iOS 18 there).
///
/// It is not recursive: never call back into the owner while holding it.
package final class SpoolLock: Sendable {
    #if os(Linux)
    private let mutex = Mutex<Void>(())
    #else
    private let mutex = OSAllocatedUnfairLock()
    #endif

    package init() {}

    /// Runs `body` with the lock held.
    @inline(__always)
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        #if os(Linux)
        try mutex.withLock { _ in try body() }
        #else
        try mutex.withLockUnchecked(body)
        #endif
    }
}
