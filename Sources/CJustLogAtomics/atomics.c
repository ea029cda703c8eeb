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

// How many times a thread that finds the lock taken looks again before it sleeps: the lock's holders keep it for a
// few hundred instructions (a log call's append, the worker's counters), far less than sleeping and being woken
// costs both threads (two system calls and a context switch, ~5 µs each side).
enum { cjustlog_futex_spins = 128 };

// Spins a while for the lock to be free (then takes it uncontended, 1); else marks it contended (2) and sleeps until
// an unlock finds it free. Once a thread has slept, it takes the lock as contended: it can't know whether others
// still sleep, so its unlock wakes one (at worst for nothing).
void cjustlog_futex_lock_contended(uint32_t *lock) {
    _Atomic uint32_t *word = (_Atomic uint32_t *)lock;
    for (int spin = 0; spin < cjustlog_futex_spins; spin++) {
        cjustlog_cpu_relax();
        if (atomic_load_explicit(word, memory_order_relaxed) != 0) continue;
        uint32_t expected = 0;
        if (atomic_compare_exchange_weak_explicit(word, &expected, 1, memory_order_acquire, memory_order_relaxed))
            return;
    }
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
