import NIOCore

/// What the kernel knows about one TCP connection that bears on delivery: read with `TCP_INFO` (Linux) and
/// `SO_SNDBUF`, on the channel's event loop, synchronously.
///
/// - ``bufferBound`` sizes the resend window from the real buffers (see ``ConnectionStateMachine``).
/// - ``peerClosedAfterUs`` tells whether a peer's close came after it had acknowledged everything we sent,
///   our FIN included: only such a close can prove that a json_lines collector read everything.
struct TCPConnectionInfo: Sendable {
    /// The TCP state (`TCP_ESTABLISHED` 1, `TCP_FIN_WAIT1` 4, `TCP_FIN_WAIT2` 5, `TCP_TIME_WAIT` 6,
    /// `TCP_CLOSE` 7, `TCP_CLOSE_WAIT` 8, `TCP_LAST_ACK` 9, `TCP_CLOSING` 11).
    var state: UInt8
    /// Segments sent and not yet acknowledged by the peer.
    var unackedSegments: UInt32
    /// Bytes written to the socket and not yet sent.
    var notSentBytes: UInt32
    /// The receive window the peer advertised last, in bytes.
    var peerWindow: UInt32
    /// Our send buffer, in bytes (as `SO_SNDBUF` reports it: the kernel's accounting, at least the payload).
    var sendBuffer: Int

    /// Reads the connection's information, or `nil` where the platform or channel can't say. Call on the
    /// channel's event loop.
    static func read(_ channel: any Channel) -> TCPConnectionInfo? {
        #if os(Linux)
        guard let provider = channel as? any SocketOptionProvider,
            let sendBuffer = try? channel.syncOptions?.getOption(ChannelOptions.socketOption(.so_sndbuf))
        else { return nil }
        // On the channel's event loop the future is already complete, and its callback runs at once.
        let result = ReadOnce<LinuxTCPInfo>()
        provider.unsafeGetSocketOption(level: .tcp, name: .tcp_info).whenSuccess { (value: LinuxTCPInfo) in
            result.value = value
        }
        guard let raw = result.value else { return nil }
        return raw.withBytes { bytes in
            TCPConnectionInfo(
                state: bytes[0],
                unackedSegments: bytes.loadUInt32(at: 24),
                notSentBytes: bytes.loadUInt32(at: 144),
                peerWindow: bytes.loadUInt32(at: 228),
                sendBuffer: Int(sendBuffer)
            )
        }
        #else
        return nil
        #endif
    }

    /// Whether the peer closed its side only after acknowledging every byte we sent and our FIN: our socket is
    /// past FIN_WAIT1 (FIN_WAIT2, TIME_WAIT or CLOSE) with nothing unsent or unacknowledged. A peer that
    /// half-closed on its own before reading leaves us in CLOSING or LAST_ACK, or with bytes unacknowledged.
    var peerClosedAfterUs: Bool {
        [5, 6, 7].contains(state) && unackedSegments == 0 && notSentBytes == 0
    }
}

#if os(Linux)
/// Holds a value set by a callback that runs synchronously, on the event loop.
private final class ReadOnce<Value>: @unchecked Sendable {
    var value: Value?
}

/// Linux's `struct tcp_info` up to `tcpi_snd_wnd` (232 bytes, kernel 5.4 and later; Glibc's declaration
/// stops before the fields we need). Older kernels fill less and leave the rest zero: a zero window then
/// means "not measured".
struct LinuxTCPInfo: Sendable {
    private var storage:
        (
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64
        ) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    func withBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
        withUnsafeBytes(of: storage, body)
    }
}

extension UnsafeRawBufferPointer {
    fileprivate func loadUInt32(at offset: Int) -> UInt32 {
        offset + 4 <= count ? loadUnaligned(fromByteOffset: offset, as: UInt32.self) : 0
    }
}
#endif

/// The first handler of a Logstash connection's pipeline (below TLS): it reads the connection's
/// ``TCPConnectionInfo`` whenever the socket had something to read — a json_lines collector sends nothing, so
/// in practice that is its FIN (NIO fires read-complete before it closes a channel on end of stream) or a TLS
/// close_notify — and when the channel is closed through the pipeline, while the socket still exists.
final class CloseObserver: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    private let record: (TCPConnectionInfo?) -> Void

    init(record: @escaping (TCPConnectionInfo?) -> Void) {
        self.record = record
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        record(TCPConnectionInfo.read(context.channel))
        context.fireChannelReadComplete()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .all {
            record(TCPConnectionInfo.read(context.channel))
        }
        context.close(mode: mode, promise: promise)
    }
}
