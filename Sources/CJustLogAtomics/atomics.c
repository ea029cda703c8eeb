// Most functions are static inline in the header; the futex lock's slow paths (the system calls) are here.
#include "CJustLogAtomics.h"

#if defined(__linux__)
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long futex(uint32_t *word, int operation, uint32_t value, const struct timespec *timeout) {
    return syscall(SYS_futex, word, operation, value, timeout, NULL, 0);
}

// Marks the lock contended (2) and sleeps until an unlock finds it free. Once a thread has slept, it takes the
// lock as contended: it can't know whether others still sleep, so its unlock wakes one (at worst for nothing).
void cjustlog_futex_lock_contended(uint32_t *lock) {
    _Atomic uint32_t *word = (_Atomic uint32_t *)lock;
    while (atomic_exchange_explicit(word, 2, memory_order_acquire) != 0) {
        futex(lock, FUTEX_WAIT_PRIVATE, 2, NULL);
    }
}

void cjustlog_futex_wake_one(uint32_t *lock) { futex(lock, FUTEX_WAKE_PRIVATE, 1, NULL); }

int cjustlog_futex_wait(uint32_t *condition, uint32_t *lock, int64_t nanoseconds) {
    uint32_t seen = atomic_load_explicit((_Atomic uint32_t *)condition, memory_order_relaxed);
    cjustlog_futex_unlock(lock);
    int timedOut = 0;
    if (nanoseconds < 0) {
        futex(condition, FUTEX_WAIT_PRIVATE, seen, NULL);
    } else {
        // A relative timeout, measured by the monotonic clock (FUTEX_WAIT's): a wall clock set back does not
        // stretch it.
        struct timespec timeout = {.tv_sec = (time_t)(nanoseconds / 1000000000), .tv_nsec = (long)(nanoseconds % 1000000000)};
        if (futex(condition, FUTEX_WAIT_PRIVATE, seen, &timeout) == -1 && errno == ETIMEDOUT) timedOut = 1;
    }
    cjustlog_futex_lock_contended(lock);
    return timedOut;
}

void cjustlog_futex_broadcast(uint32_t *condition) {
    atomic_fetch_add_explicit((_Atomic uint32_t *)condition, 1, memory_order_release);
    futex(condition, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}
#endif
