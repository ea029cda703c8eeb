import Foundation

/// Free TCP ports on 127.0.0.1, found by binding port 0 and reading back what the kernel chose.
///
/// There is a small window between closing the probe socket and the collector binding the port; the
/// kernel hands ports out in sequence, so a collision needs another process racing for the same port.
public enum FreePort {
    /// One free port on 127.0.0.1.
    public static func make() throws -> Int {
        try make(count: 1)[0]
    }

    /// `count` distinct free ports (all probe sockets are held open together so they differ).
    public static func make(count: Int) throws -> [Int] {
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        var ports: [Int] = []
        for _ in 0..<count {
            let (fd, port) = try bindLoopback()
            sockets.append(fd)
            ports.append(port)
        }
        return ports
    }

    /// A TCP socket bound (not listening) to 127.0.0.1 on a port the kernel chose, and that port.
    static func bindLoopback() throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
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

/// A loopback port that refuses every connection for as long as this value lives: bound but never
/// listening, so no other test running in parallel can start a server on it (a port found free and then
/// released could be taken by one).
public final class RefusingPort: @unchecked Sendable {
    public let port: Int
    private let descriptor: Int32

    public init() throws {
        (descriptor, port) = try FreePort.bindLoopback()
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
        guard listen(descriptor, 16) == 0 else {
            close(descriptor)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "listen failed: errno \(errno)"])
        }
    }

    deinit { close(descriptor) }
}
