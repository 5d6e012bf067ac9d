/* test_pool.c — the worker pool (asn/pool.h): every task runs once per
 * thread index, and the caller sees what every thread wrote, whether the
 * tasks come back to back (the threads find them while spinning), after
 * pauses long enough for the threads to sleep, or when one thread is slow
 * enough for the caller to sleep; a pool is freed with its threads busy,
 * spinning or asleep. A lost wake-up hangs: the alarm then ends the test
 * with a failure. asn_split is checked against hand-counted parts. */
#include "asn/pool.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

enum { MAXN = 8 };

typedef struct task {
    long round;            /* set by the caller before each run */
    long seen[MAXN];       /* plain stores: the pool must publish them */
    int calls[MAXN];
    int nth_bad;
    int nth;
    long slow_ns[MAXN];    /* how long thread i sleeps inside the task */
} task;

static void nap(long ns)
{
    struct timespec t = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&t, &t))
        ;
}

static void fn(void *ctx, int ith, int nth)
{
    task *t = ctx;
    if (nth != t->nth)
        t->nth_bad = 1;
    if (t->slow_ns[ith])
        nap(t->slow_ns[ith]);
    t->seen[ith] = t->round;
    t->calls[ith]++;
}

/* Runs `rounds` tasks on p, with `gap_ns` between them; returns the number
 * of rounds after which some thread had not written its slot or had run
 * more than once. */
static int run_rounds(asn_pool *p, task *t, int rounds, long gap_ns)
{
    int bad = 0;
    t->nth = asn_pool_size(p);
    for (int r = 1; r <= rounds; r++) {
        t->round = r;
        memset(t->calls, 0, sizeof t->calls);
        asn_pool_run(p, fn, t);
        for (int i = 0; i < t->nth; i++)
            bad += t->seen[i] != r || t->calls[i] != 1;
        if (gap_ns)
            nap(gap_ns);
    }
    return bad;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "not ok - pool: a task or a free never returned (lost wake-up)\n";
    (void)!write(1, m, sizeof m - 1);
    _exit(1);
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(60);
    static const int sizes[] = {1, 2, 3, 5};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int n = sizes[s];
        char name[96];
        task t;
        memset(&t, 0, sizeof t);
        asn_pool *p = asn_pool_new(n);
        snprintf(name, sizeof name, "pool of %d: size", n);
        T_EQ_INT(name, asn_pool_size(p), n);

        snprintf(name, sizeof name, "pool of %d: 3000 tasks back to back", n);
        T_EQ_INT(name, run_rounds(p, &t, n > 2 ? 300 : 3000, 0), 0);
        /* 2 ms between tasks: the threads stop spinning and sleep */
        snprintf(name, sizeof name, "pool of %d: tasks 2 ms apart (threads asleep)", n);
        T_EQ_INT(name, run_rounds(p, &t, 20, 2000000), 0);
        /* the last thread takes 2 ms: the caller sleeps for it */
        if (n > 1) {
            t.slow_ns[n - 1] = 2000000;
            snprintf(name, sizeof name, "pool of %d: one thread 2 ms slow (caller asleep)", n);
            T_EQ_INT(name, run_rounds(p, &t, 20, 0), 0);
            t.slow_ns[n - 1] = 0;
            /* the caller is the slow one: the threads sleep meanwhile */
            t.slow_ns[0] = 2000000;
            snprintf(name, sizeof name, "pool of %d: caller 2 ms slow (threads asleep)", n);
            T_EQ_INT(name, run_rounds(p, &t, 20, 0), 0);
            t.slow_ns[0] = 0;
        }
        snprintf(name, sizeof name, "pool of %d: nth passed to every call", n);
        T_EQ_INT(name, t.nth_bad, 0);
        nap(3000000); /* free with every thread asleep */
        asn_pool_free(p);
        snprintf(name, sizeof name, "pool of %d: freed while asleep", n);
        T_OK(name, 1, "%s", "unreachable");

        p = asn_pool_new(n); /* free at once: threads maybe not yet started */
        asn_pool_free(p);
        p = asn_pool_new(n); /* free right after a task: threads spinning */
        memset(&t, 0, sizeof t);
        run_rounds(p, &t, 1, 0);
        asn_pool_free(p);
        snprintf(name, sizeof name, "pool of %d: freed new and freed spinning", n);
        T_OK(name, 1, "%s", "unreachable");
    }

    task t;
    memset(&t, 0, sizeof t);
    t.nth = 1;
    t.round = 7;
    asn_pool_run(NULL, fn, &t);
    T_OK("no pool: the caller runs the task alone", t.seen[0] == 7 && t.calls[0] == 1 && !t.nth_bad, "seen %ld calls %d",
         t.seen[0], t.calls[0]);

    /* 10 items over 3 threads: 4, 3, 3; in blocks of 4 (3 blocks): 4, 4, 2 */
    static const int want[2][3][2] = {{{0, 4}, {4, 7}, {7, 10}}, {{0, 4}, {4, 8}, {8, 10}}};
    int split_bad = 0;
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 3; i++) {
            int lo, hi;
            asn_split(10, i, 3, a ? 4 : 1, &lo, &hi);
            split_bad += lo != want[a][i][0] || hi != want[a][i][1];
        }
    T_EQ_INT("asn_split: 10 items over 3 threads, blocks of 1 and 4", split_bad, 0);
    int lo, hi;
    asn_split(2, 2, 3, 4, &lo, &hi);
    T_OK("asn_split: a thread with no block gets an empty part", lo == hi, "[%d, %d)", lo, hi);
    T_DONE();
}
