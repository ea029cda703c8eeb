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
/// weakly; a pipeline registers itself when created and leaves when shut down or deinitialized.
final class ExitFlusher: @unchecked Sendable {
    static let shared = ExitFlusher()

    private struct Entry {
        weak var pipeline: LogPipeline?
    }

    private let lock = ConditionLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var installed = false

    func register(_ pipeline: LogPipeline) {
        let install = lock.withLock { () -> Bool in
            entries[ObjectIdentifier(pipeline)] = Entry(pipeline: pipeline)
            defer { installed = true }
            return !installed
        }
        if install {
            atexit { ExitFlusher.shared.flushAll() }
        }
    }

    func unregister(_ pipeline: LogPipeline) {
        _ = lock.withLock { entries.removeValue(forKey: ObjectIdentifier(pipeline)) }
    }

    func flushAll() {
        let pipelines = lock.withLock { entries.values.compactMap(\.pipeline) }
        for pipeline in pipelines {
            pipeline.flush(timeout: pipeline.configuration.exitFlushTimeout)
        }
    }
}
