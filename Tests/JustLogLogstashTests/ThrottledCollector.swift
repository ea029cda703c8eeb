import Foundation
import JustLogCore

#if canImport(Glibc)
import Glibc
#endif

/// A json_lines collector on 127.0.0.1 that reads slowly — at most `chunkBytes` every `interval` — with a small
/// receive buffer, and may stop reading after `stopAfterBytes` until ``resume()``: a real collector slower than the program
/// that logs (Logstash under load, a slow network), which no real collector does on demand. Blocking sockets on a
/// thread of its own; ``stop()`` closes them and waits for the thread.
final class ThrottledCollector: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let state = LockedValue(State())

    struct State {
        var messages: [String] = []
        var pending: [UInt8] = []
        var bytes = 0
        var stopping = false
        var finished = false
        var connection: Int32 = -1
        var resumed = false
        /// `stop()` ran: the listener is shut down (and closed once the reader is gone); a second call does nothing.
        var stopped = false
    }

    init(chunkBytes: Int = 64 << 10, interval: Duration, stopAfterBytes: Int = .max) throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EIO) }
        var receiveBuffer: Int32 = 64 << 10
        setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard bound == 0, named == 0, listen(socket, 4) == 0 else {
            close(socket)
            throw POSIXError(.EADDRINUSE)
        }
        listener = socket
        port = Int(UInt16(bigEndian: address.sin_port))
        let state = self.state
        let pause = UInt32(
            interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000
        )
        Thread.detachNewThread {
            defer { state.withLock { $0.finished = true } }
            // One connection at a time, as long as the test runs.
            while !state.current.stopping {
                let connection = accept(socket, nil, nil)
                guard connection >= 0 else { return }
                state.withLock { $0.connection = connection }
                var buffer = [UInt8](repeating: 0, count: chunkBytes)
                while true {
                    if state.current.bytes >= stopAfterBytes, !state.current.resumed {
                        usleep(10_000)  // stalled: reads nothing more, keeps the connection
                        if state.current.stopping { break }
                        continue
                    }
                    let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, chunkBytes) }
                    guard count > 0 else { break }
                    state.withLock { state in
                        state.bytes += count
                        state.pending += buffer[0..<count]
                        var start = 0
                        while let newline = state.pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                            state.messages.append(Self.message(in: Array(state.pending[start..<newline])))
                            start = newline + 1
                        }
                        state.pending.removeFirst(start)
                    }
                    usleep(pause)
                }
                // Forgotten and closed under the lock: `stop()` shuts down the connection under it, and a number
                // closed is reused at once by anything in the process (it once shut down another test's listening
                // socket, which then refused every connect).
                state.withLock { state in
                    state.connection = -1
                    close(connection)
                }
            }
        }
    }

    /// Reads again after `stopAfterBytes`, on the same connection.
    func resume() {
        state.withLock { $0.resumed = true }
    }

    /// The `message` of every line read so far, in order.
    var messages: [String] { state.current.messages }

    func stop() async {
        // The connection is shut down under the lock, while it is still this collector's (see the reader's close).
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            state.stopping = true
            if state.connection >= 0 { shutdown(state.connection, Int32(SHUT_RDWR)) }
            return !state.stopped
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        for _ in 0..<6_000 where !state.current.finished { try? await Task.sleep(for: .milliseconds(10)) }
        // Closed once the reader is gone: a reader still running would accept on whatever reused the number.
        if state.current.finished { close(listener) }
    }

    private static func message(in line: [UInt8]) -> String {
        guard case .object(let object)? = try? JSONReader.parse(String(decoding: line, as: UTF8.self)) else {
            return ""
        }
        return object["message"]?.text ?? ""
    }
}
