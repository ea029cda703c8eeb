//   cc -O2 -pthread Benchmarks/experiments/line-transfer.c -o /tmp/line-transfer && /tmp/line-transfer
// One cache line handed back and forth between two threads (each waits for the other's number, then writes the
// next): the time of one hand-over, what a line that both of two cores write costs each time it changes hands
// (BENCHMARKS.md part 16). Three runs of 4 M hand-overs.
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
static _Alignas(128) _Atomic uint64_t line;
enum { N = 2000000 };
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void *other(void *a){(void)a; for(uint64_t i=1;i<2*N;i+=2){while(atomic_load_explicit(&line,memory_order_acquire)!=i);atomic_store_explicit(&line,i+1,memory_order_release);} return NULL;}
int main(void){for(int r=0;r<3;r++){atomic_store(&line,0);pthread_t t;pthread_create(&t,0,other,0);double s=now();
 for(uint64_t i=0;i<2*N;i+=2){while(atomic_load_explicit(&line,memory_order_acquire)!=i);atomic_store_explicit(&line,i+1,memory_order_release);}
 while(atomic_load(&line)!=2*N); double e=now(); pthread_join(t,0); printf("a line changing hands between the two cores: %.0f ns\n",(e-s)/(2.0*N)*1e9);}}
