import Dispatch
import Foundation

/// Runs `operation` in a task that SIGINT and SIGTERM cancel (the tools stop cleanly on cancellation);
/// a second signal exits at once with 130. The signals' default actions are restored afterwards.
func runCancellingOnSignals<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let task = Task { try await operation() }
    let signals = [SIGINT, SIGTERM]
    let received = SignalCount()
    var sources: [any DispatchSourceSignal] = []
    for number in signals {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            if received.increment() > 1 { exit(130) }
            task.cancel()
        }
        source.resume()
        sources.append(source)
    }
    defer {
        for source in sources { source.cancel() }
        for number in signals { signal(number, SIG_DFL) }
    }
    return try await task.value
}

private final class SignalCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() -> Int {
        lock.withLock {
            count += 1
            return count
        }
    }
}
