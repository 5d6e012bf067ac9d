/* tok_spm.c — the SentencePiece-style tokenizer (tokenizer.ggml.model
 * "llama"), as llama.cpp's llm_tokenizer_spm_session: start from single
 * UTF-8 characters, repeatedly merge the adjacent pair whose concatenation
 * is the vocabulary token with the highest score (ties: the leftmost
 * pair), and write a symbol that is no token as its bytes through the
 * <0xXX> byte tokens. */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct sym {
    uint32_t start, n; /* bytes of the text; n = 0 once merged away */
    int32_t prev, next;
} sym;

typedef struct bigram {
    float score;
    int32_t left, right;
    uint32_t size;
} bigram;

struct asn_spm_scratch {
    sym *sym;
    size_t sym_cap;
    bigram *heap;
    size_t n_heap, heap_cap;
};

asn_spm_scratch *asn_spm_scratch_new(void) { return asn_xcalloc(1, sizeof(asn_spm_scratch)); }

void asn_spm_scratch_free(asn_spm_scratch *s)
{
    if (!s)
        return;
    free(s->sym);
    free(s->heap);
    free(s);
}

/* a is popped before b: higher score, then smaller left index */
static inline int before(const bigram *a, const bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

ASN_HEAP_DEFINE(bigram, before)

/* Queues the pair (left, right) if their text together is a token. */
static void try_pair(const asn_vocab *v, const char *text, asn_spm_scratch *s, int32_t left, int32_t right)
{
    if (left < 0 || right < 0)
        return;
    const sym *l = &s->sym[left], *r = &s->sym[right];
    int32_t tok = asn_tok_find(v, text + l->start, l->n + r->n);
    if (tok < 0)
        return;
    heap_push(&s->heap, &s->n_heap, &s->heap_cap, (bigram){v->score[tok], left, right, l->n + r->n});
}

static int is_space_sym(const char *text, const sym *y)
{
    return y->n == 3 && !memcmp(text + y->start, "\xE2\x96\x81", 3);
}

/* Merges the symbols [a, b) and writes their ids. */
static void spm_segment(const asn_vocab *v, const char *text, int32_t a, int32_t b, asn_ids *out,
                        asn_spm_scratch *s)
{
    s->sym[a].prev = -1;
    s->sym[b - 1].next = -1;
    s->n_heap = 0;
    for (int32_t i = a + 1; i < b; i++)
        try_pair(v, text, s, i - 1, i);
    while (s->n_heap) {
        bigram g = heap_pop(s->heap, &s->n_heap);
        sym *l = &s->sym[g.left], *r = &s->sym[g.right];
        /* stale: one side has changed since the pair was queued */
        if (!l->n || !r->n || l->n + r->n != g.size)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s->sym[r->next].prev = g.left;
        try_pair(v, text, s, l->prev, g.left);
        try_pair(v, text, s, g.left, l->next);
    }
    for (int32_t i = a; i != -1; i = s->sym[i].next) {
        const sym *y = &s->sym[i];
        int32_t tok = asn_tok_find(v, text + y->start, y->n);
        if (tok >= 0) {
            asn_ids_push(out, tok);
            continue;
        }
        for (uint32_t j = 0; j < y->n; j++) {
            /* llama.cpp throws when a byte has no token; the unknown token
             * (if any) stands in for it here */
            int32_t bt = v->byte_tok[(unsigned char)text[y->start + j]];
            if (bt < 0)
                bt = v->unk;
            if (bt >= 0)
                asn_ids_push(out, bt);
        }
    }
}

void asn_spm_tokenize(const asn_vocab *v, const char *text, size_t n, asn_ids *out, asn_spm_scratch *s)
{
    if (!n)
        return;
    asn_grow((void **)&s->sym, &s->sym_cap, n, sizeof *s->sym);
    int32_t ns = 0;
    for (size_t off = 0; off < n;) {
        size_t len = asn_utf8_len((unsigned char)text[off]);
        if (len > n - off)
            len = n - off; /* a cut sequence at the end stays one symbol */
        s->sym[ns] = (sym){(uint32_t)off, (uint32_t)len, ns - 1, ns + 1};
        off += len;
        ns++;
    }
    /* Where no token holds U+2581 after another character (v->spm_split:
     * so in the Llama and Mistral vocabs), no merge can cross into a
     * U+2581 that follows another character: the pieces between such
     * points are merged one by one, with the same result as the whole
     * text at once (merges keep their order inside each piece) but with
     * small queues. */
    int32_t a = 0;
    for (int32_t i = 1; i <= ns; i++)
        if (i == ns || (v->spm_split && is_space_sym(text, &s->sym[i]) && !is_space_sym(text, &s->sym[i - 1]))) {
            spm_segment(v, text, a, i, out, s);
            a = i;
        }
}
