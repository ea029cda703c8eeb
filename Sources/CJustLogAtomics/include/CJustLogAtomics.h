// Atomics for what every log call reads without a lock: a relaxed byte (the lowest level any destination takes)
// and a sequence lock of a few words (what a plain call needs to encode its record). C11 atomics, because Swift's
// `Synchronization.Atomic` needs macOS 15 / iOS 18 and the package supports older systems; ThreadSanitizer
// understands both (every word is read and written atomically, so a reader racing the writer is no data race).
// And, on Linux, the futex lock every log call takes (the pipeline's queue, the journal's spool): see its section.
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

// A byte that publishes what was written before it (a journal frame's commit mark: see `SpoolSegment`). A byte,
// because frames start at any offset: a wider atomic would be misaligned, which some processors fault on.
static inline uint8_t cjustlog_atomic_load_acquire_u8(const uint8_t *value) {
    return atomic_load_explicit((const _Atomic uint8_t *)value, memory_order_acquire);
}

static inline void cjustlog_atomic_store_release_u8(uint8_t *value, uint8_t newValue) {
    atomic_store_explicit((_Atomic uint8_t *)value, newValue, memory_order_release);
}

static inline uint64_t cjustlog_atomic_load_acquire_u64(const uint64_t *value) {
    return atomic_load_explicit((const _Atomic uint64_t *)value, memory_order_acquire);
}

// A word one thread sets and others spin on, reading only (`justlog bench`'s start of a round): a spinner that took
// a lock to look would keep the setter from taking it.
static inline void cjustlog_atomic_store_release_u64(uint64_t *value, uint64_t newValue) {
    atomic_store_explicit((_Atomic uint64_t *)value, newValue, memory_order_release);
}

// What a spinning thread does between two looks: tells the processor it spins (a pause), which costs the thread
// it waits for less.
static inline void cjustlog_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

// Asks the processor to bring the cache line at `address` in for reading, without waiting for it (nothing is read
// that the program sees: any address will do). The pipeline's thread reads journal records a log call wrote on
// another core: it asks for the lines ahead of the frame it walks, whose next step waits for its length.
static inline void cjustlog_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

// MARK: - A sequence lock: a version and seven values

#define CJUSTLOG_SEQLOCK_WORDS 7

// `version` is odd while the one writer (which holds a lock of its own) changes `values`.
typedef struct {
    uint64_t version;
    uint64_t values[CJUSTLOG_SEQLOCK_WORDS];
} cjustlog_seqlock;

typedef struct {
    // 0 when the values were being changed: read again later, or take the slow path.
    uint64_t version;
    uint64_t values[CJUSTLOG_SEQLOCK_WORDS];
} cjustlog_seqlock_snapshot;

// A consistent copy of the values with the (even) version they had, or version 0 if a write overlapped.
static inline cjustlog_seqlock_snapshot cjustlog_seqlock_read(const cjustlog_seqlock *lock) {
    cjustlog_seqlock_snapshot snapshot;
    uint64_t before = atomic_load_explicit((const _Atomic uint64_t *)&lock->version, memory_order_acquire);
    for (int index = 0; index < CJUSTLOG_SEQLOCK_WORDS; index++) {
        snapshot.values[index] =
            atomic_load_explicit((const _Atomic uint64_t *)&lock->values[index], memory_order_relaxed);
    }
    atomic_thread_fence(memory_order_acquire);
    uint64_t after = atomic_load_explicit((const _Atomic uint64_t *)&lock->version, memory_order_relaxed);
    snapshot.version = (before == after && (before & 1) == 0) ? before : 0;
    return snapshot;
}

// Replaces the values; returns the new (even, non-zero) version. One writer at a time.
static inline uint64_t cjustlog_seqlock_write(cjustlog_seqlock *lock, const uint64_t *values) {
    uint64_t version = atomic_load_explicit((_Atomic uint64_t *)&lock->version, memory_order_relaxed);
    atomic_store_explicit((_Atomic uint64_t *)&lock->version, version + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (int index = 0; index < CJUSTLOG_SEQLOCK_WORDS; index++) {
        atomic_store_explicit((_Atomic uint64_t *)&lock->values[index], values[index], memory_order_relaxed);
    }
    atomic_store_explicit((_Atomic uint64_t *)&lock->version, version + 2, memory_order_release);
    return version + 2;
}


// MARK: - A futex lock and condition (Linux)

// The pipeline's queue is locked by every log call; glibc's `pthread_mutex_lock`/`unlock` cost ~80 instructions a
// pair even uncontended (type dispatch, owner and count bookkeeping). This lock costs an atomic compare-and-swap to
// take and an exchange to release while uncontended, and sleeps in the kernel otherwise ("Futexes Are Tricky", U. Drepper, mutex 3): the word is 0
// (free), 1 (locked) or 2 (locked, someone may sleep on it). The condition is a counter that `broadcast` bumps
// and `wait` sleeps on while it is unchanged; every predicate it guards is read and written under the lock, so a
// bump between the waiter's unlock and its sleep makes the sleep return at once (no lost wake-up). Waits may also
// return spuriously: callers loop on their predicate, as with pthread conditions.
#if defined(__linux__)

void cjustlog_futex_lock_contended(uint32_t *lock);
void cjustlog_futex_wake_one(uint32_t *lock);

static inline void cjustlog_futex_lock(uint32_t *lock) {
    uint32_t expected = 0;
    if (!atomic_compare_exchange_strong_explicit((_Atomic uint32_t *)lock, &expected, 1, memory_order_acquire,
                                                 memory_order_relaxed)) {
        cjustlog_futex_lock_contended(lock);
    }
}

static inline void cjustlog_futex_unlock(uint32_t *lock) {
    if (atomic_exchange_explicit((_Atomic uint32_t *)lock, 0, memory_order_release) == 2) cjustlog_futex_wake_one(lock);
}

// Releases `lock`, sleeps until `condition` is bumped (or `nanoseconds` passed, if not negative), takes `lock`
// again. Returns 0 when woken (or spuriously), 1 when the time ran out.
int cjustlog_futex_wait(uint32_t *condition, uint32_t *lock, int64_t nanoseconds);

// Wakes every thread waiting on `condition`.
void cjustlog_futex_broadcast(uint32_t *condition);

#endif

#endif
