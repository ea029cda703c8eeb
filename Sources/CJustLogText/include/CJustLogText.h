// What JSON escaping asks of the processor: how many bytes at the start of a text need no escape, sixteen at a
// time (SSE2, in every x86-64). Elsewhere it answers 0 and the Swift code checks eight bytes at a time itself.
#ifndef CJUSTLOG_TEXT_H
#define CJUSTLOG_TEXT_H

#include <stddef.h>
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The length of the longest prefix of `bytes` (in whole blocks of 16, or up to the first byte found) with no byte
// below 0x20, no `"` (0x22), `\` (0x5C), DEL (0x7F) or 0xE2 (the lead byte of U+2028 and U+2029): the bytes a
// JSON string literal copies as they are. The bytes after it are for the caller to look at.
static inline size_t cjustlog_json_clean_prefix(const uint8_t *bytes, size_t count) {
#if defined(__SSE2__)
    // Bytes below 0x20, compared signed after flipping their high bit: 0x00...0x1F become -128...-97, below -96.
    const __m128i flip = _mm_set1_epi8((char)0x80);
    const __m128i control = _mm_set1_epi8((char)(0x20 ^ 0x80));
    const __m128i quote = _mm_set1_epi8(0x22);
    const __m128i backslash = _mm_set1_epi8(0x5C);
    const __m128i delete = _mm_set1_epi8(0x7F);
    const __m128i lead = _mm_set1_epi8((char)0xE2);
    size_t offset = 0;
    for (; offset + 16 <= count; offset += 16) {
        __m128i block = _mm_loadu_si128((const __m128i *)(const void *)(bytes + offset));
        __m128i found = _mm_or_si128(
            _mm_or_si128(_mm_cmplt_epi8(_mm_xor_si128(block, flip), control), _mm_cmpeq_epi8(block, quote)),
            _mm_or_si128(
                _mm_cmpeq_epi8(block, backslash),
                _mm_or_si128(_mm_cmpeq_epi8(block, delete), _mm_cmpeq_epi8(block, lead))));
        int mask = _mm_movemask_epi8(found);
        if (mask != 0) return offset + (size_t)__builtin_ctz((unsigned)mask);
    }
    return offset;
#else
    (void)bytes;
    (void)count;
    return 0;
#endif
}

#endif
