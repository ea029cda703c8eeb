// What this machine gives two threads that share nothing: the same loop timed on one thread, then on two at
// once, three times. `alu` is arithmetic in registers only; `memory` reads a private 8 MiB array per thread
// (the caches and the memory bus are what the two threads then share).
//
//   cc -O2 -pthread Benchmarks/experiments/two-cores.c -o /tmp/two-cores && /tmp/two-cores && /tmp/two-cores memory
//
// A ratio of 2.0 for `alu` says the two vCPUs are separate cores (hyperthreads of one core give ~1.2).
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t keep;

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *alu(void *argument) {
    uint64_t rounds = (uint64_t)(uintptr_t)argument, x = 1, y = 3;
    for (uint64_t i = 0; i < rounds; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        y ^= x >> 7;
        y += i;
    }
    keep = x ^ y;
    return NULL;
}

static void *memory(void *argument) {
    size_t rounds = (size_t)(uintptr_t)argument, words = (size_t)1 << 20;
    uint64_t *array = malloc(words * sizeof *array), sum = 0;
    if (array == NULL) return NULL;
    for (size_t i = 0; i < words; i++) array[i] = i;
    for (size_t round = 0; round < rounds; round++)
        for (size_t i = 0; i < words; i += 8) sum += array[i];
    keep = sum;
    free(array);
    return NULL;
}

int main(int argc, char **argv) {
    int useMemory = argc > 1 && strcmp(argv[1], "memory") == 0;
    void *(*work)(void *) = useMemory ? memory : alu;
    void *rounds = (void *)(uintptr_t)(useMemory ? 4000 : 400000000ULL);
    for (int repeat = 0; repeat < 3; repeat++) {
        double start = seconds();
        work(rounds);
        double one = seconds() - start;
        pthread_t first, second;
        start = seconds();
        pthread_create(&first, NULL, work, rounds);
        pthread_create(&second, NULL, work, rounds);
        pthread_join(first, NULL);
        pthread_join(second, NULL);
        double two = seconds() - start;
        printf("%s: 1 thread %.3f s, 2 threads %.3f s, 2 threads ÷ 1: %.2f\n", useMemory ? "memory" : "alu", one, two,
               2 * one / two);
    }
    return 0;
}
