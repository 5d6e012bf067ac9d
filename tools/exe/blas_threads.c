/* blas_threads.c — linked into every asn program (not into libasn): stops
 * OpenBLAS's own worker threads before main.
 *
 * asn calls OpenBLAS from its own worker threads, one BLAS thread per call
 * (results must not depend on a BLAS thread count), so OpenBLAS's thread
 * pool is never used. Yet Debian's pthread build starts a thread per core
 * in its initializer, and those threads spin on sched_yield while they wait
 * for work, taking CPU from the engine's workers and from any process
 * beside them (a client beside a server on a small machine: the demo's
 * `gen-candidates --server` took 0.13 s of CPU per run with them, 0.08 s
 * without). Setting OPENBLAS_NUM_THREADS from the program is too late (the
 * initializer has read it, and a pre-initialization function's setenv is
 * undone when libc initializes), so the threads are set to one and the
 * pool shut down once the libraries are initialized. blas_thread_shutdown_
 * is exported by OpenBLAS's threaded builds only, hence the weak reference;
 * a single-threaded build has nothing to stop.
 *
 * Not under an address-space limit (ulimit -v): there each of OpenBLAS's
 * threads may be stuck retrying its 128 MB buffer, and waiting for it to
 * stop would never return; the threads are left as they are. */
#include <cblas.h>
#include <sys/resource.h>

extern int blas_thread_shutdown_(void) __attribute__((weak));

__attribute__((constructor)) static void blas_single_thread(void)
{
    openblas_set_num_threads(1);
    struct rlimit as;
    if (blas_thread_shutdown_ && !getrlimit(RLIMIT_AS, &as) && as.rlim_cur == RLIM_INFINITY)
        blas_thread_shutdown_();
}
