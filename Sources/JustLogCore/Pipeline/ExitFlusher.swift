import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Flushes every live pipeline when the process exits normally — returning from `main` or calling `exit` —
/// so that the console and file destinations lose nothing (SPEC §4).
///
/// This is the one process-wide registry of the library: process exit is process-wide. It holds pipelines
/// weakly; a pipeline registers its queue when created, and the queue leaves when shut down.
final class ExitFlusher: @unchecked Sendable {
    static let shared = ExitFlusher()

    private struct Entry {
        weak var queue: PipelineQueue?
    }

    private let lock = ConditionLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var installed = false

    func register(_ queue: PipelineQueue) {
        let install = lock.withLock { () -> Bool in
            entries[ObjectIdentifier(queue)] = Entry(queue: queue)
            defer { installed = true }
            return !installed
        }
        if install {
            atexit { ExitFlusher.shared.flushAll() }
        }
    }

    func unregister(_ queue: PipelineQueue) {
        _ = lock.withLock { entries.removeValue(forKey: ObjectIdentifier(queue)) }
    }

    /// Whether the exit handler will flush `queue`.
    func isRegistered(_ queue: PipelineQueue) -> Bool {
        lock.withLock { entries[ObjectIdentifier(queue)]?.queue != nil }
    }

    /// Asks every live pipeline to flush at once, then waits for each while its destinations make progress:
    /// ``LogPipeline/Configuration/exitFlushTimeout`` is how long a pipeline may go *without progress*, not a
    /// bound on the whole flush, so a loaded machine or a slow disk loses nothing at exit. A pipeline whose
    /// destinations stalled is given up on, and a line on its diagnostics sink says how many events it left: in its
    /// journal for the next run, if it has one, or lost.
    func flushAll() {
        let queues = lock.withLock { entries.values.compactMap(\.queue) }
        let flushes = queues.map { queue in
            queue.prepareForExit()
            return (queue, queue.requestFlush())
        }
        for (queue, flush) in flushes {
            let patience = queue.configuration.exitFlushTimeout
            let fate =
                queue.isJournaled
                ? "are in the log journal and will be written when the program next starts on the same folder"
                : "were not written to the console and file destinations"
            // `exit` called by a destination (or an action run in log order): this pipeline's own thread can't write
            // while it waits here.
            if queue.callerIsWorker {
                queue.diagnostics.report(
                    "at exit, called on a log pipeline's own thread (by a destination), which can't write while it exits; the events of the batch it was writing and \(queue.waitingEvents) more queued \(fate)"
                )
                continue
            }
            var error = flush.wait(timeout: patience, restartingOnProgress: true) as? JustLogError
            // Never set up (`Logger.shared` before `setup()`): what it holds has nowhere to go — said, as a shutdown
            // says it.
            if error?.code == .invalidConfiguration {
                guard !queue.isHolding else {
                    let held = queue.waitingEvents
                    if held > 0 {
                        queue.diagnostics.report(
                            "at exit, \(held) event(s) logged before the logger was set up were never delivered (it was never set up: call setup() first)"
                        )
                    }
                    continue
                }
                // Set up since it answered (`setup()` on another thread as the program exits): its destinations now
                // take what it held — wait for them too.
                error = queue.requestFlush().wait(timeout: patience, restartingOnProgress: true) as? JustLogError
            }
            // Stopped on its own thread (a destination's shutdown), its worker still writing what was queued: wait for
            // it as for a flush. (Not a destination's own flush error of that code: its worker is there and idle.)
            if error?.code == .shutdown, queue.isStopped {
                error = queue.waitForWorkerToFinish(patience: patience) ? nil : JustLogError(.timeout, "")
            }
            guard let error, error.code == .timeout else { continue }
            queue.diagnostics.report(
                "at exit, the log destinations made no progress for \(patience) s\(flush.notRunningNote); \(queue.waitingEvents) queued event(s) \(fate)"
            )
        }
        // `forceSend` completions the flushes just finished (see `LogPipeline.flush(completion:)`): a second to run —
        // not longer: one may wait for something that exits no more. One that is itself exiting is not waited for.
        _ = FlushCompletions.shared.waitForOthers(seconds: 1)
    }
}
