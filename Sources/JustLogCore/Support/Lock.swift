#if os(Linux)
import CJustLogAtomics
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Android)
import Android
#endif

/// A mutex with a condition variable, for the few places that own a resource (a queue, a file).
///
/// On Linux it is a futex lock (see `CJustLogAtomics.h`): every log call takes the pipeline queue's, and an
/// uncontended lock and unlock cost an atomic instruction each instead of glibc's ~80 instructions a pair. Elsewhere
/// it is a pthread mutex and condition (`Synchronization.Mutex` needs macOS 15 / iOS 18 and has no condition).
package final class ConditionLock: @unchecked Sendable {
    #if os(Linux)
    /// The lock's word, then the condition's counter.
    private let words = CacheLine.allocate(repeating: UInt32(0), count: 2)

    package init() {}

    deinit {
        CacheLine.deallocate(words)
    }

    @inline(__always)
    package func lock() { cjustlog_futex_lock(words) }

    @inline(__always)
    package func unlock() { cjustlog_futex_unlock(words) }

    /// Wakes every waiter. Call with the lock held, or just after releasing it having changed under it what the
    /// waiters wait for.
    package func broadcast() { cjustlog_futex_broadcast(words + 1) }

    /// Waits until woken (or spuriously: loop on the predicate). Call with the lock held.
    package func wait() { _ = cjustlog_futex_wait(words + 1, words, -1) }

    /// Waits until woken (or spuriously) or `seconds` passed; returns `false` on timeout. Call with the lock held.
    package func wait(seconds: Double) -> Bool {
        // At most a year at a time (callers loop): an infinite or huge wait must not trap converting to Int64.
        let bounded = seconds.isNaN ? 0 : min(max(0, seconds), 365 * 86_400)
        return cjustlog_futex_wait(words + 1, words, Int64(bounded * 1e9)) == 0
    }
    #else
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        #if canImport(Darwin)
        pthread_cond_init(condition, nil)
        #else
        // Timed waits measure the monotonic clock: a wall clock set back does not stretch them.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        #endif
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    @inline(__always)
    package func lock() { pthread_mutex_lock(mutex) }

    @inline(__always)
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Wakes every waiter. Call with the lock held, or just after releasing it having changed under it what the
    /// waiters wait for.
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits until woken (or spuriously: loop on the predicate). Call with the lock held.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits until woken (or spuriously) or `seconds` passed; returns `false` on timeout. Call with the lock held.
    package func wait(seconds: Double) -> Bool {
        var now = timespec()
        #if canImport(Darwin)
        clock_gettime(CLOCK_REALTIME, &now)
        #else
        clock_gettime(CLOCK_MONOTONIC, &now)  // the condition's clock (see `init`)
        #endif
        // At most a year at a time (callers loop): an infinite or huge wait must not trap converting to Int.
        let bounded = seconds.isNaN ? 0 : min(max(0, seconds), 365 * 86_400)
        let total = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + bounded
        var deadline = timespec()
        deadline.tv_sec = Int(total)
        deadline.tv_nsec = Int((total - Double(Int(total))) * 1e9)
        return pthread_cond_timedwait(condition, mutex, &deadline) == 0
    }
    #endif

    @inline(__always)
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A value guarded by a lock: settings that change at run time, counters, test captures.
///
/// ```swift
/// let count = LockedValue(0)
/// count.withLock { $0 += 1 }
/// ```
public final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = ConditionLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }

    /// A copy of the current value.
    public var current: Value { lock.withLock { value } }
}
