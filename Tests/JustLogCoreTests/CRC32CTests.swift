import Testing

@testable import JustLogCore

/// The records' checksum (segment format 3): the processor's instruction must agree with the table, and both with
/// the standard.
@Suite struct CRC32CTests {
    private func checksum(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { CRC32C.checksum($0) } }

    @Test func theStandardCheckValues() {
        #expect(checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(checksum([]) == 0)
        // RFC 3720 (iSCSI), B.4: 32 bytes of zeros, of 0xFF, ascending, descending.
        #expect(checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(checksum((0..<32).map(UInt8.init)) == 0x46DD_794E)
        #expect(checksum((0..<32).reversed().map(UInt8.init)) == 0x113F_DB5C)
    }

    @Test func theProcessorAgreesWithTheTableAtEveryLengthAndAlignment() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<600).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { all in
            for start in 0..<9 {
                for length in Array(0...72) + [95, 96, 97, 200, 511, 591] where start + length <= all.count {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + length)])
                    #expect(CRC32C.checksum(slice) == CRC32C.portableChecksum(slice), "at \(start), \(length) bytes")
                }
            }
        }
        // Said, so that a run on a machine without the instruction shows it (the table is then what is checked).
        print("CRC-32C computed by the processor: \(CRC32C.isComputedByTheProcessor)")
    }

    @Test func aFrameHeadersChecksumIsTheChecksumOfItsTwentyBytesAtEveryAlignment() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let bytes = (0..<28).map { _ in UInt8.random(in: 0...255, using: &generator) }
            bytes.withUnsafeBytes { all in
                for start in 0..<8 {
                    let header = UnsafeRawBufferPointer(rebasing: all[start..<(start + 20)])
                    #expect(CRC32C.checksum(twentyBytesAt: header.baseAddress!) == CRC32C.portableChecksum(header))
                }
            }
        }
        // The standard check input padded with 11 zero bytes: a fixed answer (computed bit by bit), not only agreement.
        let padded = Array("123456789".utf8) + [UInt8](repeating: 0, count: 11)
        padded.withUnsafeBytes { #expect(CRC32C.checksum(twentyBytesAt: $0.baseAddress!) == 0x5E03_4597) }
    }

    @Test func aFilledFramesTwoChecksumsAreThePayloadsAndTheCommittedHeadersAtEveryLength() {
        // One call computes what the fill stores: the payload's checksum, and the header's with the frame magic in
        // place of its first four bytes and the payload's checksum after it (both little-endian).
        var generator = SystemRandomNumberGenerator()
        let magic: UInt32 = 0x3252_4AF9
        for length in Array(1...40) + [63, 64, 65, 200, 1_000] {
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let header = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let both = payload.withUnsafeBytes { payloadBytes in
                header.withUnsafeBytes { CRC32C.frameChecksums(payloadBytes, header: $0.baseAddress!, magic: magic) }
            }
            let payloadCRC = payload.withUnsafeBytes { CRC32C.portableChecksum($0) }
            var committed = header
            withUnsafeBytes(of: magic.littleEndian) { committed.replaceSubrange(0..<4, with: $0) }
            withUnsafeBytes(of: payloadCRC.littleEndian) { committed.append(contentsOf: $0) }
            let headerCRC = committed.withUnsafeBytes { CRC32C.portableChecksum($0) }
            #expect(UInt32(truncatingIfNeeded: both) == payloadCRC, "payload of \(length) bytes")
            #expect(UInt32(truncatingIfNeeded: both >> 32) == headerCRC, "header after \(length) bytes")
        }
    }
}
