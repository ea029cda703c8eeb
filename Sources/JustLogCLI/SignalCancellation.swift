import Dispatch
import Foundation

/// Runs `operation` in a task that SIGINT and SIGTERM cancel (the tools stop cleanly on cancellation);
/// a second signal exits at once with 130. The handlers stay until the program exits, which it does next: a signal
/// that comes after the operation ended — as the program exits, its exit flush included — is no reason to kill it
/// (restored, the default action did: a shipment wholly delivered died of the Ctrl-C that came as it finished).
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
    // Kept (never cancelled) for the rest of the process, a few statements.
    signalSources.keep(sources)
    return try await task.value
}

/// The signal sources ``runCancellingOnSignals(_:)`` installed: they stay until the program exits.
private let signalSources = InstalledSignalSources()

/// Signal sources kept, never cancelled (only appended to, under the lock).
private final class InstalledSignalSources: @unchecked Sendable {
    private let lock = NSLock()
    private var sources: [any DispatchSourceSignal] = []

    func keep(_ more: [any DispatchSourceSignal]) {
        lock.withLock { sources += more }
    }
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
