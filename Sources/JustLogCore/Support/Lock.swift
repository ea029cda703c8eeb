#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with a condition variable, for the few places that own a resource (a queue, a file).
///
/// `Synchronization.Mutex` needs macOS 15 / iOS 18; this keeps the deployment targets of the package.
package final class ConditionLock: @unchecked Sendable {
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

    @inline(__always)
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Wakes every waiter. Call with the lock held.
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits until woken. Call with the lock held.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits until woken or `seconds` passed; returns `false` on timeout. Call with the lock held.
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
