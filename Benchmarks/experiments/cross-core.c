// What two threads pay on this machine for sharing cache lines under one lock, without a logger: first the round
// trip of one line between the two cores (ping-pong), then a model of a log call — take a spin lock, write N
// lines that every caller writes, release, then ~150 iterations of private work — timed on one thread and on two
// at once (each pinned to a core of its own), in 40 rounds of each that alternate (this VM's speed drifts from
// minute to minute; alternating rounds see the same drift), for N = 0, 2, 4, 6, 8. The ratio "one thread's ns a call ÷ two
// threads' aggregate ns a call" is the two-thread figure such a call can reach here (2.0: no cost; 1.0: the two
// threads take turns). The documented call writes ~7 shared lines under two locks (BENCHMARKS.md, part 37).
//
//   cc -O2 -pthread Benchmarks/experiments/cross-core.c -o /tmp/cross-core && /tmp/cross-core
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

enum { roundTrips = 2000000, calls = 100000, rounds = 40 };
static _Alignas(128) _Atomic int flag;
static _Alignas(128) _Atomic uint32_t lockWord;
static _Alignas(128) volatile uint64_t shared[16][16];  // 16 lines of 128 bytes
static int sharedLines;

static void *pong(void *argument) {
    (void)argument;
    pin(1);
    for (int i = 0; i < roundTrips; i++) {
        while (atomic_load_explicit(&flag, memory_order_acquire) != 1) {}
        atomic_store_explicit(&flag, 0, memory_order_release);
    }
    return NULL;
}

static void privateWork(int count) {
    volatile uint64_t sum = 0;
    for (int i = 0; i < count; i++) sum += (uint64_t)i;
}

static void *caller(void *argument) {
    pin((int)(intptr_t)argument);
    for (long i = 0; i < calls; i++) {
        uint32_t expected = 0;
        while (!atomic_compare_exchange_weak_explicit(&lockWord, &expected, 1, memory_order_acquire,
                                                      memory_order_relaxed)) {
            expected = 0;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#elif defined(__aarch64__)
            __asm__ __volatile__("yield");
#endif
        }
        for (int line = 0; line < sharedLines; line++) shared[line][0]++;
        atomic_store_explicit(&lockWord, 0, memory_order_release);
        privateWork(150);
    }
    return NULL;
}

int main(void) {
    pin(0);
    pthread_t other;
    pthread_create(&other, NULL, pong, NULL);
    double start = now();
    for (int i = 0; i < roundTrips; i++) {
        atomic_store_explicit(&flag, 1, memory_order_release);
        while (atomic_load_explicit(&flag, memory_order_acquire) != 0) {}
    }
    pthread_join(other, NULL);
    printf("a cache line's round trip between the two cores: %.1f ns\n", (now() - start) / roundTrips * 1e9);
    for (sharedLines = 0; sharedLines <= 8; sharedLines += 2) {
        double one = 0, two = 0;
        for (int round = 0; round < rounds; round++) {
            start = now();
            caller((void *)(intptr_t)0);
            one += now() - start;
            start = now();
            pthread_create(&other, NULL, caller, (void *)(intptr_t)1);
            caller((void *)(intptr_t)0);
            pthread_join(other, NULL);
            two += now() - start;
        }
        double perCallOne = one / ((double)calls * rounds) * 1e9, perCallTwo = two / (2.0 * calls * rounds) * 1e9;
        printf("lock + %d shared lines: one thread %.1f ns a call, two threads %.1f ns a call (aggregate): ratio %.2f\n",
               sharedLines, perCallOne, perCallTwo, perCallOne / perCallTwo);
    }
    return 0;
}
