/* pool.c — the worker pool: threads wait on a generation counter, run the
 * current task with their fixed index, and the last to finish wakes the
 * caller.
 *
 * A forward pass hands the pool a hundred short tasks per token, so both
 * sides first spin on the counters (about a hundred microseconds) and only
 * then sleep on a condition variable: a futex round trip per task would
 * cost more than a decode step's matrix products. The counters are
 * changed under the mutex whenever the other side may sleep, so no wake-up
 * is lost. */
#include "asn/pool.h"
#include "asn/core.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* Waiting: PAUSES busy iterations, then yields of the CPU up to SPIN
 * iterations in all (another runnable thread, perhaps the one being waited
 * for, gets the core when there are more threads than cores), then sleep. */
enum { PAUSES = 1 << 10, SPIN = 1 << 13 };

static inline void relax(int spins)
{
    if (spins >= PAUSES) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

struct asn_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_ulong gen;    /* bumped for each task */
    atomic_int pending;  /* workers still running the current task */
    atomic_int quit;
    asn_pool_fn fn;
    void *ctx;
    void **scratch;
    size_t *scratch_cap;
};

typedef struct worker_arg {
    asn_pool *p;
    int ith;
} worker_arg;

static void *worker(void *arg)
{
    worker_arg *w = arg;
    asn_pool *p = w->p;
    int ith = w->ith;
    free(w);
    unsigned long seen = 0;
    for (;;) {
        unsigned long g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen && !atomic_load(&p->quit)) {
            if (++spins < SPIN) {
                relax(spins);
                continue;
            }
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit))
            break;
        seen = g;
        p->fn(p->ctx, ith, p->n);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

asn_pool *asn_pool_new(int n)
{
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    asn_pool *p = asn_xcalloc(1, sizeof *p);
    p->n = n;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = asn_xcalloc((size_t)n, sizeof *p->threads);
    /* one slot per thread and one shared slot (asn_pool_shared_scratch) */
    p->scratch = asn_xcalloc((size_t)n + 1, sizeof *p->scratch);
    p->scratch_cap = asn_xcalloc((size_t)n + 1, sizeof *p->scratch_cap);
    for (int i = 1; i < n; i++) {
        worker_arg *w = asn_xmalloc(sizeof *w);
        w->p = p;
        w->ith = i;
        if (pthread_create(&p->threads[i], NULL, worker, w)) {
            free(w);
            p->n = i; /* run with the threads we got */
            break;
        }
    }
    return p;
}

void asn_pool_free(asn_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    for (int i = 0; i <= p->n; i++)
        free(p->scratch[i]);
    free(p->scratch);
    free(p->scratch_cap);
    free(p->threads);
    free(p);
}

static void *grow(void **slot, size_t *cap, size_t bytes)
{
    if (bytes > *cap) {
        free(*slot);
        *slot = asn_xmalloc(bytes);
        *cap = bytes;
    }
    return *slot;
}

void *asn_pool_scratch(asn_pool *p, int ith, size_t bytes)
{
    static void *solo;
    static size_t solo_cap;
    return p ? grow(&p->scratch[ith], &p->scratch_cap[ith], bytes) : grow(&solo, &solo_cap, bytes);
}

void *asn_pool_shared_scratch(asn_pool *p, size_t bytes)
{
    static void *solo;
    static size_t solo_cap;
    return p ? grow(&p->scratch[p->n], &p->scratch_cap[p->n], bytes) : grow(&solo, &solo_cap, bytes);
}

int asn_pool_size(const asn_pool *p) { return p ? p->n : 1; }

void asn_pool_run(asn_pool *p, asn_pool_fn fn, void *ctx)
{
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    fn(ctx, 0, p->n);
    for (int spins = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0; spins++) {
        if (spins < SPIN) {
            relax(spins);
            continue;
        }
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) > 0)
            pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

void asn_split(int n, int ith, int nth, int align, int *lo, int *hi)
{
    if (align < 1)
        align = 1;
    int blocks = (n + align - 1) / align;
    int per = blocks / nth, extra = blocks % nth;
    int b0 = ith * per + (ith < extra ? ith : extra);
    int b1 = b0 + per + (ith < extra);
    *lo = b0 * align < n ? b0 * align : n;
    *hi = b1 * align < n ? b1 * align : n;
}
