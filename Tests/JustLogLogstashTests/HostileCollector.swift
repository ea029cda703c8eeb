import Foundation
import NIOCore
import NIOPosix

/// A collector on 127.0.0.1 that misbehaves on demand, for faults a real one can't be made to show: it never
/// reads, optionally with a large receive buffer, and optionally half-closes its side (FIN) after a delay
/// without having read. ``killConnections()`` resets every connection (what the kernel does to unread data
/// when a collector dies). Always call ``stop()``.
final class HostileCollector: @unchecked Sendable {
    struct Behavior: Sendable {
        /// Receive buffer to ask for (SO_RCVBUFFORCE as root, else SO_RCVBUF, which the kernel caps).
        var receiveBuffer: Int?
        /// Half-close (send FIN, keep not reading) this long after accepting.
        var halfCloseAfter: Duration?
    }

    let port: Int
    private let server: any Channel

    init(_ behavior: Behavior) async throws {
        let box = Children()
        var bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.autoRead, value: false)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                box.add(channel)
                if let delay = behavior.halfCloseAfter {
                    channel.eventLoop.scheduleTask(
                        in: .nanoseconds(
                            Int64(delay.components.seconds) * 1_000_000_000 + delay.components.attoseconds
                                / 1_000_000_000
                        )
                    ) {
                        channel.close(mode: .output, promise: nil)
                    }
                }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
        if let size = behavior.receiveBuffer {
            // Set on the listening socket so accepted connections start with it (and the window scale fits it).
            let option =
                geteuid() == 0
                ? ChannelOptions.Types.SocketOption(
                    level: SocketOptionLevel(SOL_SOCKET),
                    name: 33 /* SO_RCVBUFFORCE */
                )
                : ChannelOptions.socketOption(.so_rcvbuf)
            bootstrap = bootstrap.serverChannelOption(option, value: SocketOptionValue(size))
        }
        server = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        port = server.localAddress!.port!
        self.box = box
    }

    private let box: Children

    /// Connections accepted so far.
    var connections: Int { box.accepted }

    /// Resets every connection: unread data is thrown away, as when the collector is killed.
    func killConnections() async {
        for child in box.take() {
            if let provider = child as? any SocketOptionProvider {
                _ = try? await provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
            }
            try? await child.close()
        }
    }

    func stop() async {
        await killConnections()
        try? await server.close()
    }

    private final class Children: @unchecked Sendable {
        private let lock = NSLock()
        private var channels: [any Channel] = []
        private var count = 0
        var accepted: Int { lock.withLock { count } }
        func add(_ channel: any Channel) {
            lock.withLock {
                channels.append(channel)
                count += 1
            }
        }
        func take() -> [any Channel] {
            lock.withLock {
                defer { channels.removeAll() }
                return channels
            }
        }
    }
}
