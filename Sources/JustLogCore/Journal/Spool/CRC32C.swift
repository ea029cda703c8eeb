import CJustLogCRC32C

// MARK: - CRC-32C (Castagnoli, reflected, polynomial 0x82F63B78)

/// The checksum of the spool's records (segment format 3): CRC-32C, which x86-64 (SSE 4.2) and ARMv8 compute in
/// one instruction per 8 bytes — a record's checksum costs tens of instructions on the log call's thread, where
/// the table-driven CRC-32 of format 2 cost about five per byte. Where the processor can't, a table is used.
package enum CRC32C {
    /// The CRC-32C of `bytes`.
    @inline(__always)
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        cjustlog_crc32c(0, bytes.baseAddress, bytes.count)
    }

    /// The CRC-32C of the 20 bytes at `bytes` (a frame's header): the same as ``checksum(_:)`` of them, in a third of
    /// its instructions.
    @inline(__always)
    package static func checksum(twentyBytesAt bytes: UnsafeRawPointer) -> UInt32 {
        cjustlog_crc32c_20(bytes)
    }

    /// A filled frame's two checksums in one call: the low 32 bits are ``checksum(_:)`` of `payload`, the high 32
    /// bits ``checksum(twentyBytesAt:)`` of the committed header — the 16 bytes at `header` with `magic` in place of
    /// their first 4, then the payload's checksum (both little-endian).
    @inline(__always)
    package static func frameChecksums(
        _ payload: UnsafeRawBufferPointer,
        header: UnsafeRawPointer,
        magic: UInt32
    ) -> UInt64 {
        cjustlog_crc32c_frame(payload.baseAddress, payload.count, header, magic)
    }

    /// ``frameChecksums(_:header:magic:)``'s high half alone, for a payload whose checksum is `payloadCRC`.
    @inline(__always)
    package static func committedHeaderChecksum(header: UnsafeRawPointer, magic: UInt32, payloadCRC: UInt32) -> UInt32 {
        cjustlog_crc32c_committed_header(header, magic, payloadCRC)
    }

    /// The same by table, whatever the processor: to check the instruction against.
    package static func portableChecksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        cjustlog_crc32c_portable(0, bytes.baseAddress, bytes.count)
    }

    /// Whether ``checksum(_:)`` uses the processor's instruction here.
    package static var isComputedByTheProcessor: Bool { cjustlog_crc32c_is_hardware() != 0 }
}
