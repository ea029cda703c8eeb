#include "CJustLogCRC32C.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#define CJUSTLOG_CRC32C_X86 1
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define CJUSTLOG_CRC32C_ARM 1
#endif

// MARK: - By table (slice-by-8)

// table[k][b]: the CRC register after byte b followed by k zero bytes. Built once, before main.
static uint32_t table[8][256];

__attribute__((constructor)) static void build_table(void) {
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        table[0][byte] = crc;
    }
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = table[0][byte];
        for (int slice = 1; slice < 8; slice++) {
            crc = table[0][crc & 0xFF] ^ (crc >> 8);
            table[slice][byte] = crc;
        }
    }
}

uint32_t cjustlog_crc32c_portable(uint32_t crc, const void *bytes, size_t count) {
    const uint8_t *p = bytes;
    crc = ~crc;
    while (count >= 8) {
        uint32_t low, high;
        memcpy(&low, p, 4);
        memcpy(&high, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        low = __builtin_bswap32(low);
        high = __builtin_bswap32(high);
#endif
        low ^= crc;
        crc = table[7][low & 0xFF] ^ table[6][(low >> 8) & 0xFF] ^ table[5][(low >> 16) & 0xFF] ^ table[4][low >> 24]
            ^ table[3][high & 0xFF] ^ table[2][(high >> 8) & 0xFF] ^ table[1][(high >> 16) & 0xFF]
            ^ table[0][high >> 24];
        p += 8;
        count -= 8;
    }
    while (count--) crc = table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

// MARK: - By the processor

#if CJUSTLOG_CRC32C_X86
__attribute__((target("sse4.2"))) static uint32_t hardware(uint32_t crc, const void *bytes, size_t count) {
    const uint8_t *p = bytes;
    uint64_t register64 = ~crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        register64 = _mm_crc32_u64(register64, word);
        p += 8;
        count -= 8;
    }
    uint32_t register32 = (uint32_t)register64;
    if (count >= 4) {
        uint32_t word;
        memcpy(&word, p, 4);
        register32 = _mm_crc32_u32(register32, word);
        p += 4;
        count -= 4;
    }
    if (count >= 2) {
        uint16_t half;
        memcpy(&half, p, 2);
        register32 = _mm_crc32_u16(register32, half);
        p += 2;
        count -= 2;
    }
    if (count) register32 = _mm_crc32_u8(register32, *p);
    return ~register32;
}

__attribute__((target("sse4.2"))) static uint32_t hardware_20(const void *bytes) {
    uint64_t words[2];
    uint32_t last;
    memcpy(words, bytes, 16);
    memcpy(&last, (const uint8_t *)bytes + 16, 4);
    uint64_t register64 = _mm_crc32_u64(0xFFFFFFFFu, words[0]);
    register64 = _mm_crc32_u64(register64, words[1]);
    return ~_mm_crc32_u32((uint32_t)register64, last);
}

static int hardware_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}
#elif CJUSTLOG_CRC32C_ARM
static uint32_t hardware(uint32_t crc, const void *bytes, size_t count) {
    const uint8_t *p = bytes;
    crc = ~crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __crc32cd(crc, word);
        p += 8;
        count -= 8;
    }
    if (count >= 4) {
        uint32_t word;
        memcpy(&word, p, 4);
        crc = __crc32cw(crc, word);
        p += 4;
        count -= 4;
    }
    if (count >= 2) {
        uint16_t half;
        memcpy(&half, p, 2);
        crc = __crc32ch(crc, half);
        p += 2;
        count -= 2;
    }
    if (count) crc = __crc32cb(crc, *p);
    return ~crc;
}

static uint32_t hardware_20(const void *bytes) {
    uint64_t words[2];
    uint32_t last;
    memcpy(words, bytes, 16);
    memcpy(&last, (const uint8_t *)bytes + 16, 4);
    return ~__crc32cw(__crc32cd(__crc32cd(0xFFFFFFFFu, words[0]), words[1]), last);
}

static int hardware_available(void) { return 1; }
#endif

// Chosen once, before main (and so before any thread can call it).
static int use_hardware;

__attribute__((constructor)) static void choose(void) {
#if CJUSTLOG_CRC32C_X86 || CJUSTLOG_CRC32C_ARM
    use_hardware = hardware_available();
#endif
}

uint32_t cjustlog_crc32c(uint32_t crc, const void *bytes, size_t count) {
#if CJUSTLOG_CRC32C_X86 || CJUSTLOG_CRC32C_ARM
    if (use_hardware) return hardware(crc, bytes, count);
#endif
    return cjustlog_crc32c_portable(crc, bytes, count);
}

uint32_t cjustlog_crc32c_20(const void *bytes) {
#if CJUSTLOG_CRC32C_X86 || CJUSTLOG_CRC32C_ARM
    if (use_hardware) return hardware_20(bytes);
#endif
    return cjustlog_crc32c_portable(0, bytes, 20);
}

int cjustlog_crc32c_is_hardware(void) { return use_hardware; }

static void store_le32(uint8_t *bytes, uint32_t value) {
    bytes[0] = (uint8_t)value;
    bytes[1] = (uint8_t)(value >> 8);
    bytes[2] = (uint8_t)(value >> 16);
    bytes[3] = (uint8_t)(value >> 24);
}

// The committed header (see the declaration) of the frame at `header`, with `payload_crc`, into `committed`.
static inline void committed_header(uint8_t committed[20], const void *header, uint32_t magic, uint32_t payload_crc) {
    memcpy(committed, header, 16);
    store_le32(committed, magic);
    store_le32(committed + 16, payload_crc);
}

#if CJUSTLOG_CRC32C_X86
#define CJUSTLOG_HARDWARE_TARGET __attribute__((target("sse4.2")))
#elif CJUSTLOG_CRC32C_ARM
#define CJUSTLOG_HARDWARE_TARGET
#endif

#if CJUSTLOG_CRC32C_X86 || CJUSTLOG_CRC32C_ARM
// Its own function with the processor's target, so that both checksums inline into it: one call a log call.
CJUSTLOG_HARDWARE_TARGET static uint64_t hardware_frame(
    const void *payload, size_t count, const void *header, uint32_t magic
) {
    uint8_t committed[20];
    uint32_t payload_crc = hardware(0, payload, count);
    committed_header(committed, header, magic, payload_crc);
    return (uint64_t)payload_crc | (uint64_t)hardware_20(committed) << 32;
}
#endif

uint64_t cjustlog_crc32c_frame(const void *payload, size_t count, const void *header, uint32_t magic) {
#if CJUSTLOG_CRC32C_X86 || CJUSTLOG_CRC32C_ARM
    if (use_hardware) return hardware_frame(payload, count, header, magic);
#endif
    uint8_t committed[20];
    uint32_t payload_crc = cjustlog_crc32c_portable(0, payload, count);
    committed_header(committed, header, magic, payload_crc);
    return (uint64_t)payload_crc | (uint64_t)cjustlog_crc32c_portable(0, committed, 20) << 32;
}

uint32_t cjustlog_crc32c_committed_header(const void *header, uint32_t magic, uint32_t payload_crc) {
    uint8_t committed[20];
    committed_header(committed, header, magic, payload_crc);
    return cjustlog_crc32c_20(committed);
}
