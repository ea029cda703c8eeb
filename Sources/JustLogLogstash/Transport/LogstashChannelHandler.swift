import JustLogCore
import NIOCore
import NIOSSL
import NIOTLS

/// The one handler of a Logstash connection: it discards what a json_lines collector sends (or decodes a
/// Beats collector's ACKs and passes them on), checks pins once the TLS handshake completes, and tells the
/// ``LogstashClient`` when the connection is ready or gone.
final class LogstashChannelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let client: LogstashClient
    private let generation: Int
    private let tls: LogstashTLS?
    private var firstError: (any Error)?
    /// Beats: the collector's ACK frames (small limits, nothing compressed: it sends nothing else).
    private var decoder: LumberjackDecoder?
    private var bytesSeen = 0

    init(client: LogstashClient, generation: Int, tls: LogstashTLS?, decodesAcks: Bool = false) {
        self.client = client
        self.generation = generation
        self.tls = tls
        self.decoder =
            decodesAcks
            ? LumberjackDecoder(maxFrameBytes: 64 << 10, maxInflatedBytes: 64 << 10, acceptsCompressedFrames: false)
            : nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard firstError == nil else { return }
        let buffer = unwrapInboundIn(data)
        // A plain connection that gets a TLS record back (an alert or a handshake: content type 21 or 22,
        // version 3.x) reached a TLS port.
        if tls == nil, bytesSeen == 0,
            let bytes = buffer.getBytes(at: buffer.readerIndex, length: min(2, buffer.readableBytes)), bytes.count == 2,
            bytes[0] == 21 || bytes[0] == 22, bytes[1] == 3
        {
            fail(
                context,
                LogstashError(
                    code: .connectFailed,
                    message:
                        "the collector answered in TLS: it expects TLS on this port; turn TLS on (logstashUseTLS = true; justlog ship without --plain)"
                )
            )
            return
        }
        bytesSeen += buffer.readableBytes
        // json_lines is one-way: whatever the collector sends is ignored.
        guard var decoder else { return }
        decoder.append(buffer.readableBytesView)
        var acks: [UInt32] = []
        do {
            while let frame = try decoder.next() {
                guard case .ack(let sequence) = frame else {
                    throw LogstashError(
                        code: .malformedFrame,
                        message:
                            "the collector sent \(frame.kind) where only ACKs are expected: it may not be a Beats input"
                    )
                }
                acks.append(sequence)
            }
            self.decoder = decoder
        } catch {
            self.decoder = decoder
            for sequence in acks { client.ackReceived(generation: generation, sequence: sequence) }
            let problem = error as? LogstashError ?? LogstashError(code: .malformedFrame, message: "\(error)")
            fail(
                context,
                LogstashError(
                    code: .malformedFrame,
                    message:
                        "\(problem.message) (is this port a Logstash beats input? for a tcp/json_lines input use the json_lines transport)"
                )
            )
            return
        }
        for sequence in acks { client.ackReceived(generation: generation, sequence: sequence) }
    }

    private func fail(_ context: ChannelHandlerContext, _ error: LogstashError) {
        firstError = error
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let protocolName) = event {
            let handler = try? context.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
            if let problem = tls?.checkPins(handler?.peerCertificate) {
                firstError = LogstashError(
                    code: .certificateRejected,
                    message: "TLS: certificate pin mismatch",
                    cause: problem
                )
                context.close(promise: nil)
                return
            }
            let version = handler?.tlsVersion.map { "\($0)" } ?? "unknown version"
            client.tlsReady(
                generation: generation,
                detail: "TLS handshake done (\(version)\(protocolName.map { ", ALPN \($0)" } ?? ""))"
            )
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
