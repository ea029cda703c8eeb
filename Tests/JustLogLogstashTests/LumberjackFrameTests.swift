import Testing

@testable import JustLogLogstash

private func spoolBatch(_ records: [String]) -> SpoolBatch {
    let bytes = Array(records.map { $0 + "\n" }.joined().utf8)
    return SpoolBatch(
        bytes: bytes,
        recordCount: records.count,
        start: .init(segment: 1, offset: 0),
        end: .init(segment: 1, offset: bytes.count)
    )
}

private func decodeAll(_ bytes: [UInt8], chunk: Int = .max) throws -> [LumberjackFrame] {
    var decoder = LumberjackDecoder()
    var frames: [LumberjackFrame] = []
    var start = 0
    while start < bytes.count {
        let end = min(bytes.count, start + chunk)
        decoder.append(bytes[start..<end])
        while let frame = try decoder.next() { frames.append(frame) }
        start = end
    }
    #expect(decoder.bufferedBytes == 0)
    return frames
}

@Suite struct LumberjackFrameTests {
    @Test func windowAndAckFramesAreVersionTypeAndABigEndianNumber() {
        #expect(LumberjackEncoder.window(0x0102_0304) == [0x32, 0x57, 1, 2, 3, 4])
        #expect(LumberjackEncoder.ack(7) == [0x32, 0x41, 0, 0, 0, 7])
    }

    @Test func aJSONFrameCarriesItsSequenceNumberAndLength() {
        var bytes: [UInt8] = []
        LumberjackEncoder.appendJSON(sequence: 3, payload: Array("{}".utf8), to: &bytes)
        #expect(bytes == [0x32, 0x4A, 0, 0, 0, 3, 0, 0, 0, 2, 0x7B, 0x7D])
    }

    @Test(arguments: [0, 1, 3, 9])
    func aBatchBecomesOneWindowOfNumberedJSONFramesCompressedUnlessLevelZero(level: Int) throws {
        let records = (0..<50).map { #"{"message":"event \#($0)","event_id":"e\#($0)"}"# }
        let bytes = LumberjackEncoder.window(of: spoolBatch(records), compressionLevel: level)
        #expect(Array(bytes.prefix(2)) == Array("2W".utf8))
        #expect(bytes[6...7] == (level == 0 ? ArraySlice("2J".utf8) : ArraySlice("2C".utf8)))
        // Byte by byte: frames split anywhere across reads decode the same.
        for chunk in [Int.max, 1, 7] {
            let frames = try decodeAll(bytes, chunk: chunk)
            #expect(frames.first == .window(count: 50))
            #expect(
                frames.dropFirst()
                    == ArraySlice(
                        records.enumerated().map {
                            .json(sequence: UInt32($0.offset + 1), payload: Array($0.element.utf8))
                        }
                    )
            )
        }
    }

    @Test func compressionShrinksRepetitiveEvents() {
        let records = (0..<1000).map { #"{"message":"request \#($0) served","app":"billing","log_type":"info"}"# }
        let plain = LumberjackEncoder.window(of: spoolBatch(records), compressionLevel: 0)
        let compressed = LumberjackEncoder.window(of: spoolBatch(records), compressionLevel: 3)
        print("lumberjack: 1000 events, \(plain.count) bytes uncompressed, \(compressed.count) bytes at level 3")
        #expect(compressed.count * 4 < plain.count)
    }

    @Test func garbageIsAMalformedFrameThatNamesTheBytes() {
        var decoder = LumberjackDecoder()
        decoder.append(Array("GET / HTTP/1.1\r\n".utf8))
        #expect { try decoder.next() } throws: { error in
            let error = error as? LogstashError
            return error?.code == .malformedFrame && error?.message.contains("47 45 54") == true
        }
    }

    @Test(arguments: ["1W", "2X", "2D"])
    func otherVersionsAndFrameTypesAreRefused(header: String) {
        var decoder = LumberjackDecoder()
        decoder.append(Array(header.utf8) + [0, 0, 0, 1, 0, 0, 0, 0])
        #expect(throws: LogstashError.self) { try decoder.next() }
    }

    @Test func aFrameOverTheLimitIsRefusedBeforeItIsBuffered() {
        var decoder = LumberjackDecoder(maxFrameBytes: 1024)
        decoder.append([0x32, 0x4A, 0, 0, 0, 1, 0, 0x10, 0, 0])
        #expect { try decoder.next() } throws: { ($0 as? LogstashError)?.message.contains("exceeds") == true }
    }

    @Test func corruptOrTruncatedZlibDataIsRefused() {
        let good = LumberjackEncoder.compressed(Array(repeating: 0x41, count: 1000), level: 3)
        var corrupt = good
        corrupt[8] ^= 0xFF
        corrupt[9] ^= 0xFF
        var truncated = Array(good.prefix(good.count - 4))
        let length = UInt32(truncated.count - 6)
        truncated.replaceSubrange(
            2..<6,
            with: [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
        )
        for bytes in [corrupt, truncated] {
            var decoder = LumberjackDecoder()
            decoder.append(bytes)
            #expect(throws: LogstashError.self) { try decoder.next() }
        }
    }

    @Test func aCompressedFrameThatInflatesPastTheLimitIsRefused() {
        let bomb = LumberjackEncoder.compressed(Array(repeating: 0, count: 4 << 20), level: 9)
        var decoder = LumberjackDecoder(maxFrameBytes: 1 << 20, maxInflatedBytes: 1 << 20)
        decoder.append(bomb)
        #expect { try decoder.next() } throws: { ($0 as? LogstashError)?.message.contains("inflates past") == true }
    }

    /// A compressed frame inside a compressed frame is refused: each level inflated up to the limit again, so the
    /// limits bounded nothing — 454 bytes nested three deep held about a billion ACK frames, all decoded before the
    /// first was returned (review, helper-53). No Beat nests them. Here 30 ACKs two deep: all 30 were returned.
    @Test func aCompressedFrameInsideACompressedFrameIsRefused() throws {
        let leaf = LumberjackEncoder.compressed(Array((1...10).map { LumberjackEncoder.ack($0) }.joined()), level: 9)
        let nested = LumberjackEncoder.compressed(Array([leaf, leaf, leaf].joined()), level: 9)
        var decoder = LumberjackDecoder(maxFrameBytes: 64 << 10, maxInflatedBytes: 64 << 10)
        decoder.append(nested)
        #expect {
            try decoder.next()
        } throws: {
            ($0 as? LogstashError)?.message.contains("a compressed frame inside a compressed frame") == true
        }
        // One level is a Beat's compressed window, as before.
        #expect(try decodeAll(leaf).count == 10)
    }

    /// A client reads only ACKs from its collector, which never compresses them: a compressed frame there is refused
    /// before it is inflated.
    @Test func aDecoderForACollectorsACKsRefusesACompressedFrame() {
        var decoder = LumberjackDecoder(
            maxFrameBytes: 64 << 10,
            maxInflatedBytes: 64 << 10,
            acceptsCompressedFrames: false
        )
        decoder.append(LumberjackEncoder.compressed(LumberjackEncoder.ack(5), level: 1))
        #expect {
            try decoder.next()
        } throws: {
            ($0 as? LogstashError)?.message.contains("only ACK frames are expected") == true
        }
    }

    @Test func zlibRoundTripsAtEveryLevel() throws {
        let data = Array((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 7) })
        for level in 1...9 {
            #expect(try Zlib.decompress(Zlib.compress(data, level: level)[...], limit: data.count) == data)
        }
        #expect(try Zlib.decompress(Zlib.compress([], level: 3)[...], limit: 0) == [])
    }
}
