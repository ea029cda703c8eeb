import JustLogCore
import NIOCore
import NIOSSL
import NIOTLS

/// The one handler of a Logstash connection: it discards what the collector sends, checks pins once the
/// TLS handshake completes, and tells the ``LogstashClient`` when the connection is ready or gone.
final class LogstashChannelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let client: LogstashClient
    private let generation: Int
    private let tls: LogstashTLS?
    private var firstError: (any Error)?

    init(client: LogstashClient, generation: Int, tls: LogstashTLS?) {
        self.client = client
        self.generation = generation
        self.tls = tls
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // json_lines is one-way: whatever the collector sends is ignored — unless a plain connection gets a TLS
        // record back (an alert or a handshake: content type 21 or 22, version 3.x), the sign of a TLS port.
        guard tls == nil, firstError == nil else { return }
        let buffer = unwrapInboundIn(data)
        guard let bytes = buffer.getBytes(at: buffer.readerIndex, length: min(2, buffer.readableBytes)), bytes.count == 2,
            bytes[0] == 21 || bytes[0] == 22, bytes[1] == 3
        else { return }
        firstError = LogstashError(
            code: .connectFailed,
            message: "the collector answered in TLS: it expects TLS on this port; turn TLS on (logstashUseTLS = true; justlog ship without --plain)"
        )
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let protocolName) = event {
            let handler = try? context.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
            if let problem = tls?.checkPins(handler?.peerCertificate) {
                firstError = LogstashError(code: .certificateRejected, message: "TLS: certificate pin mismatch", cause: problem)
                context.close(promise: nil)
                return
            }
            let version = handler?.tlsVersion.map { "\($0)" } ?? "unknown version"
            client.tlsReady(generation: generation, detail: "TLS handshake done (\(version)\(protocolName.map { ", ALPN \($0)" } ?? ""))")
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if firstError == nil { firstError = error }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.channelClosed(generation: generation, error: firstError)
        context.fireChannelInactive()
    }
}
