/* What pagesim's cpu.clone_ns is: pthread_create of a thread that returns at once, and
 * pthread_join of it (clone(2) with CLONE_VM | CLONE_THREAD, the thread's first run, its
 * exit and the futex wake of the joiner), per thread, over ROUNDS rounds. Run it on one CPU:
 * across CPUs the joiner's wakeup adds the remote wakeup pagesim models on its own
 * (cpu.remote_wakeup_ns).
 *
 *   cc -O2 -pthread scripts/measure-clone-cost.c -o /tmp/clone-cost && taskset -c 0 /tmp/clone-cost [ROUNDS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *nothing(void *arg) { return arg; }

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20000;
    if (rounds < 1) {
        fprintf(stderr, "usage: %s [ROUNDS >= 1]\n", argv[0]);
        return 2;
    }
    pthread_t t;
    /* One round first: the thread stack's mapping is cached by glibc after it. */
    pthread_create(&t, NULL, nothing, NULL);
    pthread_join(t, NULL);
    double t0 = now_us();
    for (int i = 0; i < rounds; i++) {
        if (pthread_create(&t, NULL, nothing, NULL) != 0) {
            perror("pthread_create");
            return 1;
        }
        pthread_join(t, NULL);
    }
    printf("clone+exit+join: %.1f us per thread (%d rounds)\n", (now_us() - t0) / rounds, rounds);
    return 0;
}
