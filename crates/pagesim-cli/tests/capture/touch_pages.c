/* A program whose page accesses tests/capture.rs knows: it stores to each of the 64 pages of
 * an anonymous mapping once, page (37 i) mod 64 for i = 0, 1, ... 63; then forks a child that
 * stores to pages 5, 6 and 5 again and execs /bin/true; the parent waits for it, creates file
 * argv[1] (8 KiB), opens it through a symbolic link argv[1].l, opens it again with O_TRUNC
 * and writes 4 KiB, unlinks it and the link, and exits. */
#include <stdio.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGES 64

static int write_file(const char *path, int flags, size_t bytes) {
    static char buf[8192];
    int fd = open(path, flags, 0644);
    if (fd < 0 || write(fd, buf, bytes) != (ssize_t)bytes)
        return -1;
    return close(fd);
}

int main(int argc, char **argv) {
    if (argc != 2)
        return 4;
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
    char link[4096];
    snprintf(link, sizeof link, "%s.l", argv[1]);
    if (write_file(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 8192) != 0 || symlink(argv[1], link) != 0)
        return 5;
    int fd = open(link, O_RDONLY);
    if (fd < 0 || close(fd) != 0 || write_file(argv[1], O_WRONLY | O_TRUNC, 4096) != 0 || unlink(argv[1]) != 0 ||
        unlink(link) != 0)
        return 5;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 2;
}
