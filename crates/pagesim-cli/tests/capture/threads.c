/* A multi-threaded program whose page accesses tests/capture.rs knows: the main thread maps
 * 64 anonymous pages and starts two threads; thread k stores to pages 32 k ... 32 k + 31 in
 * order, once each; the main thread joins both, then loads each of the 64 pages and exits. */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>

#define PAGES 64

static volatile char *buf;

static void *half(void *arg) {
    long k = (long)arg;
    for (long i = k * PAGES / 2; i < (k + 1) * PAGES / 2; i++)
        buf[i * 4096 + 100] = (char)i;
    return NULL;
}

int main(void) {
    buf = mmap(NULL, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return 1;
    pthread_t t[2];
    for (long k = 0; k < 2; k++)
        if (pthread_create(&t[k], NULL, half, (void *)k) != 0)
            return 2;
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    long sum = 0;
    for (int i = 0; i < PAGES; i++)
        sum += buf[i * 4096 + 100];
    printf("%ld\n", sum);
    return 0;
}
