import Foundation
import JustLogTestSupport
import Testing

/// Tests that run side by side pick loopback ports: a port one test waits on must never become another test's
/// server. (A port found free and let go was once given to another test's receiver while a client waited for
/// its collector to start late: that receiver took the client's 300 records and both tests failed.)
@Suite struct HeldPortTests {
    @Test func aHeldPortRefusesConnectionsAndIsGivenToNoOtherServer() async throws {
        let held = try RefusingPort()
        defer { withExtendedLifetime(held) {} }
        #expect(!FreePort.isAccepting(held.port))
        // Servers on port 0 (as every receiver in these tests starts) never get it.
        var receivers: [LineReceiver] = []
        for _ in 0..<200 {
            guard let receiver = try? await LineReceiver() else { break }
            receivers.append(receiver)
        }
        #expect(receivers.count == 200)
        #expect(!receivers.contains { $0.port == held.port })
        for receiver in receivers { await receiver.stop() }
        // A plain bind to it is refused: the port is in use.
        #expect(throws: POSIXError(.EADDRINUSE)) {
            let (descriptor, _) = try FreePort.bindLoopback(port: held.port)
            close(descriptor)
        }
    }

    /// What the tests rely on (and what fails without `SO_REUSEADDR` on the held socket).
    @Test func theTestsOwnServerBindsAHeldPortWhileItIsHeld() async throws {
        let held = try RefusingPort()
        let receiver = try await LineReceiver.bind(port: held.port)
        #expect(FreePort.isAccepting(held.port))
        withExtendedLifetime(held) {}
        await receiver.stop()
    }
}
