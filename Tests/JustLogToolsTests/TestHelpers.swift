import Foundation
import JustLogCore
import JustLogTestSupport

/// A blocking TCP client to 127.0.0.1, for sending raw bytes the way `nc` would.
final class PlainSocket {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            _ = Foundation.close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            guard written > 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            offset += written
        }
    }

    /// Reads until `count` bytes arrived, the peer closed (`closed` is then true) or `timeout` passed, without
    /// blocking a thread of the test pool (non-blocking reads, polled every 10 ms).
    func receive(count: Int, timeout: Duration = .seconds(10)) async -> (bytes: [UInt8], closed: Bool) {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + timeout
        while bytes.count < count, ContinuousClock.now < deadline {
            let read = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if read > 0 {
                bytes += chunk[0..<read]
            } else if read == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return (bytes, true)
            } else {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        return (bytes, false)
    }

    /// Closes the socket (the receiver sees the end of the stream).
    func close() { _ = Foundation.close(fd) }

    /// Sends `text` on a new connection and closes it.
    static func send(_ text: String, port: Int) throws {
        let socket = try PlainSocket(port: port)
        defer { socket.close() }
        try socket.send(text)
    }
}
