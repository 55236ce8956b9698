/* A program whose instruction fetches tests/capture.rs knows: work(), on a page of text of
 * its own, runs 1000 times, then again 1000 times after a system call (getppid). First,
 * madvise(work's page, 0, MADV_NORMAL), a call that does nothing, names the page in the
 * trace. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline, aligned(4096))) int work(int x) {
    return x * 3 + 1;
}

int main(void) {
    volatile int s = 0;
    madvise((void *)((uintptr_t)work & ~(uintptr_t)4095), 0, MADV_NORMAL);
    for (int i = 0; i < 1000; i++)
        s += work(i);
    getppid();
    for (int i = 0; i < 1000; i++)
        s += work(i);
    return s == 0;
}
