/* vocab_sym.c — the parts every tokenizer shares: the string hash, the
 * lookup of a token's text in the vocabulary's hash table, and the growing
 * id array. vocab.c and tok_spm.c, tok_bpe.c, tok_wpm.c build on these;
 * nothing here calls back into them. */
#include "tok_internal.h"

#include <string.h>

uint64_t asn_str_hash(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full);
    while (n >= 8) {
        uint64_t k;
        memcpy(&k, p, 8);
        h = (h ^ k) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t k = 0;
        memcpy(&k, p, n);
        h = (h ^ k) * 0x94D049BB133111EBull;
    }
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return h;
}

int32_t asn_sym_find(const asn_vocab *v, const char *s, size_t n)
{
    uint64_t h = asn_str_hash(s, n), tag = h >> 32;
    for (size_t i = (size_t)h & v->map.mask;; i = (i + 1) & v->map.mask) {
        uint64_t x = v->map.slot[i];
        if (!x)
            return -1;
        if (x >> 32 != tag)
            continue;
        int32_t id = (int32_t)(uint32_t)x - 1;
        size_t len;
        const char *t = asn_sym_text(v, id, &len);
        if (len == n && !memcmp(t, s, n))
            return id;
    }
}

int32_t asn_tok_find(const asn_vocab *v, const char *s, size_t n)
{
    int32_t id = asn_sym_find(v, s, n);
    return id < v->n ? id : -1;
}

void asn_ids_push(asn_ids *a, int32_t id)
{
    if (a->n == a->cap)
        asn_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v);
    a->v[a->n++] = id;
}
