#if os(Linux)
import CJustLogAtomics
#elseif canImport(Darwin)
import os
#endif

/// A plain mutex (no Foundation, no extra package) guarding the spool's files and counters.
///
/// Every log call takes it once (its record's place in the journal is reserved under it), so it is the cheapest lock the
/// platform has: on Linux the futex lock of ``ConditionLock`` (a compare-and-swap to take, an exchange to release while uncontended;
/// the standard library's `Mutex` costs as little, but ThreadSanitizer does not see its ordering and reports the
/// accesses it guards as races), `OSAllocatedUnfairLock` on Apple platforms (`Mutex` needs macOS 15 / iOS 18
/// there), ``ConditionLock``'s pthread mutex elsewhere.
///
/// It is not recursive: never call back into the owner while holding it.
package final class SpoolLock: @unchecked Sendable {
    #if os(Linux)
    private let word = CacheLine.allocate(repeating: UInt32(0))

    package init() {}

    deinit {
        CacheLine.deallocate(word)
    }
    #elseif canImport(Darwin)
    private let mutex = OSAllocatedUnfairLock()

    package init() {}
    #else
    private let mutex = ConditionLock()

    package init() {}
    #endif

    /// Takes the lock (for what ``withLock(_:)`` can't return: a noncopyable value).
    @inline(__always)
    package func lock() {
        #if os(Linux)
        cjustlog_futex_lock(word)
        #else
        mutex.lock()
        #endif
    }

    /// Releases the lock taken with ``lock()``.
    @inline(__always)
    package func unlock() {
        #if os(Linux)
        cjustlog_futex_unlock(word)
        #else
        mutex.unlock()
        #endif
    }

    /// Runs `body` with the lock held.
    @inline(__always)
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        #if os(Linux)
        cjustlog_futex_lock(word)
        defer { cjustlog_futex_unlock(word) }
        return try body()
        #elseif canImport(Darwin)
        return try mutex.withLockUnchecked(body)
        #else
        return try mutex.withLock(body)
        #endif
    }
}
