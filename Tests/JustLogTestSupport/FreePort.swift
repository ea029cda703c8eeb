import Foundation

/// Loopback ports for tests: the kernel's choice of a free one, whether something accepts on one, polling.
///
/// A port a test finds free and lets go can be given to another test's server on port 0 before the test binds it
/// again; a test that needs a port nothing listens on for a while (a collector that starts late, is killed and
/// started again, or never comes) holds a ``RefusingPort``.
public enum FreePort {
    /// A TCP socket bound (not listening) to 127.0.0.1 on `port` (0: a port the kernel chose), and that port; with
    /// `reusable`, the socket sets `SO_REUSEADDR` before binding. Throws the `bind` error (`EADDRINUSE`: taken).
    package static func bindLoopback(port: Int = 0, reusable: Bool = false) throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        if reusable {
            var on: Int32 = 1
            guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                let code = errno
                close(fd)
                throw POSIXError(.init(rawValue: code) ?? .EIO)
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// `true` once something accepts TCP connections on 127.0.0.1:`port`.
    public static func isAccepting(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return connectLoopback(fd, port: port)
    }

    /// Connects socket `fd` to 127.0.0.1:`port`; `false` (and `errno`) if that fails.
    static func connectLoopback(_ fd: Int32, port: Int) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return connected == 0
    }

    /// Polls until `condition` holds or `timeout` passes; returns whether it held.
    public static func poll(
        timeout: Duration,
        interval: Duration = .milliseconds(10),
        _ condition: () throws -> Bool
    ) rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            Thread.sleep(
                forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds)
            )
        }
        return try condition()
    }
}

/// A loopback port held for as long as this value lives: bound with `SO_REUSEADDR` but never listening, so
/// connections to it are refused until the test starts its own server there.
///
/// Linux gives such a port to no one else: the kernel never picks it for another bind to port 0 and refuses a
/// plain bind to it. A server that sets `SO_REUSEADDR` itself (every receiver in these tests does, and
/// `justlog receive`) may bind and listen on it while it is held: a collector that starts late, or is killed and
/// started again, comes back on the port its client expects without a moment in which a server of another
/// test running in parallel could take it (a port found free and then released could be taken by one).
public final class RefusingPort: @unchecked Sendable {
    public let port: Int
    private let descriptor: Int32

    public init() throws {
        (descriptor, port) = try FreePort.bindLoopback(reusable: true)
    }

    /// `count` distinct held ports.
    public static func make(count: Int) throws -> [RefusingPort] {
        try (0..<count).map { _ in try RefusingPort() }
    }

    deinit { close(descriptor) }
}

/// A loopback port that accepts connections (the kernel completes them from the backlog) and never reads from
/// them: a collector that stopped reading. Writes to it succeed until its and the sender's buffers are full,
/// then block forever; nothing ever fails.
public final class SilentPort: @unchecked Sendable {
    public let port: Int
    private let descriptor: Int32

    public init() throws {
        (descriptor, port) = try FreePort.bindLoopback()
        // Not closed here on failure: built already, this object's `deinit` runs after the throw and closes it (a
        // close here too would close a number another thread may have been given meanwhile).
        guard listen(descriptor, 16) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "listen failed: errno \(errno)"])
        }
    }

    deinit { close(descriptor) }
}

/// A loopback port whose connects are never answered: a listener with a backlog of one, filled by two connections
/// of its own that it never accepts, so the kernel drops every further SYN and a client's connect hangs until its
/// own timeout — a blackholed collector (a firewall that drops, a host that is gone) without leaving 127.0.0.1.
public final class UnansweredPort: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    private var fillers: [Int32] = []

    public init() throws {
        (listener, port) = try FreePort.bindLoopback()
        // Not closed here on failure: built already, this object's `deinit` runs after the throw and closes the
        // listener and the fillers made so far (closing them here too would close numbers reused meanwhile).
        guard listen(listener, 1) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "listen failed: errno \(errno)"])
        }
        // Completed by the kernel into the accept queue (a backlog of one holds two): a connect that is not answered
        // at once would be a kernel that does not work this way, so it is given 5 s, not the SYN retries' two minutes.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        for _ in 0..<2 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard filler >= 0,
                setsockopt(filler, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0,
                FreePort.connectLoopback(filler, port: port)
            else {
                let code = errno
                if filler >= 0 { close(filler) }
                throw POSIXError(.init(rawValue: code) ?? .EIO)
            }
            fillers.append(filler)
        }
    }

    deinit {
        for filler in fillers { close(filler) }
        close(listener)
    }
}
