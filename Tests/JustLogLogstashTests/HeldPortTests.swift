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
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(held.port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let code = errno
        #expect(bound != 0 && code == EADDRINUSE)
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
