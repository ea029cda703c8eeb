// A relaxed atomic byte, for the one value every log call reads before anything else: the lowest level any
// destination takes. C11 atomics, because Swift's `Synchronization.Atomic` needs macOS 15 / iOS 18 and the
// package supports older systems; ThreadSanitizer understands both.
#ifndef CJUSTLOG_ATOMICS_H
#define CJUSTLOG_ATOMICS_H

#include <stdatomic.h>
#include <stdint.h>

static inline uint8_t cjustlog_atomic_load_u8(const uint8_t *value) {
    return atomic_load_explicit((const _Atomic uint8_t *)value, memory_order_relaxed);
}

static inline void cjustlog_atomic_store_u8(uint8_t *value, uint8_t newValue) {
    atomic_store_explicit((_Atomic uint8_t *)value, newValue, memory_order_relaxed);
}

#endif
