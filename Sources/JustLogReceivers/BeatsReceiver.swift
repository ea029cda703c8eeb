package import JustLogCore
import JustLogLogstash
package import NIOCore
import NIOPosix

/// A Beats (Lumberjack v2) server, as Logstash's `beats` input: accepts TCP or TLS connections, decodes
/// window, JSON and compressed frames, hands the events to a handler and acknowledges **only what the
/// handler says it has handled** — printed, or written to a file. For `justlog receive --protocol beats`,
/// and tests.
///
/// ## Acknowledgements
/// Events are handed over in order, in the groups one read of the socket decoded (a whole window when it
/// came compressed). The handler returns how many of them, from the first, it has handled; the receiver then
/// sends `2A seq` with the sequence number of the last of those. If it handled fewer than it got, the
/// receiver sends that ACK and closes the connection: the client resends the rest. A new window frame, the
/// end of the client's stream and each read all end a group, so a window split over several reads gets
/// partial ACKs, as from Logstash.
///
/// Malformed input (an unknown version or frame type, a frame over ``Configuration/maxFrameBytes``, corrupt
/// zlib data) is reported through `activity` and the connection is closed; what came before it is handled
/// and acknowledged. An event that is not JSON is handed over as a `.failure`, like ``JSONLinesReceiver``.
///
/// ```swift
/// let tally = EventIDTally()
/// let receiver = BeatsReceiver(configuration: .init(port: 0)) { events in tally.record(events) }
/// let port = try await receiver.start()
/// // … send Beats windows to 127.0.0.1:port …
/// await receiver.stop()
/// ```
package final class BeatsReceiver: Sendable {
    /// Where and how to listen.
    package struct Configuration: Sendable {
        /// The address to bind (default `127.0.0.1`).
        package var host: String
        /// The port to bind; `0` (the default) lets the kernel pick.
        package var port: Int
        /// Serve TLS with this certificate and key (default `nil`: plain TCP).
        package var tls: JSONLinesReceiver.TLS?
        /// The largest JSON or compressed frame accepted (default 16 MiB).
        package var maxFrameBytes: Int

        package init(
            host: String = "127.0.0.1",
            port: Int = 0,
            tls: JSONLinesReceiver.TLS? = nil,
            maxFrameBytes: Int = 16 << 20
        ) {
            self.host = host
            self.port = port
            self.tls = tls
            self.maxFrameBytes = max(1024, maxFrameBytes)
        }
    }

    /// One received event.
    package struct Event: Sendable {
        /// The connection it came on: 1 for the first accepted, 2 for the next, …
        package var connection: Int
        /// Its sequence number in the window.
        package var sequence: UInt32
        /// The JSON payload as received.
        package var raw: [UInt8]
        /// The parsed JSON, or why it is not JSON.
        package var parsed: Result<LogValue, JustLogError>
    }

    /// What the receiver has seen so far.
    package struct Counters: Sendable, Hashable {
        /// Connections accepted and set up (not those refused because the receiver was stopping).
        package var connections = 0
        /// Events handed to the handler, invalid ones included.
        package var events = 0
        /// Events that were not JSON.
        package var invalidEvents = 0
        /// Events the handler handled and that were acknowledged.
        package var acknowledged = 0
        package var windows = 0
        /// ACK frames sent.
        package var acks = 0
        /// Connections closed because of malformed input.
        package var malformed = 0
    }

    package let configuration: Configuration
    private let group: any EventLoopGroup
    private let shared: Shared
    private let listener = ReceiverListener(name: "Beats receiver")

    final class Shared: Sendable {
        let handler: @Sendable ([Event]) -> Int
        let activity: (@Sendable (String) -> Void)?
        let maxFrameBytes: Int
        let state = LockedValue(State())

        struct State: Sendable {
            var counters = Counters()
        }

        init(handler: @escaping @Sendable ([Event]) -> Int, activity: (@Sendable (String) -> Void)?, maxFrameBytes: Int)
        {
            self.handler = handler
            self.activity = activity
            self.maxFrameBytes = maxFrameBytes
        }
    }

    /// - Parameters:
    ///   - activity: one line per connection opened, closed or refused for malformed input (`nil`: none).
    ///   - handler: gets each group of events, in order within a connection, on its event loop; returns how
    ///     many of them, from the first, it has handled (those are acknowledged).
    package init(
        configuration: Configuration,
        eventLoopGroup: (any EventLoopGroup)? = nil,
        activity: (@Sendable (String) -> Void)? = nil,
        handler: @escaping @Sendable ([Event]) -> Int
    ) {
        self.configuration = configuration
        self.group = eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        self.shared = Shared(handler: handler, activity: activity, maxFrameBytes: configuration.maxFrameBytes)
    }

    /// Binds and starts accepting; returns the bound port.
    ///
    /// - Throws: ``LogstashError`` as ``JSONLinesReceiver/start()`` does.
    @discardableResult
    package func start() async throws -> Int {
        let shared = shared
        return try await listener.start(
            group: group,
            host: configuration.host,
            port: configuration.port,
            tls: configuration.tls
        ) { channel, number in
            try channel.pipeline.syncOperations.addHandler(
                BeatsServerHandler(connection: number, shared: shared, peer: channel.remoteAddress)
            )
        }
    }

    /// The bound port once ``start()`` returned, else `nil`.
    package var port: Int? { listener.port }

    /// A snapshot of the counters.
    package var counters: Counters {
        var counters = shared.state.withLock { $0.counters }
        counters.connections = listener.connectionsSetUp
        return counters
    }

    /// Stops accepting and closes every connection, also one accepted while it stops. Later calls do nothing.
    package func stop() async {
        await listener.stop()
    }
}

// MARK: - Channel handler

/// Decodes one connection's frames, hands events over, acknowledges what was handled.
final class BeatsServerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let connection: Int
    private let shared: BeatsReceiver.Shared
    private let peer: SocketAddress?
    private var decoder: LumberjackDecoder
    private var pending: [BeatsReceiver.Event] = []
    private var events = 0
    private var closed = false

    init(connection: Int, shared: BeatsReceiver.Shared, peer: SocketAddress?) {
        self.connection = connection
        self.shared = shared
        self.peer = peer
        self.decoder = LumberjackDecoder(
            maxFrameBytes: shared.maxFrameBytes,
            maxInflatedBytes: 4 * shared.maxFrameBytes
        )
    }

    func channelActive(context: ChannelHandlerContext) {
        shared.activity?("connection \(connection) opened from \(peer.map { "\($0)" } ?? "an unknown peer") (Beats)")
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closed else { return }
        let buffer = unwrapInboundIn(data)
        decoder.append(buffer.readableBytesView)
        do {
            while let frame = try decoder.next() {
                switch frame {
                case .window:
                    // A new window: what came before it is one group.
                    guard handPending(context) else { return }
                    shared.state.withLock { $0.counters.windows += 1 }
                case .json(let sequence, let payload):
                    let parsed: Result<LogValue, JustLogError>
                    do {
                        parsed = .success(try JSONReader.parse(bytes: payload))
                    } catch {
                        parsed = .failure(error)
                    }
                    pending.append(.init(connection: connection, sequence: sequence, raw: payload, parsed: parsed))
                case .ack:
                    throw LogstashError(code: .malformedFrame, message: "a client sent an ACK frame")
                }
            }
        } catch {
            // Handle and acknowledge what came before the bad bytes, then refuse the rest.
            guard handPending(context) else { return }
            shared.state.withLock { $0.counters.malformed += 1 }
            shared.activity?(
                "connection \(connection): \((error as? LogstashError)?.message ?? "\(error)"); closing it"
            )
            close(context)
            return
        }
        _ = handPending(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        shared.activity?("connection \(connection) closed after \(events) event(s)")
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client finished (half-close).
            _ = handPending(context)
            close(context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        shared.activity?("connection \(connection): \(error); closing it")
        close(context)
    }

    /// Hands the pending events over and acknowledges those handled; `false` if the handler refused some
    /// (the connection is then closed).
    private func handPending(_ context: ChannelHandlerContext) -> Bool {
        guard !pending.isEmpty, !closed else { return !closed }
        let group = pending
        pending.removeAll(keepingCapacity: true)
        let handled = min(max(shared.handler(group), 0), group.count)
        let invalid = group.filter { if case .failure = $0.parsed { return true } else { return false } }.count
        events += group.count
        shared.state.withLock { state in
            state.counters.events += group.count
            state.counters.invalidEvents += invalid
            state.counters.acknowledged += handled
            if handled > 0 { state.counters.acks += 1 }
        }
        if handled > 0 {
            var buffer = context.channel.allocator.buffer(capacity: 6)
            buffer.writeBytes(LumberjackEncoder.ack(group[handled - 1].sequence))
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }
        guard handled == group.count else {
            shared.activity?(
                "connection \(connection): \(group.count - handled) event(s) could not be handled and are not acknowledged; closing it"
            )
            close(context)
            return false
        }
        return true
    }

    private func close(_ context: ChannelHandlerContext) {
        guard !closed else { return }
        closed = true
        context.close(promise: nil)
    }
}
