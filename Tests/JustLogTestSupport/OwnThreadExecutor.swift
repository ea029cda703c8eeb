import Foundation

/// A task executor with one thread of its own, for a test whose tasks must run on time while other tests keep
/// the shared concurrency pool busy (two threads here; for minutes under ThreadSanitizer):
///
/// ```swift
/// await withTaskExecutorPreference(OwnThreadExecutor.shared) { … }
/// ```
///
/// Its thread lives as long as the test process.
public final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
    public static let shared = OwnThreadExecutor()

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init() {
        let thread = Thread { [self] in run() }
        thread.name = "OwnThreadExecutor"
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let ready = jobs
            jobs.removeAll()
            condition.unlock()
            for job in ready { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}
