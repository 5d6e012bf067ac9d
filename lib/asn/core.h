/* asn/core.h — errors, allocation, whole-file reading, SHA-256 and the
 * counter-based RNG that every other module builds on. */
#ifndef ASN_CORE_H
#define ASN_CORE_H

#include <stddef.h>
#include <stdint.h>

#define ASN_VERSION "0.1.0"

/* "s" after a count other than 1: "%ld prompt%s", n, ASN_PLURAL(n). */
#define ASN_PLURAL(n) ((n) == 1 ? "" : "s")

/* ---------------------------------------------------------------- errors */

/* Library functions return 0 on success and -1 on failure, after writing a
 * one-line message (no trailing newline) into an asn_err the caller owns. */
typedef struct asn_err {
    char msg[1024];
} asn_err;

/* Formats msg into e (e may be NULL) and returns -1, so a failing path can
 * say `return asn_err_set(e, "...")`. */
int asn_err_set(asn_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends "context: " to the message already in e; returns -1. */
int asn_err_prefix(asn_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ allocation */

/* Allocation that cannot fail: on exhaustion it prints one line and aborts,
 * as git's xmalloc does; handling OOM in every caller buys nothing here. */
void *asn_xmalloc(size_t n);
/* What the allocations that follow (in this thread) are for, as
 * asn_xmalloc's out-of-memory message names it ("gen-candidates: out of
 * memory allocating 2.0 GiB for the KV cache"); NULL: nothing. Returns the
 * previous one, to restore. Running out of memory ends the program with
 * that message and status 1. */
const char *asn_alloc_context(const char *what);
/* Bytes this process may still allocate: the smaller of the system's
 * MemAvailable and what ulimit -v leaves; -1 when neither is known. */
double asn_mem_available(void);
void *asn_xcalloc(size_t n, size_t size);
void *asn_xrealloc(void *p, size_t n);
char *asn_xstrdup(const char *s);
/* Grows *p (element size `size`) so it holds at least `need` elements. */
void asn_grow(void **p, size_t *cap, size_t need, size_t size);

/* ----------------------------------------------------------------- files */

/* The whole of a file ("-" = stdin) in a new buffer (*data, to free) with a
 * NUL after the last byte; *len gets the byte count. On failure the error
 * names the path and the reason ("PATH: No such file or directory", "PATH:
 * read error: Is a directory"). */
int asn_read_file(const char *path, char **data, size_t *len, asn_err *e);

/* ---------------------------------------------------------------- SHA-256 */

void asn_sha256(const void *data, size_t n, uint8_t out[32]);
/* Lower-case hex of the digest; out holds 65 bytes. */
void asn_sha256_hex(const void *data, size_t n, char out[65]);
/* Digest of a whole file, streamed. */
int asn_sha256_file(const char *path, char out[65], asn_err *e);

/* -------------------------------------------------------------------- RNG */

/* Philox4x64-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11): a counter-based generator. Output depends only on (key,
 * counter), so a draw never depends on what else ran before it, in which
 * thread, or in which batch. This is what makes every sampled token a pure
 * function of (seed, prompt id, heuristic id, step). Checked against numpy's
 * Philox (the same algorithm) in tests/unit/test_core.c. */
void asn_philox4x64(const uint64_t ctr[4], const uint64_t key[2], uint64_t out[4]);

typedef struct asn_rng_key {
    uint64_t k[2];
} asn_rng_key;

/* Streams under one key: the token draw and the processors that need their
 * own randomness (xtc) never share a counter. */
enum { ASN_STREAM_DRAW = 0, ASN_STREAM_XTC = 1 };

/* Key = first 16 bytes of SHA-256("asn-rng-v1" 0x00 seed-in-decimal 0x1F
 * prompt_id 0x1F heuristic_id), read as two little-endian 64-bit words. */
asn_rng_key asn_rng_key_make(uint64_t seed, const char *prompt_id, const char *heuristic_id);
/* Uniform double in [0, 1) with 53 random bits, from counter (step, stream, 0, 0). */
double asn_rng_uniform(asn_rng_key key, uint64_t step, uint32_t stream);

#endif
