/* asn/pool.h — a fixed set of worker threads that run one parallel task at
 * a time. Work is split statically by thread index, so which thread
 * computes what never depends on timing: results are the same whatever the
 * scheduling (and, when the split does not change a reduction's order,
 * whatever the thread count). */
#ifndef ASN_POOL_H
#define ASN_POOL_H

#include <stddef.h>

typedef struct asn_pool asn_pool;

/* A pool of n threads (the caller counts as one: n - 1 are started).
 * n <= 0 means the number of online CPUs. */
asn_pool *asn_pool_new(int n);
void asn_pool_free(asn_pool *p);
int asn_pool_size(const asn_pool *p);

/* Runs fn(ctx, i, n) for i = 0..n-1, one call per thread, and returns when
 * all are done. p may be NULL: fn(ctx, 0, 1) runs in the caller. */
typedef void (*asn_pool_fn)(void *ctx, int ith, int nth);
void asn_pool_run(asn_pool *p, asn_pool_fn fn, void *ctx);

/* Scratch memory of at least `bytes` for thread ith, owned by the pool (freed
 * with it) and reused across tasks. With p == NULL a single process-wide
 * buffer is returned (for single-threaded callers). */
void *asn_pool_scratch(asn_pool *p, int ith, size_t bytes);
/* Scratch memory that the caller fills before asn_pool_run and every thread
 * then reads (separate from each thread's own). */
void *asn_pool_shared_scratch(asn_pool *p, size_t bytes);

/* The part [*lo, *hi) of n items that thread ith of nth takes, in blocks of
 * `align` items (the last thread takes the remainder). */
void asn_split(int n, int ith, int nth, int align, int *lo, int *hi);

#endif
