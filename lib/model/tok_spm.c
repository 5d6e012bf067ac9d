/* tok_spm.c — the SentencePiece-style tokenizer (tokenizer.ggml.model
 * "llama"), as llama.cpp's llm_tokenizer_spm_session: start from single
 * UTF-8 characters, repeatedly merge the adjacent pair whose concatenation
 * is the vocabulary token with the highest score (ties: the leftmost
 * pair), and write a symbol that is no token as its bytes through the
 * <0xXX> byte tokens. */
#include "vocab_internal.h"

#include <stdlib.h>

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

static void heap_push(asn_spm_scratch *s, bigram b)
{
    asn_grow((void **)&s->heap, &s->heap_cap, s->n_heap + 1, sizeof *s->heap);
    size_t i = s->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&b, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = b;
}

static bigram heap_pop(asn_spm_scratch *s)
{
    bigram top = s->heap[0], last = s->heap[--s->n_heap];
    size_t i = 0, n = s->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n)
        s->heap[i] = last;
    return top;
}

/* Queues the pair (left, right) if their text together is a token. */
static void try_pair(const asn_vocab *v, const char *text, asn_spm_scratch *s, int32_t left, int32_t right)
{
    if (left < 0 || right < 0)
        return;
    const sym *l = &s->sym[left], *r = &s->sym[right];
    int32_t tok = asn_tok_find(v, text + l->start, l->n + r->n);
    if (tok < 0)
        return;
    heap_push(s, (bigram){v->score[tok], left, right, l->n + r->n});
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
        s->sym[ns] = (sym){(uint32_t)off, (uint32_t)len, ns - 1, off + len == n ? -1 : ns + 1};
        off += len;
        ns++;
    }
    s->n_heap = 0;
    for (int32_t i = 1; i < ns; i++)
        try_pair(v, text, s, i - 1, i);
    while (s->n_heap) {
        bigram b = heap_pop(s);
        sym *l = &s->sym[b.left], *r = &s->sym[b.right];
        /* stale: one side has changed since the pair was queued */
        if (!l->n || !r->n || l->n + r->n != b.size)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s->sym[r->next].prev = b.left;
        try_pair(v, text, s, l->prev, b.left);
        try_pair(v, text, s, b.left, l->next);
    }
    for (int32_t i = 0; i != -1; i = s->sym[i].next) {
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
