import Foundation
import NIOCore
import NIOPosix

@testable import JustLogLogstash

/// A Beats server on 127.0.0.1 that answers each window as a test script says — partial ACKs, keep-alives, no
/// ACK, garbage, a close — for protocol cases a real server can't be made to show on demand. It records every
/// event and the raw bytes of each connection. Always call ``stop()``.
final class FakeBeatsServer: @unchecked Sendable {
    /// What to do once a window has fully arrived.
    enum Reply: Sendable {
        case ack(UInt32)
        /// Sends these bytes as they are.
        case raw([UInt8])
        /// Waits before the next reply.
        case pause(Duration)
        /// Closes the connection.
        case close
        /// Waits until `condition` holds (looked at every 10 ms) before the next reply.
        case waitUntil(@Sendable () -> Bool)
    }

    /// One complete window: the connection (1, 2, …), the window's number on it (1, 2, …), and its events.
    struct Window: Sendable {
        var connection: Int
        var index: Int
        var events: [(sequence: UInt32, payload: String)]
        /// Whether its events came in a compressed frame.
        var compressed: Bool
    }

    let port: Int
    private let server: any Channel
    private let state: State

    final class State: @unchecked Sendable {
        let lock = NSLock()
        var windows: [Window] = []
        var connections = 0
        var bytes: [Int: Int] = [:]
        var channels: [any Channel] = []
        let script: @Sendable (Window) -> [Reply]
        init(script: @escaping @Sendable (Window) -> [Reply]) { self.script = script }
    }

    init(script: @escaping @Sendable (Window) -> [Reply]) async throws {
        let state = State(script: script)
        self.state = state
        server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let number = state.lock.withLock {
                    state.connections += 1
                    state.channels.append(channel)
                    return state.connections
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(connection: number, state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = server.localAddress!.port!
    }

    var windows: [Window] { state.lock.withLock { state.windows } }
    var connections: Int { state.lock.withLock { state.connections } }
    func bytesReceived(connection: Int) -> Int { state.lock.withLock { state.bytes[connection] ?? 0 } }
    /// Every event payload received, in order, resends included.
    var payloads: [String] { windows.flatMap { $0.events.map(\.payload) } }

    func stop() async {
        let channels = state.lock.withLock { state.channels }
        for channel in channels { try? await channel.close() }
        try? await server.close()
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let connection: Int
        let state: State
        var decoder = LumberjackDecoder()
        var expected = 0
        var events: [(sequence: UInt32, payload: String)] = []
        var compressed = false
        var windowIndex = 0
        var afterWindowHeader = false

        init(connection: Int, state: State) {
            self.connection = connection
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            state.lock.withLock { state.bytes[connection, default: 0] += buffer.readableBytes }
            let bytes = Array(buffer.readableBytesView)
            // A window header followed by `2C` in the same stream: note it (the decoder hides compression).
            if decoder.bufferedBytes == 0, bytes.count >= 8, bytes[0] == 0x32, bytes[1] == 0x57 {
                compressed = bytes[7] == UInt8(ascii: "C")
            }
            decoder.append(bytes)
            while let frame = try? decoder.next() {
                switch frame {
                case .window(let count):
                    expected = Int(count)
                    events = []
                case .json(let sequence, let payload):
                    events.append((sequence, String(decoding: payload, as: UTF8.self)))
                    if events.count == expected { windowDone(context) }
                case .ack:
                    break
                }
            }
        }

        private func windowDone(_ context: ChannelHandlerContext) {
            windowIndex += 1
            let window = Window(connection: connection, index: windowIndex, events: events, compressed: compressed)
            state.lock.withLock { state.windows.append(window) }
            play(state.script(window)[...], context: context)
        }

        private func play(_ replies: ArraySlice<Reply>, context: ChannelHandlerContext) {
            guard let reply = replies.first else { return }
            let rest = replies.dropFirst()
            switch reply {
            case .ack(let sequence):
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: LumberjackEncoder.ack(sequence))), promise: nil)
            case .raw(let bytes):
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil)
            case .pause(let duration):
                let ms = Int64(
                    duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
                )
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: .milliseconds(ms)) { self.play(rest, context: bound.value) }
                return
            case .close:
                context.close(promise: nil)
                return
            case .waitUntil(let condition):
                guard condition() else {
                    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                    context.eventLoop.scheduleTask(in: .milliseconds(10)) { self.play(replies, context: bound.value) }
                    return
                }
            }
            play(rest, context: context)
        }

        typealias OutboundOut = ByteBuffer
    }
}
