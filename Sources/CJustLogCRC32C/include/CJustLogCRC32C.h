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

/// The same, always by table: to check the hardware path against it.
uint32_t cjustlog_crc32c_portable(uint32_t crc, const void *bytes, size_t count);

/// Whether `cjustlog_crc32c` uses the processor's CRC instruction on this machine.
int cjustlog_crc32c_is_hardware(void);

#endif
