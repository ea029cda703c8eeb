// What the kernel alone costs the file destination on this machine, for scale (BENCHMARKS part 26):
//
//   cc -O2 Benchmarks/experiments/ext4-write.c -o /tmp/ext4-write
//   /tmp/ext4-write write 65536     # 800 MB of 200-byte lines in writes of 64 KiB, rotated every 10 MiB:
//                                   # system time per line
//   /tmp/ext4-write write 65536 1048576
//                                   # the same, each file's blocks allocated 1 MiB ahead of its end with
//                                   # fallocate(FALLOC_FL_KEEP_SIZE), and the rest freed at rotation
//   /tmp/ext4-write unlink          # unlinking a 40 MiB file just written, alone and with a descriptor held
//                                   # across the unlink (O_RDONLY, O_PATH): where the kernel frees it
//
// Files go to $TMPDIR (default /tmp): the file system measured is that one's.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double microseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1e6 + now.tv_nsec / 1e3;
}

static void path(char *buffer, size_t size, const char *name) {
    const char *folder = getenv("TMPDIR");
    snprintf(buffer, size, "%s/%s", folder && *folder ? folder : "/tmp", name);
}

static int writeLines(size_t chunk, size_t ahead) {
    const size_t total = (size_t)800 << 20, rotation = (size_t)10 << 20;
    char current[512], old[512];
    path(current, sizeof current, "ext4-write.log");
    path(old, sizeof old, "ext4-write.log.1");
    char *buffer = malloc(chunk);
    memset(buffer, 'x', chunk);
    for (size_t index = 199; index < chunk; index += 200) buffer[index] = '\n';
    int fd = open(current, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    if (fd < 0) { perror(current); return 1; }
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    double start = microseconds();
    size_t written = 0, sinceRotation = 0, allocated = 0;
    while (written < total) {
        while (ahead && sinceRotation + chunk > allocated) {
            if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)allocated, (off_t)ahead) != 0) { perror("fallocate"); return 1; }
            allocated += ahead;
        }
        ssize_t count = write(fd, buffer, chunk);
        if (count <= 0) { perror("write"); return 1; }
        written += (size_t)count;
        sinceRotation += (size_t)count;
        if (sinceRotation >= rotation) {
            if (ahead) ftruncate(fd, (off_t)sinceRotation);
            close(fd);
            unlink(old);
            rename(current, old);
            fd = open(current, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
            sinceRotation = 0;
            allocated = 0;
        }
    }
    double elapsed = (microseconds() - start) / 1e6;
    getrusage(RUSAGE_SELF, &after);
    double system = (after.ru_stime.tv_sec - before.ru_stime.tv_sec) + (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;
    double lines = total / 200.0;
    printf("writes of %zu bytes, allocated %zu ahead: %.2f s, system %.2f s: %.0f ns of system time per 200-byte line\n", chunk, ahead, elapsed,
           system, system * 1e9 / lines);
    close(fd);
    unlink(current);
    unlink(old);
    free(buffer);
    return 0;
}

static int unlinkTimes(void) {
    static char buffer[1 << 20];
    memset(buffer, 'x', sizeof buffer);
    char file[512];
    path(file, sizeof file, "ext4-unlink.tmp");
    const char *names[] = {"nothing held", "O_RDONLY held", "O_PATH held"};
    const int flags[] = {-1, O_RDONLY, O_PATH};
    for (int kind = 0; kind < 3; kind++) {
        for (int run = 0; run < 3; run++) {
            int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            for (int index = 0; index < 40; index++) write(fd, buffer, sizeof buffer);
            close(fd);
            int held = flags[kind] < 0 ? -1 : open(file, flags[kind] | O_NOFOLLOW | O_CLOEXEC);
            double start = microseconds();
            unlink(file);
            double unlinked = microseconds();
            if (held >= 0) close(held);
            double closed = microseconds();
            printf("%-14s unlink %5.0f us, close %5.0f us\n", names[kind], unlinked - start, closed - unlinked);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "unlink") == 0) return unlinkTimes();
    if (argc >= 3 && strcmp(argv[1], "write") == 0) return writeLines((size_t)atol(argv[2]), argc >= 4 ? (size_t)atol(argv[3]) : 0);
    fprintf(stderr, "usage: %s write <bytes per write> [<bytes allocated ahead>] | unlink\n", argv[0]);
    return 2;
}
