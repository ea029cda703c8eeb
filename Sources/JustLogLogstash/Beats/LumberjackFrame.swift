/// One frame of the Lumberjack v2 protocol that Beats (Filebeat, …) speak to Logstash's `beats` input.
///
/// Every frame starts with the version byte `'2'` and a type byte; integers are big-endian `UInt32`:
/// - `2W count`: the client's window, how many events follow before it waits for their ACK;
/// - `2J seq length payload`: one event as JSON, numbered 1, 2, … within the window;
/// - `2C length zlib-data`: frames (usually a window's `2J` frames) compressed into one zlib stream;
/// - `2A seq`: the server's acknowledgement: every event up to `seq` of the window is in its queue. A server
///   that is still busy repeats its last ACK (or sends `0` before the first) as a keep-alive.
///
/// ``LumberjackDecoder`` returns the frames inside a `2C` frame in place of it, so this type has no
/// compressed case; ``LumberjackEncoder`` writes them.
package enum LumberjackFrame: Sendable, Hashable {
    case window(count: UInt32)
    case json(sequence: UInt32, payload: [UInt8])
    case ack(sequence: UInt32)

    /// How error messages name the frame.
    package var kind: String {
        switch self {
        case .window(let count): "a window frame (2W \(count))"
        case .json(let sequence, _): "a JSON data frame (2J \(sequence))"
        case .ack(let sequence): "an ACK (2A \(sequence))"
        }
    }
}

/// Writes Lumberjack v2 frames (see ``LumberjackFrame``).
package enum LumberjackEncoder {
    static let version = UInt8(ascii: "2")

    package static func window(_ count: UInt32) -> [UInt8] {
        var bytes = [version, UInt8(ascii: "W")]
        appendUInt32(count, to: &bytes)
        return bytes
    }

    package static func ack(_ sequence: UInt32) -> [UInt8] {
        var bytes = [version, UInt8(ascii: "A")]
        appendUInt32(sequence, to: &bytes)
        return bytes
    }

    package static func appendJSON(sequence: UInt32, payload: some Collection<UInt8>, to bytes: inout [UInt8]) {
        bytes.append(version)
        bytes.append(UInt8(ascii: "J"))
        appendUInt32(sequence, to: &bytes)
        appendUInt32(UInt32(payload.count), to: &bytes)
        bytes.append(contentsOf: payload)
    }

    /// `frames` compressed into one `2C` frame.
    package static func compressed(_ frames: [UInt8], level: Int) -> [UInt8] {
        let data = Zlib.compress(frames, level: level)
        var bytes = [version, UInt8(ascii: "C")]
        bytes.reserveCapacity(data.count + 6)
        appendUInt32(UInt32(data.count), to: &bytes)
        bytes.append(contentsOf: data)
        return bytes
    }

    /// One window for a spool batch (records separated by `\n`): `2W n`, then `2J` frames numbered 1…n —
    /// compressed into one `2C` frame unless `compressionLevel` is 0.
    package static func window(of batch: SpoolBatch, compressionLevel: Int) -> [UInt8] {
        var frames: [UInt8] = []
        frames.reserveCapacity(batch.bytes.count + 10 * batch.recordCount)
        var sequence: UInt32 = 0
        var start = 0
        let bytes = batch.bytes
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            sequence += 1
            appendJSON(sequence: sequence, payload: bytes[start..<end], to: &frames)
            start = end + 1
        }
        let header = window(sequence)
        if compressionLevel <= 0 { return header + frames }
        return header + compressed(frames, level: compressionLevel)
    }

    static func appendUInt32(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 24))
        bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }
}

/// Splits a byte stream into Lumberjack v2 frames, inflating compressed ones; memory is bounded by the
/// limits. Feed it with ``append(_:)`` and take frames with ``next()`` until it returns `nil`.
package struct LumberjackDecoder: Sendable {
    /// The largest `2J` payload or `2C` frame accepted.
    package var maxFrameBytes: Int
    /// The most bytes one `2C` frame may inflate to.
    package var maxInflatedBytes: Int
    /// Whether `2C` frames are taken at all: a Beat compresses its windows; a collector never compresses its ACKs,
    /// and a client reading them takes none (review, helper-53: a few hundred bytes of nested frames from the
    /// collector asked for gigabytes).
    package var acceptsCompressedFrames: Bool

    /// The decoder reads the inside of a `2C` frame: another `2C` there is refused. No Beat nests them, and each
    /// level inflates up to ``maxInflatedBytes`` again — 454 bytes nested three deep held a billion ACK frames
    /// (helper-53).
    private var isInsideCompressedFrame = false

    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Frames taken out of a compressed frame, not yet returned.
    private var inflated: [LumberjackFrame] = []
    private var inflatedIndex = 0

    package init(maxFrameBytes: Int = 64 << 20, maxInflatedBytes: Int = 256 << 20, acceptsCompressedFrames: Bool = true)
    {
        self.maxFrameBytes = maxFrameBytes
        self.maxInflatedBytes = maxInflatedBytes
        self.acceptsCompressedFrames = acceptsCompressedFrames
    }

    /// Bytes received and not yet decoded.
    package var bufferedBytes: Int { buffer.count - readIndex }

    package mutating func append(_ bytes: some Sequence<UInt8>) {
        if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, or `nil` when more bytes are needed.
    ///
    /// - Throws: ``LogstashError`` with ``LogstashError/Code/malformedFrame``: the stream can't be decoded
    ///   further (the connection should be closed).
    package mutating func next() throws -> LumberjackFrame? {
        if inflatedIndex < inflated.count {
            defer {
                inflatedIndex += 1
                if inflatedIndex == inflated.count {
                    inflated.removeAll(keepingCapacity: true)
                    inflatedIndex = 0
                }
            }
            return inflated[inflatedIndex]
        }
        guard bufferedBytes >= 2 else { return nil }
        let version = buffer[readIndex]
        let type = buffer[readIndex + 1]
        guard version == LumberjackEncoder.version else {
            throw LogstashError(
                code: .malformedFrame,
                message: version == UInt8(ascii: "1")
                    ? "a Lumberjack v1 frame: only version 2 (Beats 5.0 and later) is spoken here"
                    : "not a Lumberjack v2 frame (first bytes \(Self.hex(buffer[readIndex..<min(buffer.count, readIndex + 8)]))): the peer may not speak the Beats protocol"
            )
        }
        switch type {
        case UInt8(ascii: "W"), UInt8(ascii: "A"):
            guard let value = uint32(at: readIndex + 2) else { return nil }
            readIndex += 6
            return type == UInt8(ascii: "W") ? .window(count: value) : .ack(sequence: value)
        case UInt8(ascii: "J"):
            guard let sequence = uint32(at: readIndex + 2), let length = uint32(at: readIndex + 6) else { return nil }
            guard Int(length) <= maxFrameBytes else {
                throw LogstashError(
                    code: .malformedFrame,
                    message: "a JSON frame of \(length) bytes exceeds the \(maxFrameBytes)-byte limit"
                )
            }
            guard bufferedBytes >= 10 + Int(length) else { return nil }
            let payload = Array(buffer[(readIndex + 10)..<(readIndex + 10 + Int(length))])
            readIndex += 10 + Int(length)
            return .json(sequence: sequence, payload: payload)
        case UInt8(ascii: "C"):
            guard acceptsCompressedFrames, !isInsideCompressedFrame else {
                throw LogstashError(
                    code: .malformedFrame,
                    message: isInsideCompressedFrame
                        ? "a compressed frame inside a compressed frame (no Beat sends one)"
                        : "a compressed frame where only ACK frames are expected"
                )
            }
            guard let length = uint32(at: readIndex + 2) else { return nil }
            guard Int(length) <= maxFrameBytes else {
                throw LogstashError(
                    code: .malformedFrame,
                    message: "a compressed frame of \(length) bytes exceeds the \(maxFrameBytes)-byte limit"
                )
            }
            guard bufferedBytes >= 6 + Int(length) else { return nil }
            let data = buffer[(readIndex + 6)..<(readIndex + 6 + Int(length))]
            readIndex += 6 + Int(length)
            var inner = LumberjackDecoder(maxFrameBytes: maxFrameBytes, maxInflatedBytes: maxInflatedBytes)
            inner.isInsideCompressedFrame = true
            inner.append(try Zlib.decompress(data, limit: maxInflatedBytes))
            var frames: [LumberjackFrame] = []
            while let frame = try inner.next() { frames.append(frame) }
            guard inner.bufferedBytes == 0 else {
                throw LogstashError(
                    code: .malformedFrame,
                    message: "a compressed frame ends in the middle of a frame (\(inner.bufferedBytes) bytes left over)"
                )
            }
            inflated = frames
            inflatedIndex = 0
            return try next()
        case UInt8(ascii: "D"):
            throw LogstashError(
                code: .malformedFrame,
                message:
                    "a 2D (key/value) data frame: only 2J JSON frames are supported (every Beat since 5.0 sends them)"
            )
        default:
            throw LogstashError(
                code: .malformedFrame,
                message: "unknown Lumberjack v2 frame type 0x\(String(type, radix: 16))"
            )
        }
    }

    private func uint32(at index: Int) -> UInt32? {
        guard index + 4 <= buffer.count else { return nil }
        return UInt32(buffer[index]) << 24 | UInt32(buffer[index + 1]) << 16 | UInt32(buffer[index + 2]) << 8
            | UInt32(buffer[index + 3])
    }

    private static func hex(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(
            separator: " "
        )
    }
}
