// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of the spool's and the journal's records
// (segment format 3). In C because the processor computes it — SSE 4.2's `crc32` instruction on x86-64, the CRC
// extension of ARMv8 — and Swift has no portable way to reach either; a table-driven version (slice-by-8) runs
// where neither is available.
#ifndef CJUSTLOG_CRC32C_H
#define CJUSTLOG_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// Continues a CRC-32C: `crc` is the checksum of the bytes before (0 for none), the result that of all of them.
uint32_t cjustlog_crc32c(uint32_t crc, const void *bytes, size_t count);

/// The CRC-32C of exactly 20 bytes (a record frame's header, checksummed on every append): by the processor, three
/// instructions, without the loops and tails of `cjustlog_crc32c` (which costs twice as much for so few bytes).
uint32_t cjustlog_crc32c_20(const void *bytes);

/// A filled frame's two checksums at once (one call on every log call instead of two): the low 32 bits are the
/// CRC-32C of the `count` bytes of `payload`, the high 32 bits that of the committed header — the 16 bytes at
/// `header` with their first 4 replaced by `magic`, then the payload's checksum (both written little-endian).
uint64_t cjustlog_crc32c_frame(const void *payload, size_t count, const void *header, uint32_t magic);

/// The high half of `cjustlog_crc32c_frame` alone, for a payload whose checksum is `payload_crc` (recovery's check
/// of a frame): the one place that lays out the committed header.
uint32_t cjustlog_crc32c_committed_header(const void *header, uint32_t magic, uint32_t payload_crc);

/// The same, always by table: to check the hardware path against it.
uint32_t cjustlog_crc32c_portable(uint32_t crc, const void *bytes, size_t count);

/// Whether `cjustlog_crc32c` uses the processor's CRC instruction on this machine.
int cjustlog_crc32c_is_hardware(void);

#endif
