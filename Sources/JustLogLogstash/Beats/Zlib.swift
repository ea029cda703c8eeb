import CJustLogZlib

/// zlib streams (RFC 1950) for Lumberjack v2 compressed frames (`2C`), on the system's zlib.
package enum Zlib {
    /// Compresses `bytes` into one zlib stream at `level` (1 fastest … 9 smallest; clamped).
    package static func compress(_ bytes: [UInt8], level: Int) -> [UInt8] {
        var stream = z_stream()
        let level = Int32(min(max(level, 1), 9))
        guard deflateInit_(&stream, level, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            preconditionFailure("zlib: deflateInit failed (out of memory)")
        }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(bytes.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let produced = bytes.withUnsafeBufferPointer { input -> Int in
            output.withUnsafeMutableBufferPointer { out -> Int in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                // The output buffer holds deflateBound bytes: one call finishes the stream.
                let status = deflate(&stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "zlib: deflate did not finish within deflateBound (\(status))")
                return out.count - Int(stream.avail_out)
            }
        }
        output.removeLast(output.count - produced)
        return output
    }

    /// Decompresses one zlib stream, refusing to produce more than `limit` bytes.
    ///
    /// - Throws: ``LogstashError`` with ``LogstashError/Code/malformedFrame`` for data that is not a
    ///   complete zlib stream, or that inflates past `limit`.
    package static func decompress(_ bytes: ArraySlice<UInt8>, limit: Int) throws -> [UInt8] {
        var stream = z_stream()
        guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw LogstashError(code: .malformedFrame, message: "zlib: inflateInit failed")
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        try bytes.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { out -> (Int32, Int) in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    let status = inflate(&stream, Z_NO_FLUSH)
                    return (status, out.count - Int(stream.avail_out))
                }
                output.append(contentsOf: chunk[0..<produced])
                if output.count > limit {
                    throw LogstashError(
                        code: .malformedFrame,
                        message: "a compressed frame inflates past \(limit) bytes"
                    )
                }
                switch status {
                case Z_STREAM_END:
                    return
                case Z_OK:
                    continue
                case Z_BUF_ERROR where stream.avail_in == 0:
                    throw LogstashError(
                        code: .malformedFrame,
                        message: "a compressed frame ends in the middle of its zlib stream"
                    )
                default:
                    let reason = stream.msg.map { String(cString: $0) } ?? "error \(status)"
                    throw LogstashError(
                        code: .malformedFrame,
                        message: "a compressed frame is not valid zlib data (\(reason))"
                    )
                }
            }
        }
        return output
    }
}
