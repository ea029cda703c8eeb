import JustLogCore
import JustLogLogstash
import NIOCore
import NIOPosix
import NIOSSL

/// What ``JSONLinesReceiver`` and ``BeatsReceiver`` share: their listening channel and the connections it
/// accepted, behind one lock, and their life — started once, stopped once.
///
/// `stop()` closes every connection, also one that was accepted but not yet set up (on its own event loop) when
/// `stop()` took the list: its set-up sees the receiver stopped and refuses it, and NIO closes it. (NIO also
/// closes a connection whose set-up ends after the listener closed; one whose set-up ended between `stop()`'s list
/// and the listener's close would otherwise be served and never closed.)
final class ReceiverListener: Sendable {
    /// How the receiver names itself in errors: "the \(name) was already started".
    private let name: String
    private let state = LockedValue(State())

    private struct State: Sendable {
        var phase = Phase.idle
        var connections: [ObjectIdentifier: any Channel] = [:]
        /// Connections set up so far (refused ones not counted).
        var accepted = 0
    }

    private enum Phase: Sendable {
        case idle
        case starting
        case running(server: any Channel, port: Int)
        case stopped
    }

    /// The receiver refused a connection: it had stopped, or holds ``maximumConnections``.
    private struct Refused: Error {}

    /// The most connections served at once; more are closed as they come. Without a bound ~1,000 senders that send
    /// nothing (or a byte now and then) took every file descriptor, and a real sender could not connect (review,
    /// helper-72).
    private let maximumConnections: Int
    /// A connection that sends nothing for this long is closed (a sender reconnects; one that holds a descriptor
    /// and sends nothing is not waited for).
    private let idleTimeout: TimeAmount

    init(name: String, maximumConnections: Int = 256, idleTimeout: Duration = .seconds(120)) {
        self.name = name
        self.maximumConnections = max(1, maximumConnections)
        self.idleTimeout = LogstashClient.timeAmount(idleTimeout)
    }

    /// Binds and starts accepting; returns the bound port (the kernel's choice when `port` is 0). Each connection
    /// gets TLS's handler when `tls` is given, then `setUp` adds the receiver's own, on the connection's event loop,
    /// given the connection's number: 1 for the first set up, 2 for the next, …
    ///
    /// - Throws: ``LogstashError`` — ``LogstashError/Code/invalidTLSConfiguration`` for an unreadable
    ///   certificate or key, ``LogstashError/Code/invalidConfiguration`` when the port is in use, the address
    ///   can't be bound, or the receiver was already started.
    func start(
        group: any EventLoopGroup,
        host: String,
        port: Int,
        tls: JSONLinesReceiver.TLS?,
        setUp: @escaping @Sendable (_ channel: any Channel, _ number: Int) throws -> Void
    ) async throws -> Int {
        let canStart = state.withLock { state -> Bool in
            guard case .idle = state.phase else { return false }
            state.phase = .starting
            return true
        }
        guard canStart else {
            throw LogstashError(code: .invalidConfiguration, message: "the \(name) was already started; make a new one")
        }
        do {
            let sslContext = try tls.map(JSONLinesReceiver.makeSSLContext)
            let state = state
            let maximumConnections = maximumConnections
            let idleTimeout = idleTimeout
            let server = try await ServerBootstrap(group: group)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .serverChannelOption(ChannelOptions.backlog, value: 256)
                .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .childChannelInitializer { channel in
                    let number = state.withLock { state -> Int? in
                        if case .stopped = state.phase { return nil }
                        guard state.connections.count < maximumConnections else { return nil }
                        state.connections[ObjectIdentifier(channel)] = channel
                        state.accepted += 1
                        return state.accepted
                    }
                    guard let number else { return channel.eventLoop.makeFailedFuture(Refused()) }
                    channel.closeFuture.whenComplete { _ in
                        _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
                    }
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            IdleStateHandler(readTimeout: idleTimeout),
                            name: Self.idleHandlerName
                        )
                        try channel.pipeline.syncOperations.addHandler(CloseWhenIdle(), name: Self.closeHandlerName)
                        if let sslContext {
                            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                        }
                        try setUp(channel, number)
                    }
                }
                .bind(host: host, port: port).get()
            let boundPort = server.localAddress?.port ?? port
            let stopNow = state.withLock { state -> Bool in
                guard case .starting = state.phase else { return true }
                state.phase = .running(server: server, port: boundPort)
                return false
            }
            if stopNow { try? await server.close() }
            return boundPort
        } catch {
            state.withLock { state in
                if case .starting = state.phase { state.phase = .idle }
            }
            throw JSONLinesReceiver.describeStartError(error, host: host, port: port)
        }
    }

    /// The bound port once ``start(group:host:port:tls:setUp:)`` returned, else `nil`.
    var port: Int? {
        state.withLock { state in
            if case .running(_, let port) = state.phase { return port }
            return nil
        }
    }

    /// How many connections were set up so far.
    var connectionsSetUp: Int { state.withLock { $0.accepted } }

    private static let idleHandlerName = "justlog.idle"
    private static let closeHandlerName = "justlog.close-when-idle"

    /// Takes the idle timeout away from the connection of `pipeline` (on its event loop): a sender that delivered
    /// something is kept however long it is quiet.
    static func keepWhenIdle(_ pipeline: ChannelPipeline) {
        _ = pipeline.removeHandler(name: idleHandlerName)
        _ = pipeline.removeHandler(name: closeHandlerName)
    }

    /// Stops accepting and closes every connection. Later calls do nothing.
    func stop() async {
        let (server, connections) = state.withLock { state -> ((any Channel)?, [any Channel]) in
            var server: (any Channel)?
            if case .running(let channel, _) = state.phase { server = channel }
            state.phase = .stopped
            return (server, Array(state.connections.values))
        }
        try? await server?.close()
        await Self.closeAll(connections)
    }

    /// How long closing a TLS connection waits for the sender's `close_notify` before it closes the socket
    /// (NIOSSL's default is 5 s): a receiver that stops has read all it will read, and a sender that hangs must not
    /// hold its exit.
    static let closeNotifyWait: TimeAmount = .seconds(1)

    /// Closes every channel at once — every close begun before any is awaited (each TLS one may wait
    /// ``closeNotifyWait`` for its peer) — and returns when all are closed.
    private static func closeAll(_ channels: [any Channel]) async {
        let closing = channels.map { $0.close() }
        for closed in closing { try? await closed.get() }
    }
}

/// Closes its connection when ``IdleStateHandler`` says nothing was read for its timeout.
private final class CloseWhenIdle: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .read? = event as? IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
