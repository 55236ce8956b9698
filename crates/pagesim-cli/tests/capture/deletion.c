/* A program whose kept accesses under stack deletion (K=16) tests/capture.rs knows, all in
 * an anonymous mapping of 512 pages and a mapping of two pages of code it writes itself:
 *   1. loads of pages 0..13 in turn, three rounds: 14 pages, fewer than K: 14 kept loads;
 *   2. loads of pages 20..36 in turn, three rounds: 17 pages, more than K: all 51 kept;
 *   3. loads of pages 40 and 296 (256 apart: the same hint for K=16) in turn, 100 times,
 *      then a store to each, then the loads again: loads of 40 and 296, stores to 40 and 296;
 *   4. an 8-byte store across the boundary of pages 400 and 401: stores to 400 and 401;
 *   5. a function of two instructions across the boundary of the code pages, called 1000
 *      times, a system call (getppid), 1000 times again: loads of the code's first page and
 *      its second, then again (stack deletion forgets at a system call).
 * No system call between the stores and loads of each part. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGES 512

int main(void) {
    volatile char *p = mmap(NULL, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *code = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || code == MAP_FAILED)
        return 1;
    int s = 0;
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 14; i++)
            s += p[i * 4096];
    for (int r = 0; r < 3; r++)
        for (int i = 20; i < 37; i++)
            s += p[i * 4096];
    for (int r = 0; r < 100; r++)
        s += p[40 * 4096] + p[296 * 4096];
    p[40 * 4096] = 1;
    p[296 * 4096] = 1;
    for (int r = 0; r < 100; r++)
        s += p[40 * 4096] + p[296 * 4096];
    uint64_t one = 1;
    memcpy((char *)p + 401 * 4096 - 4, &one, 8);
    /* mov $7, %eax (b8 07 00 00 00) from 2 bytes before the page boundary; ret (c3). */
    static const unsigned char f[] = {0xb8, 7, 0, 0, 0, 0xc3};
    memcpy(code + 4096 - 2, f, sizeof f);
    int (*fn)(void) = (int (*)(void))(code + 4096 - 2);
    for (int i = 0; i < 1000; i++)
        s += fn();
    getppid();
    for (int i = 0; i < 1000; i++)
        s += fn();
    return s == 0;
}
