/* corpus.c — turning a training text into a token stream for the LM
 * trainer: document splitting, parallel tokenization in pieces, the token
 * cache file, and the random training windows. */
#include "asn/lm.h"
#include "asn/vocab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Pieces of about this many bytes are tokenized independently (and in
 * parallel): large enough that the cut points are rare, small enough that
 * two threads share a 50 MB corpus evenly. */
#define PIECE_BYTES (1u << 20)

static const char TOKENS_MAGIC[8] = {'A', 'S', 'N', 'T', 'O', 'K', '0', '1'};

typedef struct piece {
    size_t off, len;
    int doc_start, doc_end;
    int32_t *ids;
    size_t n;
    int rc;
    asn_err err;
} piece;

typedef struct tok_task {
    const asn_vocab *v;
    const char *text;
    piece *p;
    int n;
} tok_task;

static void tok_run(void *arg, int ith, int nth)
{
    tok_task *t = arg;
    int lo, hi;
    asn_split(t->n, ith, nth, 1, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        piece *p = &t->p[i];
        p->rc = asn_tokenize(t->v, t->text + p->off, p->len, 0, 0, &p->ids, &p->n, &p->err);
    }
}

static int is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* Adds the pieces of the document [off, off + len). */
static void add_doc(piece **ps, int *np, size_t *cap, const char *text, size_t off, size_t len)
{
    size_t end = off + len;
    while (off < end) {
        size_t cut = end;
        if (end - off > PIECE_BYTES) {
            for (size_t i = off + PIECE_BYTES; i + 1 < end; i++)
                if (text[i] == '\n' && !is_space(text[i + 1])) {
                    cut = i + 1;
                    break;
                }
        }
        asn_grow((void **)ps, cap, (size_t)*np + 1, sizeof **ps);
        (*ps)[(*np)++] = (piece){.off = off, .len = cut - off, .doc_start = 0, .doc_end = 0};
        off = cut;
    }
}

int asn_lm_tokenize_corpus(const asn_vocab *v, const char *text, size_t len, const char *doc_sep,
                           asn_pool *pool, int32_t **ids, size_t *n, asn_err *e)
{
    piece *ps = NULL;
    int np = 0;
    size_t cap = 0, seplen = doc_sep ? strlen(doc_sep) : 0;
    size_t off = 0;
    while (off <= len) {
        size_t end = len;
        if (seplen) {
            const char *s = memmem(text + off, len - off, doc_sep, seplen);
            end = s ? (size_t)(s - text) : len;
        }
        int first = np;
        if (end > off)
            add_doc(&ps, &np, &cap, text, off, end - off);
        if (np > first) {
            ps[first].doc_start = 1;
            ps[np - 1].doc_end = 1;
        }
        if (!seplen || end == len)
            break;
        off = end + seplen;
    }
    tok_task t = {v, text, ps, np};
    asn_pool_run(pool, tok_run, &t);
    int32_t bos = asn_vocab_add_bos(v) ? asn_vocab_bos(v) : -1;
    int32_t eos = seplen ? asn_vocab_eos(v) : -1;
    size_t total = 0;
    int rc = 0;
    for (int i = 0; i < np; i++) {
        if (ps[i].rc && !rc) {
            *e = ps[i].err;
            rc = -1;
        }
        total += ps[i].n + (ps[i].doc_start && bos >= 0) + (ps[i].doc_end && eos >= 0);
    }
    int32_t *out = rc ? NULL : asn_xmalloc((total ? total : 1) * sizeof *out);
    size_t k = 0;
    for (int i = 0; i < np; i++) {
        if (out) {
            if (ps[i].doc_start && bos >= 0)
                out[k++] = bos;
            if (ps[i].n)
                memcpy(out + k, ps[i].ids, ps[i].n * sizeof *out);
            k += ps[i].n;
            if (ps[i].doc_end && eos >= 0)
                out[k++] = eos;
        }
        free(ps[i].ids);
    }
    free(ps);
    *ids = out;
    *n = rc ? 0 : total;
    return rc;
}

/* --------------------------------------------------------------- cache */

/* 1 with the ids, 0 when the file is absent or not for this key / vocab
 * size (rebuild it), -1 on a read error. */
static int tokens_load(const char *path, const char *key, int32_t n_vocab, int32_t **ids, size_t *n, asn_err *e)
{
    *ids = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? 0 : asn_err_set(e, "%s: %s", path, strerror(errno));
    char head[8 + 64];
    uint64_t count;
    int ok = fread(head, 1, sizeof head, f) == sizeof head && fread(&count, sizeof count, 1, f) == 1 &&
             !memcmp(head, TOKENS_MAGIC, 8) && !memcmp(head + 8, key, 64) && count < ((uint64_t)1 << 40);
    int32_t *buf = NULL;
    if (ok) {
        buf = asn_xmalloc((count ? count : 1) * sizeof *buf);
        ok = fread(buf, sizeof *buf, count, f) == count && fgetc(f) == EOF;
        for (uint64_t i = 0; ok && i < count; i++)
            ok = buf[i] >= 0 && buf[i] < n_vocab;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return asn_err_set(e, "%s: read error", path);
    }
    if (!ok) {
        free(buf);
        return 0;
    }
    *ids = buf;
    *n = (size_t)count;
    return 1;
}

static int tokens_save(const char *path, const char *key, const int32_t *ids, size_t n, asn_err *e)
{
    size_t pl = strlen(path);
    char *tmp = asn_xmalloc(pl + 32);
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        asn_err_set(e, "%s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    uint64_t count = n;
    fwrite(TOKENS_MAGIC, 1, 8, f);
    fwrite(key, 1, 64, f);
    fwrite(&count, sizeof count, 1, f);
    fwrite(ids, sizeof *ids, n, f);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
        asn_err_set(e, "%s: cannot write the token cache", path);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int asn_lm_corpus_load(const char *path, const asn_vocab *v, const char *vocab_id, const char *doc_sep,
                       const char *cache, asn_pool *pool, int32_t **ids, size_t *n, asn_lm_corpus_info *info,
                       asn_err *e)
{
    memset(info, 0, sizeof *info);
    *ids = NULL;
    *n = 0;
    size_t len;
    char *text;
    if (asn_read_file(path, &text, &len, e))
        return -1;
    info->bytes = len;
    /* the key: everything the ids depend on, the stream's format included */
    char text_sha[65], key[65];
    asn_sha256_hex(text, len, text_sha);
    size_t vl = strlen(vocab_id), sl = doc_sep ? strlen(doc_sep) : 0, kl = 32 + 65 + vl + 1 + sl;
    char *kb = asn_xmalloc(kl);
    int hl = snprintf(kb, kl, "asn-lm-tokens-v1%c%s%c%s%c", 0x1f, text_sha, 0x1f, vocab_id, 0x1f);
    if (sl)
        memcpy(kb + hl, doc_sep, sl);
    asn_sha256_hex(kb, (size_t)hl + sl, key);
    free(kb);
    int r = cache ? tokens_load(cache, key, asn_vocab_n_tokens(v), ids, n, e) : 0;
    if (r == 0) {
        double t0 = now();
        r = asn_lm_tokenize_corpus(v, text, len, doc_sep, pool, ids, n, e) ? -1 : 0;
        if (r)
            asn_err_prefix(e, "%s", path);
        info->seconds = now() - t0;
        asn_err we;
        if (!r && cache && tokens_save(cache, key, *ids, *n, &we))
            snprintf(info->warning, sizeof info->warning, "%s", we.msg);
    } else if (r == 1) {
        info->from_cache = 1;
        r = 0;
    }
    free(text);
    return r;
}

/* ------------------------------------------------------------- windows */

size_t asn_lm_window(asn_rng_key key, uint64_t index, size_t n, int len)
{
    size_t starts = n - (size_t)len; /* [0, n - len - 1] */
    size_t s = (size_t)(asn_rng_uniform(key, index, 0) * (double)starts);
    return s < starts ? s : starts - 1;
}
