import Foundation

/// Polls `condition` every few milliseconds until it holds or `timeout` seconds pass; returns whether it held.
/// For waiting on another thread or process — never sleep a fixed time and then assert.
public func eventually(timeout: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleepShort()
    }
    return try condition()
}

/// Sleeps 2 ms: the polling step.
public func usleepShort() {
    usleep(2_000)
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes, without blocking a thread; returns
/// whether it held.
public func eventually(timeout: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
