import Foundation

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
///
/// For waiting on another thread or process — never sleep a fixed time and then assert. It suspends
/// rather than blocks: the test runner's thread pool is as small as the machine (two threads here), and a
/// test that blocks one starves the others.
public func eventually(timeout: Duration = .seconds(60), _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try condition()
}

/// ``eventually(timeout:_:)`` for a condition that must await (an actor's or an event loop's state).
public func eventually(timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// Sleeps 2 ms: the polling step of code that must block (a destination's own thread in tests).
public func usleepShort() {
    usleep(2_000)
}
