/* core.c — error messages, allocation that cannot fail, whole-file reading,
 * SHA-256 (libcrypto) and the Philox4x64-10 counter-based RNG. */
#include "asn/core.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- errors */

int asn_err_set(asn_err *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int asn_err_prefix(asn_err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    char head[512], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    size_t h = strlen(head);
    if (h > sizeof e->msg - 3)
        h = sizeof e->msg - 3;
    memcpy(e->msg, head, h);
    memcpy(e->msg + h, ": ", 2);
    size_t room = sizeof e->msg - h - 3, o = strlen(old);
    memcpy(e->msg + h + 2, old, o < room ? o : room);
    e->msg[h + 2 + (o < room ? o : room)] = 0;
    return -1;
}

/* ------------------------------------------------------------ allocation */

static void oom(size_t n)
{
    fprintf(stderr, "asn: out of memory allocating %zu bytes\n", n);
    abort();
}

void *asn_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *asn_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *asn_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *asn_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(asn_xmalloc(n), s, n);
}

void asn_grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    *p = asn_xrealloc(*p, c * size);
    *cap = c;
}

/* ----------------------------------------------------------------- files */

int asn_read_file(const char *path, char **data, size_t *len, asn_err *e)
{
    *data = NULL;
    *len = 0;
    int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return asn_err_set(e, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0, k;
    do {
        asn_grow((void **)&buf, &cap, n + 65537, 1);
        n += k = fread(buf + n, 1, cap - n - 1, f);
    } while (k > 0);
    int err = ferror(f) ? errno : 0;
    if (!is_stdin)
        fclose(f);
    if (err) {
        free(buf);
        return asn_err_set(e, "%s: read error: %s", path, strerror(err));
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

/* ---------------------------------------------------------------- SHA-256 */

void asn_sha256(const void *data, size_t n, uint8_t out[32])
{
    unsigned int len = 32;
    EVP_Digest(data, n, out, &len, EVP_sha256(), NULL);
}

static void to_hex(const uint8_t *d, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[2 * n] = 0;
}

void asn_sha256_hex(const void *data, size_t n, char out[65])
{
    uint8_t d[32];
    asn_sha256(data, n, d);
    to_hex(d, 32, out);
}

int asn_sha256_file(const char *path, char out[65], asn_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return asn_err_set(e, "%s: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    static char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        EVP_DigestUpdate(ctx, buf, n);
    int bad = ferror(f);
    fclose(f);
    uint8_t d[32];
    unsigned int len = 32;
    EVP_DigestFinal_ex(ctx, d, &len);
    EVP_MD_CTX_free(ctx);
    if (bad)
        return asn_err_set(e, "%s: read error", path);
    to_hex(d, 32, out);
    return 0;
}

/* -------------------------------------------------------------------- RNG */

/* Round multipliers and Weyl key increments of Philox4x64 (Random123). */
#define PHILOX_M0 0xD2E7470EE14C6C93ULL
#define PHILOX_M1 0xCA5A826395121157ULL
#define PHILOX_W0 0x9E3779B97F4A7C15ULL
#define PHILOX_W1 0xBB67AE8584CAA73BULL

static inline uint64_t mulhilo(uint64_t a, uint64_t b, uint64_t *hi)
{
    unsigned __int128 p = (unsigned __int128)a * b;
    *hi = (uint64_t)(p >> 64);
    return (uint64_t)p;
}

void asn_philox4x64(const uint64_t ctr[4], const uint64_t key[2], uint64_t out[4])
{
    uint64_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint64_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t hi0, hi1;
        uint64_t lo0 = mulhilo(PHILOX_M0, c0, &hi0);
        uint64_t lo1 = mulhilo(PHILOX_M1, c2, &hi1);
        uint64_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

asn_rng_key asn_rng_key_make(uint64_t seed, const char *prompt_id, const char *heuristic_id)
{
    char head[64];
    int hn = snprintf(head, sizeof head, "asn-rng-v1%c%llu\x1f", 0, (unsigned long long)seed);
    size_t pn = strlen(prompt_id), in = strlen(heuristic_id);
    size_t n = (size_t)hn + pn + 1 + in;
    char *buf = asn_xmalloc(n);
    memcpy(buf, head, (size_t)hn);
    memcpy(buf + hn, prompt_id, pn);
    buf[hn + pn] = 0x1f;
    memcpy(buf + hn + pn + 1, heuristic_id, in);
    uint8_t d[32];
    asn_sha256(buf, n, d);
    free(buf);
    asn_rng_key k = {{0, 0}};
    for (int i = 0; i < 8; i++) {
        k.k[0] |= (uint64_t)d[i] << (8 * i);
        k.k[1] |= (uint64_t)d[8 + i] << (8 * i);
    }
    return k;
}

double asn_rng_uniform(asn_rng_key key, uint64_t step, uint32_t stream)
{
    uint64_t ctr[4] = {step, stream, 0, 0}, out[4];
    asn_philox4x64(ctr, key.k, out);
    return (double)(out[0] >> 11) * 0x1.0p-53;
}
