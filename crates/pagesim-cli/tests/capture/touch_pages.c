/* A program whose page accesses tests/capture.rs knows: it stores to each of the 64 pages of
 * an anonymous mapping once, page (37 i) mod 64 for i = 0, 1, ... 63; then forks a child that
 * stores to pages 5, 6 and 5 again and execs /bin/true; the parent waits for it and exits. */
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGES 64

int main(void) {
    volatile char *p = mmap(NULL, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 1;
    for (int i = 0; i < PAGES; i++)
        p[((i * 37) % PAGES) * 4096 + 100] = 1;
    pid_t c = fork();
    if (c == 0) {
        p[5 * 4096] = 2;
        p[6 * 4096] = 2;
        p[5 * 4096 + 8] = 3;
        execl("/bin/true", "true", (char *)0);
        _exit(3);
    }
    int st;
    if (waitpid(c, &st, 0) != c)
        return 2;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 2;
}
