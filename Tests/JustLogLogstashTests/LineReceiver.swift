import Foundation
import NIOCore
import NIOPosix

/// A plain-TCP `json_lines` server on 127.0.0.1, port 0, that collects every line it receives and can
/// be told to drop its connections abruptly (RST). Always call ``stop()`` (use `defer`).
final class LineReceiver: @unchecked Sendable {
    let port: Int
    private let serverChannel: any Channel
    private let state: Collected

    final class Collected: @unchecked Sendable {
        let lock = NSLock()
        var lines: [String] = []
        var children: [any Channel] = []
        var connections = 0
    }

    /// A receiver on a given port (for a collector that "comes back" where the client expects it).
    static func bind(port: Int) async throws -> LineReceiver {
        try await LineReceiver(port: port)
    }

    init(port: Int = 0, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws {
        let state = Collected()
        self.state = state
        serverChannel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                state.lock.withLock {
                    state.children.append(channel)
                    state.connections += 1
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(LineCollector(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        self.port = serverChannel.localAddress!.port!
    }

    /// Lines received so far, in order, without their `\n`.
    var lines: [String] { state.lock.withLock { state.lines } }
    /// Connections accepted so far.
    var connections: Int { state.lock.withLock { state.connections } }

    /// Resets every open connection (SO_LINGER 0 then close: the client sees a RST).
    func closeConnectionsAbruptly() async {
        let children = state.lock.withLock { () -> [any Channel] in
            defer { state.children.removeAll() }
            return state.children
        }
        for child in children {
            if let provider = child as? any SocketOptionProvider {
                _ = try? await provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
            }
            try? await child.close()
        }
    }

    /// Polls until `count` lines arrived or `timeout` passed (a bound for a failing wait only: a loaded machine may
    /// take long).
    func waitForLines(_ count: Int, timeout: Duration = .seconds(120)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if lines.count >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return lines.count >= count
    }

    func stop() async {
        await closeConnectionsAbruptly()
        try? await serverChannel.close()
    }

    private final class LineCollector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let state: Collected
        var pending: [UInt8] = []
        init(state: Collected) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            pending += buffer.readBytes(length: buffer.readableBytes) ?? []
            guard let last = pending.lastIndex(of: UInt8(ascii: "\n")) else { return }
            let complete = pending[..<last].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
                .map { String(decoding: $0, as: UTF8.self) }
            pending.removeFirst(last + 1)
            state.lock.withLock { state.lines += complete }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
