/* Per-page costs of anonymous page faults on this machine, for pagesim's CPU cost table
 * (docs/model.md, "CPU costs"). Built and run by scripts/measure-fault-costs.sh, which
 * puts the process in a memory cgroup when asked to (the charge is part of the fault).
 *
 * Each measure maps MIB MiB of private anonymous memory (MADV_NOHUGEPAGE: 4 KiB pages, as
 * pagesim and the validation harness use), times one pass touching one byte per page, and
 * prints the time per page; ROUNDS rounds each, the median printed with min and max.
 *
 *   first-touch-write  write fault on untouched memory: allocate, zero, charge, map
 *   zero-page-read     read fault on untouched memory: map the shared zero page
 *   hit-write          write to a page already mapped writable: no fault (TLB miss and
 *                      cache miss per page, the cost of pagesim's access_ns)
 *   cow-write          after fork, the child writes each page its parent wrote: copy on
 *                      write (allocate, copy 4 KiB, charge, map)
 *   munmap             munmap of written memory no other process ever shared, per page
 *                      (zap_pte_range, uncharge, free)
 *   munmap-after-fork  munmap of the parent's memory after a child copied all of it and
 *                      exited
 *
 * Usage: measure-fault-costs MIB ROUNDS
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static char *map(size_t len) {
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    if (madvise(p, len, MADV_NOHUGEPAGE) != 0) {
        perror("madvise");
        exit(1);
    }
    return p;
}

static volatile char sink;

/* Touches one byte of each page: a write of the page's low byte, or a read. */
static uint64_t pass(char *p, size_t pages, int write) {
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < pages; i++) {
        if (write)
            p[i * 4096] = (char)i;
        else
            sink = p[i * 4096];
    }
    return now_ns() - t0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *name, double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    printf("%-18s %8.0f ns/page  (min %.0f, max %.0f, %d rounds)\n", name, v[n / 2], v[0], v[n - 1], n);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MIB ROUNDS\n", argv[0]);
        return 2;
    }
    size_t mib = strtoul(argv[1], NULL, 10);
    int rounds = atoi(argv[2]);
    if (mib == 0 || rounds <= 0 || rounds > 1000) {
        fprintf(stderr, "MIB must be positive, ROUNDS 1..1000\n");
        return 2;
    }
    size_t len = mib << 20, pages = len / 4096;
    double *ft = calloc(rounds, sizeof(double)), *zr = calloc(rounds, sizeof(double));
    double *hw = calloc(rounds, sizeof(double)), *cw = calloc(rounds, sizeof(double));
    double *um = calloc(rounds, sizeof(double)), *uf = calloc(rounds, sizeof(double));
    int pipefd[2];
    for (int r = 0; r < rounds; r++) {
        char *p = map(len);
        ft[r] = (double)pass(p, pages, 1) / pages;
        hw[r] = (double)pass(p, pages, 1) / pages;
        char *z = map(len);
        zr[r] = (double)pass(z, pages, 0) / pages;
        munmap(z, len);
        char *q = map(len);
        pass(q, pages, 1);
        uint64_t u0 = now_ns();
        munmap(q, len);
        um[r] = (double)(now_ns() - u0) / pages;
        /* The child writes every page its parent wrote and reports its time through a pipe. */
        if (pipe(pipefd) != 0) {
            perror("pipe");
            return 1;
        }
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            close(pipefd[0]);
            uint64_t t = pass(p, pages, 1);
            if (write(pipefd[1], &t, sizeof t) != sizeof t)
                _exit(1);
            _exit(0);
        }
        close(pipefd[1]);
        uint64_t t = 0;
        if (read(pipefd[0], &t, sizeof t) != sizeof t) {
            fprintf(stderr, "the child did not report\n");
            return 1;
        }
        close(pipefd[0]);
        waitpid(pid, NULL, 0);
        cw[r] = (double)t / pages;
        uint64_t t0 = now_ns();
        munmap(p, len);
        uf[r] = (double)(now_ns() - t0) / pages;
    }
    printf("%zu MiB, %zu pages per pass\n", mib, pages);
    report("first-touch-write", ft, rounds);
    report("zero-page-read", zr, rounds);
    report("hit-write", hw, rounds);
    report("cow-write", cw, rounds);
    report("munmap", um, rounds);
    report("munmap-after-fork", uf, rounds);
    return 0;
}
