/* rng.c — the Philox4x64-10 counter-based RNG and the keys asn derives for
 * it (SHA-256 of the seed, prompt id and heuristic id). */
#include "asn/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
