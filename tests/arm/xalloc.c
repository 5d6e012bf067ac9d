/* xalloc.c — the allocation helpers of lib/core/core.c for the ARM
 * cross-build of the engine tests (make test-arm), which links only the
 * engine's files: core.c also holds SHA-256 through libcrypto, which the
 * cross toolchain lacks. */
#include <stdio.h>
#include <stdlib.h>

static void *check(void *p)
{
    if (!p) {
        fputs("out of memory\n", stderr);
        abort();
    }
    return p;
}

void *asn_xmalloc(size_t n) { return check(malloc(n ? n : 1)); }
void *asn_xcalloc(size_t n, size_t size) { return check(calloc(n ? n : 1, size ? size : 1)); }
void *asn_xrealloc(void *p, size_t n) { return check(realloc(p, n ? n : 1)); }
