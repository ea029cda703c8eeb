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

    func flushAll() {
        let queues = lock.withLock { entries.values.compactMap(\.queue) }
        for queue in queues {
            _ = queue.flush(timeout: queue.configuration.exitFlushTimeout)
        }
    }
}
