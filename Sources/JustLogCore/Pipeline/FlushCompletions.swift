import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `forceSend` completions (``LogPipeline/flush(completion:)``) away from the thread that finished the flush,
/// and lets the exit handler wait for those still running.
///
/// A flush finishes on the pipeline's own thread or on a destination's (the Logstash client's event loop). A
/// completion run there can't wait for that thread — `forceSend { _ in exit(0) }` made the exit flush wait its whole
/// patience for the very thread it ran on — so each runs on a Dispatch queue of its own: concurrently, so that a
/// completion waiting for another `forceSend` (or blocking for long) holds no other completion back (one serial
/// queue did: a completion that waited for a nested `forceSend`'s answer waited forever — review, helper-67).
///
/// Process-wide, as ``ExitFlusher`` is: process exit is.
package final class FlushCompletions: @unchecked Sendable {
    package static let shared = FlushCompletions()

    private let lock = ConditionLock()
    /// Completions handed over and not finished.
    private var pending = 0
    /// The threads running a completion now.
    private var running: [pthread_t] = []

    /// Runs `completion(error)` on a Dispatch queue of its own: on Dispatch's threads, a new one when all are busy
    /// (a queue made with a label targets the overcommitting pool). Dispatch's global queue did not add one: its
    /// few threads (one a core on Linux) blocked in completions held every other global-queue task back until
    /// Dispatch's once-a-second monitor added threads (review, helper-70).
    package func run(_ completion: @escaping @Sendable ((any Error)?) -> Void, with error: (any Error)?) {
        lock.withLock { pending += 1 }
        DispatchQueue(label: "JustLog forceSend completion").async {
            let thread = pthread_self()
            self.lock.withLock { self.running.append(thread) }
            completion(error)
            self.lock.withLock {
                if let index = self.running.firstIndex(where: { pthread_equal($0, thread) != 0 }) {
                    self.running.remove(at: index)
                }
                self.pending -= 1
            }
            self.lock.broadcast()
        }
    }

    /// Waits at most `seconds` for the completions handed over to finish, not counting one that runs on the caller's
    /// own thread: a completion that calls `exit` runs the exit handler within itself, and waiting for it would only
    /// spend the whole time (review, helper-67). `true` once none is left.
    package func waitForOthers(seconds: Double) -> Bool {
        let caller = pthread_self()
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        lock.lock()
        defer { lock.unlock() }
        while true {
            let own = running.filter { pthread_equal($0, caller) != 0 }.count
            if pending - own <= 0 { return true }
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { return false }
            _ = lock.wait(seconds: Double(deadline - now) / 1e9)
        }
    }
}

/// Whether a flush's answer comes from within the call that asked for it (``LogPipeline/flush(completion:)``): set
/// once that call returns. Read only on the asking thread, after comparing threads, so never read while written.
final class FlushCall: @unchecked Sendable {
    let thread = pthread_self()
    var hasReturned = false

    /// Whether an answer given now, on this thread, is given from within the call.
    var answersWithinTheCall: Bool {
        pthread_equal(pthread_self(), thread) != 0 && !hasReturned
    }
}
