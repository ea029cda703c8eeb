package import JustLogCore
import JustLogLogstash
package import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A Logstash-compatible `json_lines` server (the `tcp` input with the `json_lines` codec): accepts TCP or
/// TLS connections and hands every received line, parsed, to a handler. For local development
/// (`justlog receive`), the demo's loopback collector, and tests.
///
/// ## Framing
/// Lines are split on `\n`; a trailing `\r` is stripped; empty lines are skipped (as syslog-ng and rsyslog
/// do). Line numbers count every `\n`-terminated line of a connection, empty ones included, so they match
/// the sender's own line numbers. A last line without `\n` is delivered when the connection ends.
///
/// Nothing is dropped silently: a line that is not JSON is delivered with a `.failure` naming the byte
/// where it went wrong, and a line longer than ``Configuration/maxLineBytes`` is delivered as a `.failure`
/// as soon as it passes the limit (its ``Line/raw`` then holds only its first KiB); the rest of it, up to
/// the next `\n`, is discarded. Memory per connection is bounded by that limit.
///
/// ## Threads
/// The handler is called on the connection's event loop, in order within a connection: don't block in it.
///
/// ```swift
/// let tally = EventIDTally()
/// let receiver = JSONLinesReceiver(configuration: .init(port: 0)) { line in
///     tally.record(line)
///     if case .failure(let error) = line.parsed { print("connection \(line.connection) line \(line.lineNumber): \(error)") }
/// }
/// let port = try await receiver.start()          // the port the kernel chose
/// // … send json_lines to 127.0.0.1:port …
/// await receiver.stop()
/// print(tally.snapshot.uniqueEventIDs, tally.snapshot.duplicates)
/// ```
package final class JSONLinesReceiver: Sendable {
    // MARK: - Values

    /// Where and how to listen. Settings are values with documented defaults.
    package struct Configuration: Sendable {
        /// The address to bind (default `127.0.0.1`: loopback only).
        package var host: String
        /// The port to bind; `0` (the default) lets the kernel pick a free one (see ``JSONLinesReceiver/port``).
        package var port: Int
        /// Serve TLS with this certificate and key (default `nil`: plain TCP).
        package var tls: TLS?
        /// The longest line accepted, without its `\n` (default 1 MiB + 4 KiB: the client's 1 MiB record
        /// limit plus a margin).
        package var maxLineBytes: Int
        /// The most connections served at once; more are closed as they come (default 256). Without a bound ~1,000
        /// senders that sent nothing took every file descriptor, and a real sender could not connect (review,
        /// helper-72).
        package var maximumConnections = 256
        /// A connection that sends no line for this long after connecting is closed (default 120 s); one that sent a
        /// line is kept however long it is quiet.
        package var idleTimeout: Duration = .seconds(120)

        package init(host: String = "127.0.0.1", port: Int = 0, tls: TLS? = nil, maxLineBytes: Int = (1 << 20) + 4096) {
            self.host = host
            self.port = port
            self.tls = tls
            self.maxLineBytes = max(1, maxLineBytes)
        }
    }

    /// The server certificate (chain) and private key, both PEM files.
    package struct TLS: Sendable, Hashable {
        package var certificateFile: String
        package var keyFile: String

        package init(certificateFile: String, keyFile: String) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// One received line.
    package struct Line: Sendable {
        /// The connection it came on: 1 for the first connection accepted, 2 for the next, …
        package var connection: Int
        /// Its line number within the connection, from 1 (empty lines count, see the type's discussion).
        package var lineNumber: Int
        /// The line's bytes, without `\n` or trailing `\r`; only the first KiB for an over-long line.
        package var raw: [UInt8]
        /// The parsed JSON, or why the line was refused (invalid JSON, too long).
        package var parsed: Result<LogValue, JustLogError>

        package init(connection: Int, lineNumber: Int, raw: [UInt8], parsed: Result<LogValue, JustLogError>) {
            self.connection = connection
            self.lineNumber = lineNumber
            self.raw = raw
            self.parsed = parsed
        }

        /// ``raw`` as text (invalid UTF-8 replaced).
        package var text: String { String(decoding: raw, as: UTF8.self) }
    }

    /// What the receiver has seen so far.
    package struct Counters: Sendable, Hashable {
        /// Connections accepted and set up (not those refused because the receiver was stopping).
        package var connections: Int = 0
        /// Lines delivered to the handler, invalid ones included.
        package var lines: Int = 0
        /// Lines delivered as `.failure` (not JSON, or too long).
        package var invalidLines: Int = 0
        /// Bytes received, framing included.
        package var bytes: Int = 0
    }

    // MARK: - State

    /// The configuration the receiver was made with.
    package let configuration: Configuration
    private let group: any EventLoopGroup
    private let shared: Shared
    private let listener: ReceiverListener

    /// State reachable from every connection's event loop, behind one lock.
    final class Shared: Sendable {
        let handler: @Sendable (Line) -> Void
        let activity: (@Sendable (String) -> Void)?
        let maxLineBytes: Int
        let state = LockedValue(State())

        struct State: Sendable {
            var counters = Counters()
        }

        init(handler: @escaping @Sendable (Line) -> Void, activity: (@Sendable (String) -> Void)?, maxLineBytes: Int) {
            self.handler = handler
            self.activity = activity
            self.maxLineBytes = maxLineBytes
        }

        func deliver(_ line: Line) {
            state.withLock { state in
                state.counters.lines += 1
                if case .failure = line.parsed { state.counters.invalidLines += 1 }
            }
            handler(line)
        }
    }

    // MARK: - Life cycle

    /// - Parameters:
    ///   - eventLoopGroup: where connections run (default `nil`: NIO's shared singleton group).
    ///   - activity: receives one line per connection opened, closed or failed (`nil`: none).
    ///   - handler: receives every line, in order within a connection, on its event loop.
    package init(
        configuration: Configuration,
        eventLoopGroup: (any EventLoopGroup)? = nil,
        activity: (@Sendable (String) -> Void)? = nil,
        handler: @escaping @Sendable (Line) -> Void
    ) {
        self.configuration = configuration
        self.group = eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        self.shared = Shared(handler: handler, activity: activity, maxLineBytes: configuration.maxLineBytes)
        self.listener = ReceiverListener(
            name: "json_lines receiver",
            maximumConnections: configuration.maximumConnections,
            idleTimeout: configuration.idleTimeout
        )
    }

    /// Binds and starts accepting; returns the bound port (the kernel's choice when the configured port is 0).
    ///
    /// - Throws: ``LogstashError`` — ``LogstashError/Code/invalidTLSConfiguration`` for an unreadable
    ///   certificate or key, ``LogstashError/Code/invalidConfiguration`` when the port is in use, the address
    ///   can't be bound, or the receiver was already started.
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
                JSONLinesHandler(connection: number, shared: shared, peer: channel.remoteAddress)
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

    /// Stops accepting and closes every connection (a partial last line of each is still delivered), also one
    /// accepted while it stops. Later calls do nothing.
    package func stop() async {
        await listener.stop()
    }

    // MARK: - Helpers

    static func makeSSLContext(_ tls: TLS) throws -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(tls.certificateFile)
        } catch {
            throw LogstashError(
                code: .invalidTLSConfiguration,
                message: "can't read the server certificate \(tls.certificateFile): give a PEM certificate file",
                cause: error
            )
        }
        guard !chain.isEmpty else {
            throw LogstashError(
                code: .invalidTLSConfiguration,
                message: "no certificate in \(tls.certificateFile): give a PEM certificate file"
            )
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: tls.keyFile, format: .pem)
        } catch {
            throw LogstashError(
                code: .invalidTLSConfiguration,
                message: "can't read the private key \(tls.keyFile): give the PEM key of the certificate",
                cause: error
            )
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.minimumTLSVersion = .tlsv12
        configuration.shutdownTimeout = ReceiverListener.closeNotifyWait
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw LogstashError(
                code: .invalidTLSConfiguration,
                message:
                    "can't serve TLS with \(tls.certificateFile) and \(tls.keyFile): check that the key belongs to the certificate",
                cause: error
            )
        }
    }

    static func describeStartError(_ error: any Error, host: String, port: Int) -> any Error {
        if error is LogstashError { return error }
        let address = "\(host):\(port)"
        if let error = error as? IOError {
            switch error.errnoCode {
            case EADDRINUSE:
                return LogstashError(
                    code: .invalidConfiguration,
                    message:
                        "port \(port) on \(host) is already in use: stop what listens there or choose another port (0 picks a free one)",
                    cause: error
                )
            case EACCES:
                return LogstashError(
                    code: .invalidConfiguration,
                    message:
                        "not allowed to listen on \(address): ports below 1024 need privileges; choose a port of 1024 or more",
                    cause: error
                )
            case EADDRNOTAVAIL:
                return LogstashError(
                    code: .invalidConfiguration,
                    message:
                        "\(host) is not an address of this machine: listen on 127.0.0.1, 0.0.0.0 or one of its addresses",
                    cause: error
                )
            default:
                break
            }
        }
        return LogstashError(code: .invalidConfiguration, message: "can't listen on \(address)", cause: error)
    }
}

// MARK: - Channel handler

/// Splits one connection's bytes into lines and delivers them; bounded by the line limit.
final class JSONLinesHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    /// How much of an over-long line is kept in ``JSONLinesReceiver/Line/raw``.
    static let overlongPrefixBytes = 1024

    private let connection: Int
    private let shared: JSONLinesReceiver.Shared
    private let peer: SocketAddress?
    private var pending: [UInt8] = []
    private var lineNumber = 0
    /// Inside an over-long line already reported: bytes are dropped up to the next `\n`.
    private var discarding = false
    private var finished = false

    init(connection: Int, shared: JSONLinesReceiver.Shared, peer: SocketAddress?) {
        self.connection = connection
        self.shared = shared
        self.peer = peer
    }

    func channelActive(context: ChannelHandlerContext) {
        shared.activity?("connection \(connection) opened from \(peer.map { "\($0)" } ?? "an unknown peer")")
        context.fireChannelActive()
    }

    /// Whether the connection's idle timeout was taken away (see ``channelRead(context:data:)``).
    private var keptWhenIdle = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        shared.state.withLock { $0.counters.bytes += buffer.readableBytes }
        buffer.withUnsafeReadableBytes { bytes in
            var start = 0
            while start < bytes.count {
                let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n"))
                let end = newline ?? bytes.count
                if !discarding {
                    if pending.count + (end - start) > shared.maxLineBytes {
                        // Keep a prefix for the report, then drop the rest of the line.
                        let room = max(0, Self.overlongPrefixBytes - pending.count)
                        pending.append(contentsOf: bytes[start..<min(end, start + room)])
                        reportOverlong()
                        discarding = newline == nil
                    } else {
                        pending.append(contentsOf: bytes[start..<end])
                        if newline != nil { completeLine() }
                    }
                } else if newline != nil {
                    discarding = false
                }
                start = end + 1
            }
        }
        // A sender that delivered a line is a sender: kept however long it is quiet. Closed when idle, a json_lines
        // sender — which knows a line arrived only once much more followed it — sent everything again after every
        // quiet spell (review, helper-73). The idle timeout is for connections that never send a line.
        if lineNumber > 0, !keptWhenIdle {
            keptWhenIdle = true
            ReceiverListener.keepWhenIdle(context.pipeline)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The sender finished (half-close): deliver a last partial line and close our side.
            finish()
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        shared.activity?("connection \(connection): \(Self.describe(error)); closing it")
        context.close(promise: nil)
    }

    // MARK: - Lines

    private func completeLine() {
        lineNumber += 1
        if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
        defer { pending.removeAll(keepingCapacity: pending.count <= 64 << 10) }
        guard !pending.isEmpty else { return }
        let parsed: Result<LogValue, JustLogError>
        do {
            parsed = .success(try JSONReader.parse(bytes: pending))
        } catch {
            parsed = .failure(error)
        }
        shared.deliver(.init(connection: connection, lineNumber: lineNumber, raw: pending, parsed: parsed))
    }

    private func reportOverlong() {
        lineNumber += 1
        let error = JustLogError(
            .malformedInput,
            "line longer than \(shared.maxLineBytes) bytes: discarded up to the next newline (raise the receiver's line limit, or send shorter records)"
        )
        let prefix = Array(pending.prefix(Self.overlongPrefixBytes))
        pending.removeAll()
        shared.deliver(.init(connection: connection, lineNumber: lineNumber, raw: prefix, parsed: .failure(error)))
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        if !discarding, !pending.isEmpty { completeLine() }
        shared.activity?("connection \(connection) closed after \(lineNumber) line(s)")
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? NIOSSLError { return "TLS error: \(error)" }
        if let error = error as? BoringSSLError { return "TLS error: \(error)" }
        return "\(error)"
    }
}
