// How a spool segment's writes behave on a full btrfs: the segment is reserved with posix_fallocate and written
// through a shared mapping (as SpoolSegment does), or with pwrite. Run by ./run (root, btrfs-progs, a loop device).
//
//   mapped-write DIR mmap|pwrite cow|nocow
//
// Writes 100 records of 300 bytes, makes them durable (fsync: the pages are write-protected again), fills the disk
// with DIR/filler, then writes 2,000 more records after them (the first into a page written before). Prints what
// happened: "SIGBUS" (the program would be killed), or how many writes succeeded and failed, and the slowest.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void on_sigbus(int signal) {
    (void)signal;
    static const char line[] = "SIGBUS: a write into the mapping killed the program\n";
    write(1, line, sizeof line - 1);
    _exit(99);
}

static double now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return time.tv_sec + time.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: mapped-write DIR mmap|pwrite cow|nocow\n");
        return 2;
    }
    int mapped = strcmp(argv[2], "mmap") == 0, nocow = strcmp(argv[3], "nocow") == 0;
    signal(SIGBUS, on_sigbus);
    size_t capacity = 4 << 20;
    char path[4096], filler[4096];
    snprintf(path, sizeof path, "%s/segment", argv[1]);
    snprintf(filler, sizeof filler, "%s/filler", argv[1]);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) { perror("open"); return 1; }
    if (nocow) {
        int flags = 0;
        if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0 || (flags |= FS_NOCOW_FL, ioctl(fd, FS_IOC_SETFLAGS, &flags)) != 0)
            perror("chattr +C");
    }
    int rc = posix_fallocate(fd, 0, capacity);
    if (rc != 0) { fprintf(stderr, "posix_fallocate: %s\n", strerror(rc)); return 1; }
    char *map = mmap(NULL, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) { perror("mmap"); return 1; }
    char record[300];
    memset(record, 'r', sizeof record);
    size_t offset = 0;
    for (int i = 0; i < 100; i++, offset += sizeof record) memcpy(map + offset, record, sizeof record);
    fsync(fd);
    int fill = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    static char chunk[1 << 16];
    long filled = 0;
    size_t sizes[] = {sizeof chunk, 4096, 4096};
    for (int k = 0; k < 3; k++) {
        ssize_t written;
        while ((written = write(fill, chunk, sizes[k])) > 0) filled += written;
        fsync(fill);
    }
    printf("%s, %s: disk filled with %ld bytes\n", argv[2], argv[3], filled);
    fflush(stdout);
    int ok = 0, failed = 0;
    double slowest = 0, began = now();
    for (int i = 0; i < 2000; i++) {
        double start = now();
        int done;
        if (mapped) {
            memcpy(map + offset, record, sizeof record);
            done = 1;
        } else {
            done = pwrite(fd, record, sizeof record, offset) == (ssize_t)sizeof record;
        }
        double took = now() - start;
        if (took > slowest) slowest = took;
        if (done) { ok++; offset += sizeof record; } else if (failed++ == 0) printf("first failure: %s\n", strerror(errno));
        if (offset + sizeof record > capacity) offset = 0;
        if (i % 500 == 0) fsync(fd);
    }
    printf("%d written, %d failed, %.2f s in all, slowest %.3f s\n", ok, failed, now() - began, slowest);
    return 0;
}
