import Foundation
import JustLogCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A collector for measurements: a TCP listener on 127.0.0.1 that reads whatever arrives and counts the
/// lines and bytes, keeping the first line (a sample of what the sender sends). It parses nothing, so its
/// cost stays out of the sender's figures. Each connection is read on its own thread; ``stop()`` closes them.
package final class LoopbackSink: @unchecked Sendable {
    package struct Counts: Sendable {
        package var lines = 0
        package var bytes = 0
    }

    package let port: Int
    private let listener: Int32
    private let state = LockedValue(State())

    private struct State {
        var counts = Counts()
        var firstLine: [UInt8] = []
        var firstLineComplete = false
        /// Open connections; each is closed by its reader under the lock, so that ``stop()`` (which shuts them down
        /// under it) never touches a number closed and reused by something else in the process.
        var connections: [Int32] = []
        /// The listener is closed by the accept loop as it ends, under the lock.
        var listening = true
        var stopped = false
    }

    package init() throws {
        let (listener, port) = try loopbackSocket(listeningWithBacklog: 16, what: "loopback sink")
        self.port = port
        self.listener = listener
        Thread.detachNewThread { [self] in acceptLoop(listener) }
    }

    package var counts: Counts { state.withLock { $0.counts } }

    /// The first complete line received, without its `\n`.
    package var firstLine: [UInt8] { state.withLock { $0.firstLineComplete ? $0.firstLine : [] } }

    func resetCounts() { state.withLock { $0.counts = Counts() } }

    /// Waits until no line has arrived for `quiet` seconds, at most `timeout` seconds in all: a sender's backlog
    /// has been delivered (or it stalled).
    func waitUntilQuiet(for quiet: Double, timeout: Double) {
        let start = monotonicNanoseconds()
        var seen = (lines: counts.lines, at: start)
        while true {
            usleep(200)
            let now = monotonicNanoseconds()
            let current = counts.lines
            if current != seen.lines {
                seen = (current, now)
            } else if now - seen.at >= UInt64(quiet * 1e9) {
                return
            }
            if now - start >= UInt64(timeout * 1e9) { return }
        }
    }

    /// Waits until the sink has read `lines` lines (`true`), for at most `timeout` seconds — or, once `lost` says
    /// some will never come, until none has come for 2 s.
    func waitForLines(_ lines: Int, timeout: Double, lost: () -> Bool = { false }) -> Bool {
        let deadline = monotonicNanoseconds() + UInt64(timeout * 1e9)
        var seen = (lines: counts.lines, at: monotonicNanoseconds())
        while seen.lines < lines {
            let now = monotonicNanoseconds()
            if now > deadline { return false }
            let current = counts.lines
            if current != seen.lines {
                seen = (current, now)
            } else if now - seen.at > 2_000_000_000, lost() {
                return false
            }
            usleep(200)
        }
        return true
    }

    /// Stops accepting and ends every connection: shut down here, closed by the threads that use them (a number
    /// closed while another thread may still use it could be reused by anything in the process).
    package func stop() {
        state.withLock { state in
            state.stopped = true
            if state.listening { shutdown(listener, Int32(SHUT_RDWR)) }
            for connection in state.connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop(_ listener: Int32) {
        defer {
            state.withLock { state in
                state.listening = false
                close(listener)
            }
        }
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.connections.append(connection)
                return true
            }
            guard accepted else {
                close(connection)
                return
            }
            Thread.detachNewThread { [self] in readLoop(connection) }
        }
    }

    /// How many `\n` `bytes` holds, found with `memchr` (vectorized: the sink shares the machine's two cores with
    /// the logger it measures, so it should take as little of them as it can).
    private static func newlines(in bytes: UnsafeRawBufferPointer) -> Int {
        guard var next = bytes.baseAddress else { return 0 }
        let end = next + bytes.count
        var count = 0
        while next < end, let found = memchr(next, Int32(UInt8(ascii: "\n")), end - next) {
            count += 1
            next = UnsafeRawPointer(found) + 1
        }
        return count
    }

    private func readLoop(_ connection: Int32) {
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        while true {
            let received = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            if received < 0, errno == EINTR { continue }
            guard received > 0 else { break }
            let chunk = buffer[0..<received]
            let lines = buffer.withUnsafeBytes { Self.newlines(in: UnsafeRawBufferPointer(rebasing: $0[0..<received])) }
            state.withLock { state in
                state.counts.lines += lines
                state.counts.bytes += received
                if !state.firstLineComplete {
                    if let end = chunk.firstIndex(of: UInt8(ascii: "\n")) {
                        state.firstLine += chunk[..<end]
                        state.firstLineComplete = true
                    } else {
                        state.firstLine += chunk
                    }
                }
            }
        }
        state.withLock { state in
            state.connections.removeAll { $0 == connection }
            close(connection)
        }
    }
}

/// A TCP socket bound to a port the kernel chose on 127.0.0.1, and that port: listening with `backlog`, or (`nil`)
/// held bound with `SO_REUSEADDR` and never listening, so that connects are refused and the port is no one else's.
/// `what` names the caller in the error.
func loopbackSocket(listeningWithBacklog backlog: Int32?, what: String) throws -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw ToolError("\(what): socket() failed (errno \(errno))") }
    var on: Int32 = 1
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            (backlog != nil
                || setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) == 0)
                && bind(descriptor, pointer, length) == 0 && backlog.map { listen(descriptor, $0) == 0 } ?? true
                && getsockname(descriptor, pointer, &length) == 0
        }
    }
    guard bound else {
        let code = errno
        close(descriptor)
        throw ToolError("\(what): cannot \(backlog == nil ? "bind a port" : "listen") on 127.0.0.1 (errno \(code))")
    }
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}

/// `CLOCK_MONOTONIC` in nanoseconds: one vDSO call, no allocation.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
