/* vocab.c — the vocabulary of a GGUF file and everything around the three
 * tokenizers: loading tokenizer.ggml.* the way llama.cpp's
 * llama_vocab::impl::load does (defaults, special ids, flags, the
 * end-of-generation set, attribute fixes), splitting text on special
 * tokens before tokenizing (tokenizer_st_partition), BOS/EOS, and turning
 * ids back into bytes (token_to_piece, detokenize, and a stream for
 * generation loops). The algorithms themselves are in tok_spm.c,
 * tok_bpe.c and tok_wpm.c, the pre-tokenizers in pretok.c. */
#include "tok_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- special trie */

/* A byte trie of the special tokens' texts: one pass over a text tells
 * which of them occur in it at all (most texts hold none, and only those
 * that occur need llama.cpp's token-by-token partition). */
typedef struct trie_node {
    int32_t child, sibling; /* first child, next sibling; -1 = none */
    unsigned char byte;
    unsigned char term;     /* some special token ends here */
} trie_node;

struct asn_trie {
    trie_node *node;
    size_t n, cap;
    int32_t root[256];      /* children of the root, by byte */
    int32_t *term_of;       /* terminal node of special token k */
};

static int32_t trie_add_node(struct asn_trie *t, unsigned char b)
{
    asn_grow((void **)&t->node, &t->cap, t->n + 1, sizeof *t->node);
    t->node[t->n] = (trie_node){-1, -1, b, 0};
    return (int32_t)t->n++;
}

static int32_t trie_insert(struct asn_trie *t, const unsigned char *s, size_t n)
{
    int32_t *slot = &t->root[s[0]];
    if (*slot < 0)
        *slot = trie_add_node(t, s[0]);
    int32_t cur = *slot;
    for (size_t i = 1; i < n; i++) {
        int32_t c = t->node[cur].child, prev = -1;
        while (c >= 0 && t->node[c].byte != s[i])
            prev = c, c = t->node[c].sibling;
        if (c < 0) {
            c = trie_add_node(t, s[i]);
            if (prev < 0)
                t->node[cur].child = c;
            else
                t->node[prev].sibling = c;
        }
        cur = c;
    }
    t->node[cur].term = 1;
    return cur;
}

/* hit[node] = 1 for every terminal node whose text occurs in s. */
static void trie_scan(const struct asn_trie *t, const unsigned char *s, size_t n, unsigned char *hit)
{
    for (size_t i = 0; i < n; i++) {
        int32_t cur = t->root[s[i]];
        for (size_t j = i + 1; cur >= 0; j++) {
            if (t->node[cur].term)
                hit[cur] = 1;
            if (j >= n)
                break;
            int32_t c = t->node[cur].child;
            while (c >= 0 && t->node[c].byte != s[j])
                c = t->node[c].sibling;
            cur = c;
        }
    }
}

static void trie_free(struct asn_trie *t)
{
    if (!t)
        return;
    free(t->node);
    free(t->term_of);
    free(t);
}

/* ------------------------------------------------------------------ load */

static const char *const EOT_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
    "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "<end_of_utterance>",
    NULL};
static const char *const EOM_TEXTS[] = {"<|eom_id|>", NULL};
static const char *const FIM_PRE_TEXTS[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                            "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
                                            "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
static const char *const FIM_SUF_TEXTS[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                            "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>", "<SUF>",
                                            "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
static const char *const FIM_MID_TEXTS[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                            "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
                                            "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL};
static const char *const FIM_PAD_TEXTS[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const FIM_REP_TEXTS[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL};
static const char *const FIM_SEP_TEXTS[] = {"<|file_sep|>", NULL};
/* texts that end a generation (llama.cpp's list) */
static const char *const EOG_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~[", NULL};
/* gpt-oss tokens that are always rendered */
static const char *const ALWAYS_RENDERED[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};

static int in_list(const char *const *list, const char *s, size_t n)
{
    for (; *list; list++)
        if (strlen(*list) == n && !memcmp(*list, s, n))
            return 1;
    return 0;
}

static int32_t find_text(const asn_vocab *v, const char *s) { return asn_tok_find(v, s, strlen(s)); }

/* The first text of the list that is a token (the list is in priority
 * order: <|eot_id|> before <|end_of_text|>, <|im_end|> before <|endoftext|>). */
static int32_t find_by_texts(const asn_vocab *v, const char *const *texts)
{
    for (; *texts; texts++) {
        int32_t id = find_text(v, *texts);
        if (id >= 0)
            return id;
    }
    return -1;
}

static uint32_t attr_of_type(int64_t type)
{
    switch (type) {
    case ASN_TOKEN_UNKNOWN: return ASN_TATTR_UNKNOWN;
    case ASN_TOKEN_UNUSED: return ASN_TATTR_UNUSED;
    case ASN_TOKEN_NORMAL: return ASN_TATTR_NORMAL;
    case ASN_TOKEN_CONTROL: return ASN_TATTR_CONTROL;
    case ASN_TOKEN_USER_DEFINED: return ASN_TATTR_USER_DEFINED;
    case ASN_TOKEN_BYTE: return ASN_TATTR_BYTE;
    default: return 0;
    }
}

static int load_tokens(asn_vocab *v, const asn_gguf *g, asn_err *e)
{
    const asn_gguf_kv *tk = NULL, *sc = NULL, *ty = NULL;
    if (asn_gguf_get_arr(g, "tokenizer.ggml.tokens", 0, &tk, e))
        return -1;
    if (!tk)
        return asn_err_set(e, "no tokenizer vocab (tokenizer.ggml.tokens)");
    if (tk->v.arr.type != ASN_GGUF_STRING)
        return asn_err_set(e, "tokenizer.ggml.tokens must be an array of strings");
    if (tk->v.arr.n == 0 || tk->v.arr.n > INT32_MAX / 2)
        return asn_err_set(e, "tokenizer.ggml.tokens: bad vocab size %llu", (unsigned long long)tk->v.arr.n);
    v->n = (int32_t)tk->v.arr.n;
    if (asn_gguf_get_arr(g, "tokenizer.ggml.scores", 0, &sc, e) ||
        asn_gguf_get_arr(g, "tokenizer.ggml.token_type", 0, &ty, e))
        return -1;
    if (sc && (sc->v.arr.type == ASN_GGUF_STRING || sc->v.arr.type == ASN_GGUF_BOOL))
        return asn_err_set(e, "tokenizer.ggml.scores must be an array of numbers");
    if (ty && (ty->v.arr.type == ASN_GGUF_STRING || ty->v.arr.type == ASN_GGUF_F32 ||
               ty->v.arr.type == ASN_GGUF_F64))
        return asn_err_set(e, "tokenizer.ggml.token_type must be an array of integers");
    if (sc && sc->v.arr.n < (uint64_t)v->n)
        return asn_err_set(e, "tokenizer.ggml.scores has %llu entries for %d tokens",
                           (unsigned long long)sc->v.arr.n, v->n);
    if (ty && ty->v.arr.n < (uint64_t)v->n)
        return asn_err_set(e, "tokenizer.ggml.token_type has %llu entries for %d tokens",
                           (unsigned long long)ty->v.arr.n, v->n);

    size_t total = 0;
    for (int32_t i = 0; i < v->n; i++) {
        uint64_t len = asn_gguf_arr_str(tk, (uint64_t)i).n;
        total += (len ? len : 32) + 1;
        if (total > UINT32_MAX)
            return asn_err_set(e, "tokenizer.ggml.tokens: texts too long");
    }
    v->text = asn_xmalloc(total);
    v->off = asn_xmalloc(((size_t)v->n + 1) * sizeof *v->off);
    v->score = asn_xcalloc((size_t)v->n, sizeof *v->score);
    v->type = asn_xcalloc((size_t)v->n, 1);
    v->attr = asn_xcalloc((size_t)v->n, sizeof *v->attr);
    size_t at = 0;
    for (int32_t i = 0; i < v->n; i++) {
        asn_gguf_str s = asn_gguf_arr_str(tk, (uint64_t)i);
        v->off[i] = (uint32_t)at;
        if (s.n) {
            memcpy(v->text + at, s.p, s.n);
            at += s.n;
        } else { /* as llama.cpp: empty texts cannot be looked up */
            at += (size_t)snprintf(v->text + at, 32, "[EMPTY_%d]", i);
        }
        v->text[at++] = 0;
        v->score[i] = sc ? (float)asn_gguf_arr_float(sc, (uint64_t)i) : 0.0f;
        int64_t type = ty ? asn_gguf_arr_int(ty, (uint64_t)i) : ASN_TOKEN_NORMAL;
        v->type[i] = type >= 0 && type <= ASN_TOKEN_BYTE ? (uint8_t)type : ASN_TOKEN_UNDEFINED;
        v->attr[i] = ty ? attr_of_type(type) : ASN_TATTR_NORMAL;
    }
    v->off[v->n] = (uint32_t)at;
    v->n_sym = v->n;

    size_t cap = 16;
    while (cap < 2 * (size_t)v->n + 16)
        cap <<= 1;
    v->map.slot = asn_xcalloc(cap, sizeof *v->map.slot);
    v->map.mask = cap - 1;
    for (int32_t i = 0; i < v->n; i++) {
        size_t len;
        const char *t = asn_sym_text(v, i, &len);
        uint64_t h = asn_str_hash(t, len), entry = (h >> 32 << 32) | (uint32_t)(i + 1);
        size_t k = (size_t)h & v->map.mask;
        for (;; k = (k + 1) & v->map.mask) { /* a repeated text maps to its last id */
            uint64_t x = v->map.slot[k];
            if (!x) {
                v->map.slot[k] = entry;
                break;
            }
            size_t l2;
            const char *t2 = asn_sym_text(v, (int32_t)(uint32_t)x - 1, &l2);
            if (x >> 32 == h >> 32 && l2 == len && !memcmp(t2, t, len)) {
                v->map.slot[k] = entry;
                break;
            }
        }
    }
    return 0;
}

/* u32 key -> *id when it names a token; absent or out of range: unchanged. */
static int load_id(const asn_gguf *g, const char *key, int32_t n, int32_t *id, asn_err *e)
{
    uint32_t x;
    int have = asn_gguf_find(g, key) != NULL;
    if (asn_gguf_get_u32(g, key, 0, &x, e))
        return -1;
    if (have && x < (uint32_t)n)
        *id = (int32_t)x;
    return 0;
}

static int load_bool(const asn_gguf *g, const char *key, int *out, asn_err *e)
{
    return asn_gguf_get_bool(g, key, 0, out, e);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void eog_add(asn_vocab *v, int32_t id, size_t *cap)
{
    if (id < 0 || asn_vocab_is_eog(v, id))
        return;
    asn_grow((void **)&v->eog, cap, v->n_eog + 1, sizeof *v->eog);
    v->eog[v->n_eog++] = id;
    qsort(v->eog, v->n_eog, sizeof *v->eog, cmp_i32);
}

static void eog_remove(asn_vocab *v, int32_t id)
{
    for (size_t i = 0; i < v->n_eog; i++)
        if (v->eog[i] == id) {
            memmove(v->eog + i, v->eog + i + 1, (v->n_eog - i - 1) * sizeof *v->eog);
            v->n_eog--;
            return;
        }
}

/* Special ids found by their text, end-of-generation set, attribute fixes:
 * llama.cpp's load() after the special-id keys. Where llama.cpp takes the
 * first of several candidates in its hash map's (arbitrary) order, the
 * first in the order of the lists above wins here. */
static void find_specials(asn_vocab *v)
{
    struct {
        int32_t *id;
        const char *const *texts;
    } by_text[] = {
        {&v->eot, EOT_TEXTS},         {&v->eom, EOM_TEXTS},         {&v->fim_pre, FIM_PRE_TEXTS},
        {&v->fim_suf, FIM_SUF_TEXTS}, {&v->fim_mid, FIM_MID_TEXTS}, {&v->fim_pad, FIM_PAD_TEXTS},
        {&v->fim_rep, FIM_REP_TEXTS}, {&v->fim_sep, FIM_SEP_TEXTS},
    };
    for (size_t k = 0; k < sizeof by_text / sizeof *by_text; k++) {
        if (*by_text[k].id >= 0)
            continue;
        int32_t id = find_by_texts(v, by_text[k].texts);
        if (id >= 0) {
            *by_text[k].id = id;
            v->attr[id] |= ASN_TATTR_CONTROL;
        }
    }
    /* control tokens named "unused..." are unused */
    for (int32_t i = 0; i < v->n; i++)
        if ((v->attr[i] & ASN_TATTR_CONTROL) && strstr(v->text + v->off[i], "unused"))
            v->attr[i] |= ASN_TATTR_UNUSED;

    size_t cap = 0;
    eog_add(v, v->fim_pad, &cap);
    eog_add(v, v->fim_rep, &cap);
    eog_add(v, v->fim_sep, &cap);
    for (int32_t i = 0; i < v->n; i++) {
        size_t len;
        const char *t = asn_sym_text(v, i, &len);
        if (in_list(EOG_TEXTS, t, len)) {
            eog_add(v, i, &cap);
            v->attr[i] |= ASN_TATTR_CONTROL;
        }
    }
    for (int32_t i = 0; i < v->n; i++) {
        size_t len;
        const char *t = asn_sym_text(v, i, &len);
        if (in_list(ALWAYS_RENDERED, t, len))
            v->attr[i] = ASN_TATTR_USER_DEFINED;
    }
    eog_add(v, v->eos, &cap);
    eog_add(v, v->eot, &cap);
    eog_add(v, v->eom, &cap);

    /* o200k_harmony / solar-open: <|end|> ends a message, not the generation */
    int has_return = 0, has_call = 0, has_flush = 0, has_tool_response = 0;
    int32_t end_id = -1, s_id = -1;
    for (size_t k = 0; k < v->n_eog; k++) {
        const char *t = v->text + v->off[v->eog[k]];
        has_return |= !strcmp(t, "<|return|>");
        has_call |= !strcmp(t, "<|call|>") || !strcmp(t, "<|calls|>");
        has_flush |= !strcmp(t, "<|flush|>");
        has_tool_response |= !strcmp(t, "<|tool_response>");
        if (!strcmp(t, "<|end|>"))
            end_id = v->eog[k];
        if (!strcmp(t, "</s>"))
            s_id = v->eog[k];
    }
    if (end_id >= 0 && ((has_return && has_call) || (has_call && has_flush))) {
        eog_remove(v, end_id);
        v->attr[end_id] = ASN_TATTR_USER_DEFINED;
    }
    /* gemma4 / paddleocr: </s> is text there */
    if (s_id >= 0 && has_tool_response) {
        eog_remove(v, s_id);
        v->attr[s_id] = ASN_TATTR_NORMAL;
    }
}

static int by_length_desc(const void *a, const void *b, void *ctx)
{
    const asn_vocab *v = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    uint32_t lx = v->off[x + 1] - v->off[x], ly = v->off[y + 1] - v->off[y];
    if (lx != ly)
        return lx > ly ? -1 : 1;
    return (x > y) - (x < y);
}

static void build_special(asn_vocab *v)
{
    size_t cap = 0;
    for (int32_t i = 0; i < v->n; i++)
        if (v->attr[i] & (ASN_TATTR_CONTROL | ASN_TATTR_USER_DEFINED | ASN_TATTR_UNKNOWN)) {
            asn_grow((void **)&v->special, &cap, v->n_special + 1, sizeof *v->special);
            v->special[v->n_special++] = i;
        }
    /* qsort_r: glibc's argument order */
    qsort_r(v->special, v->n_special, sizeof *v->special, by_length_desc, v);
    struct asn_trie *t = asn_xcalloc(1, sizeof *t);
    memset(t->root, -1, sizeof t->root);
    t->term_of = asn_xmalloc((v->n_special + 1) * sizeof *t->term_of);
    for (size_t k = 0; k < v->n_special; k++) {
        size_t len;
        const char *s = asn_sym_text(v, v->special[k], &len);
        t->term_of[k] = trie_insert(t, (const unsigned char *)s, len);
    }
    v->trie = t;
}

/* Piece of token id with special tokens rendered (llama.cpp's cache). */
static void render_piece(const asn_vocab *v, int32_t id, char **buf, size_t *len, size_t *cap)
{
    size_t n;
    const char *t = asn_sym_text(v, id, &n);
    uint32_t a = v->attr[id];
    *len = 0;
    asn_grow((void **)buf, cap, 4 * n + 64, 1);
    if (a & (ASN_TATTR_UNKNOWN | ASN_TATTR_CONTROL | ASN_TATTR_USER_DEFINED)) {
        memcpy(*buf, t, n);
        *len = n;
    } else if (a & ASN_TATTR_NORMAL) {
        if (v->kind != ASN_VOCAB_BPE) { /* SPM, WPM: U+2581 -> space */
            for (size_t i = 0; i < n; i++) {
                if (i + 2 < n && !memcmp(t + i, "\xE2\x96\x81", 3)) {
                    (*buf)[(*len)++] = ' ';
                    i += 2;
                } else {
                    (*buf)[(*len)++] = t[i];
                }
            }
        } else { /* through the inverse byte table */
            uint32_t *cps = asn_xmalloc((n + 1) * sizeof *cps);
            size_t ncp = asn_utf8_decode(t, n, cps);
            for (size_t i = 0; i < ncp; i++) {
                int b = asn_cp_byte(cps[i]);
                if (b >= 0) {
                    (*buf)[(*len)++] = (char)b;
                    continue;
                }
                /* llama.cpp's marker for a character outside the alphabet */
                char u[4];
                int ul = asn_utf8_encode(cps[i], u);
                asn_grow((void **)buf, cap, *len + 16 + 2 * (size_t)ul + n, 1);
                *len += (size_t)sprintf(*buf + *len, "[UNK_BYTE_0x");
                for (int k = 0; k < ul; k++)
                    *len += (size_t)sprintf(*buf + *len, "%02x", (unsigned char)u[k]);
                memcpy(*buf + *len, t, n);
                *len += n;
                (*buf)[(*len)++] = ']';
                asn_grow((void **)buf, cap, *len + 4 * (ncp - i) + 64, 1);
            }
            free(cps);
        }
    } else if (a & ASN_TATTR_BYTE) { /* "<0xXX>": the hex digits at 3..4 */
        if (n >= 3) {
            char hex[3] = {0};
            memcpy(hex, t + 3, n - 3 < 2 ? n - 3 : 2);
            (*buf)[(*len)++] = (char)strtol(hex, NULL, 16);
        }
    }
}

static void build_pieces(asn_vocab *v)
{
    char *buf = NULL;
    size_t cap = 0, total = 0, len, pcap = 0;
    v->poff = asn_xmalloc(((size_t)v->n + 1) * sizeof *v->poff);
    for (int32_t i = 0; i < v->n; i++) {
        render_piece(v, i, &buf, &len, &cap);
        asn_grow((void **)&v->piece, &pcap, total + len + 1, 1);
        memcpy(v->piece + total, buf, len);
        v->poff[i] = (uint32_t)total;
        total += len;
        if (len > v->max_piece)
            v->max_piece = len;
    }
    v->poff[v->n] = (uint32_t)total;
    if (!v->piece)
        v->piece = asn_xmalloc(1);
    free(buf);
}

/* lstrip/rstrip attributes by model name (llama.cpp's per-model rules). */
static int set_strip_attrs(asn_vocab *v, const asn_gguf *g, const char *pre, asn_err *e)
{
    char *name = NULL, *arch = NULL;
    if (asn_gguf_get_str(g, "general.name", 0, &name, e) ||
        asn_gguf_get_str(g, "general.architecture", 0, &arch, e)) {
        free(name);
        return -1;
    }
    for (char *p = name; p && *p; p++)
        *p = (char)tolower((unsigned char)*p);
    const char *pr = pre ? pre : "";
    if (strstr(pr, "jina-v2-de") || strstr(pr, "jina-v2-es") || strstr(pr, "jina-v2-code") ||
        (arch && (strstr(arch, "nomic-bert-moe") || strstr(arch, "jina-bert-v3")))) {
        int32_t id = find_text(v, "<mask>");
        if (id >= 0)
            v->attr[id] |= ASN_TATTR_LSTRIP;
    } else if (name && (strstr(name, "phi-3") || strstr(name, "phi3"))) {
        /* Phi-3: special tokens eat the whitespace after them */
        for (size_t k = 0; k < v->n_special; k++)
            v->attr[v->special[k]] |= ASN_TATTR_RSTRIP;
        int32_t id = find_text(v, "</s>");
        if (id >= 0)
            v->attr[id] |= ASN_TATTR_RSTRIP;
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (size_t k = 0; k < 3; k++)
            if ((id = find_text(v, keep[k])) >= 0)
                v->attr[id] &= ~(uint32_t)ASN_TATTR_RSTRIP;
    } else if (name && strstr(name, "modern-bert")) {
        int32_t id = find_text(v, "[MASK]");
        if (id >= 0)
            v->attr[id] |= ASN_TATTR_LSTRIP;
    }
    free(name);
    free(arch);
    return 0;
}

asn_vocab *asn_vocab_load(const asn_gguf *g, asn_err *e)
{
    asn_vocab *v = asn_xcalloc(1, sizeof *v);
    char *pre = NULL;
    v->bos = v->eos = v->eot = v->eom = v->unk = v->sep = v->pad = v->mask = -1;
    v->fim_pre = v->fim_suf = v->fim_mid = v->fim_pad = v->fim_rep = v->fim_sep = -1;

    if (asn_gguf_get_str(g, "tokenizer.ggml.model", 0, &v->model, e))
        goto fail;
    if (!v->model) {
        asn_err_set(e, "no tokenizer (tokenizer.ggml.model)");
        goto fail;
    }
    if (!strcmp(v->model, "llama")) {
        v->kind = ASN_VOCAB_SPM;
    } else if (!strcmp(v->model, "gpt2")) {
        v->kind = ASN_VOCAB_BPE;
    } else if (!strcmp(v->model, "bert")) {
        v->kind = ASN_VOCAB_WPM;
    } else if (!strcmp(v->model, "none") || !strcmp(v->model, "no_vocab")) {
        asn_err_set(e, "the model has no vocabulary (tokenizer.ggml.model \"%s\")", v->model);
        goto fail;
    } else {
        static const char *const known[] = {"t5", "rwkv", "plamo2", "gemma4", "hybriddna", "whitespace", NULL};
        int k = in_list(known, v->model, strlen(v->model));
        asn_err_set(e, "%s tokenizer \"%s\"", k ? "unsupported" : "unknown", v->model);
        goto fail;
    }
    if (asn_gguf_get_str(g, "tokenizer.ggml.pre", 0, &pre, e))
        goto fail;

    if (v->kind == ASN_VOCAB_SPM) {
        v->add_space_prefix = 1;
        v->add_bos = 1;
        v->bos = 1, v->eos = 2, v->unk = 0;
    } else if (v->kind == ASN_VOCAB_WPM) {
        asn_ucd_init();
        v->add_bos = 1;
        v->clean_spaces = 1;
        v->bos = 101, v->unk = 100, v->sep = 102, v->pad = 0, v->mask = 103;
    } else {
        if (!(v->pre = asn_pretok_new(pre && *pre ? pre : NULL, e)))
            goto fail;
        unsigned f = asn_pretok_flags(v->pre);
        v->ignore_merges = !!(f & ASN_PRE_IGNORE_MERGES);
        v->clean_spaces = !(f & ASN_PRE_NO_CLEAN);
        v->add_bos = !!(f & ASN_PRE_ADD_BOS);
        v->bos = f & ASN_PRE_NO_BOS ? -1 : 11; /* 11: Falcon's <|endoftext|>, llama.cpp's default */
        v->eos = 11;
    }
    if (load_bool(g, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix, e) || load_tokens(v, g, e))
        goto fail;
    if (v->kind == ASN_VOCAB_BPE) {
        if (asn_bpe_load_merges(v, g, e))
            goto fail;
    } else if (v->kind == ASN_VOCAB_WPM) {
        /* the normalizer: lowercase by default, accents stripped as it says */
        v->lowercase = 1;
        if (load_bool(g, "tokenizer.ggml.normalizer.lowercase", &v->lowercase, e))
            goto fail;
        v->strip_accents = v->lowercase;
        if (load_bool(g, "tokenizer.ggml.normalizer.strip_accents", &v->strip_accents, e))
            goto fail;
        for (int32_t i = 0; i < v->n; i++)
            if (v->off[i + 1] - v->off[i] - 1 > v->max_token_len)
                v->max_token_len = v->off[i + 1] - v->off[i] - 1;
    } else {
        for (int b = 0; b < 256; b++) {
            char hex[8], raw = (char)b;
            snprintf(hex, sizeof hex, "<0x%02X>", b);
            v->byte_tok[b] = find_text(v, hex);
            if (v->byte_tok[b] < 0)
                v->byte_tok[b] = asn_tok_find(v, &raw, 1);
        }
        v->spm_split = 1;
        for (int32_t i = 0; i < v->n && v->spm_split; i++) {
            size_t len;
            const char *t = asn_sym_text(v, i, &len);
            for (size_t k = 1; k + 3 <= len; k++)
                if (!memcmp(t + k, "\xE2\x96\x81", 3) && (k < 3 || memcmp(t + k - 3, "\xE2\x96\x81", 3))) {
                    v->spm_split = 0;
                    break;
                }
        }
    }

    /* special ids: defaults past the vocab are dropped, keys override */
    struct {
        const char *key;
        int32_t *id;
    } ids[] = {
        {"tokenizer.ggml.bos_token_id", &v->bos},         {"tokenizer.ggml.eos_token_id", &v->eos},
        {"tokenizer.ggml.eot_token_id", &v->eot},         {"tokenizer.ggml.eom_token_id", &v->eom},
        {"tokenizer.ggml.unknown_token_id", &v->unk},     {"tokenizer.ggml.seperator_token_id", &v->sep},
        {"tokenizer.ggml.padding_token_id", &v->pad},     {"tokenizer.ggml.mask_token_id", &v->mask},
        {"tokenizer.ggml.fim_pre_token_id", &v->fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &v->fim_suf},
        {"tokenizer.ggml.fim_mid_token_id", &v->fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &v->fim_pad},
        {"tokenizer.ggml.fim_rep_token_id", &v->fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &v->fim_sep},
        {"tokenizer.ggml.prefix_token_id", &v->fim_pre},  {"tokenizer.ggml.suffix_token_id", &v->fim_suf},
        {"tokenizer.ggml.middle_token_id", &v->fim_mid},
    };
    for (size_t k = 0; k < sizeof ids / sizeof *ids; k++) {
        if (*ids[k].id >= v->n)
            *ids[k].id = -1;
        /* WPM: [CLS] is the BOS; a converter that wrote only the cls key
         * meant it as such (gguf-py copies cls to bos when bos is absent) */
        if (v->kind == ASN_VOCAB_WPM && ids[k].id == &v->bos &&
            load_id(g, "tokenizer.ggml.cls_token_id", v->n, &v->bos, e))
            goto fail;
        if (load_id(g, ids[k].key, v->n, ids[k].id, e))
            goto fail;
    }
    if (load_bool(g, "tokenizer.ggml.add_bos_token", &v->add_bos, e) ||
        load_bool(g, "tokenizer.ggml.add_eos_token", &v->add_eos, e))
        goto fail;

    find_specials(v);
    build_special(v);
    build_pieces(v);
    if (set_strip_attrs(v, g, pre, e))
        goto fail;
    free(pre);
    return v;
fail:
    asn_err_prefix(e, "vocab");
    free(pre);
    asn_vocab_free(v);
    return NULL;
}

void asn_vocab_free(asn_vocab *v)
{
    if (!v)
        return;
    free(v->model);
    asn_pretok_free(v->pre);
    free(v->text);
    free(v->off);
    free(v->score);
    free(v->type);
    free(v->attr);
    free(v->xtext);
    free(v->xoff);
    free(v->map.slot);
    free(v->merge);
    free(v->eog);
    free(v->special);
    trie_free(v->trie);
    free(v->piece);
    free(v->poff);
    free(v);
}

/* -------------------------------------------------------------- metadata */

static inline int valid(const asn_vocab *v, int32_t id) { return id >= 0 && id < v->n; }

int32_t asn_vocab_n_tokens(const asn_vocab *v) { return v->n; }
asn_vocab_kind asn_vocab_kind_of(const asn_vocab *v) { return v->kind; }
const char *asn_vocab_model(const asn_vocab *v) { return v->model; }
const char *asn_vocab_pre(const asn_vocab *v) { return v->pre ? asn_pretok_name(v->pre) : "default"; }

const char *asn_vocab_text(const asn_vocab *v, int32_t id, size_t *len)
{
    if (!valid(v, id))
        return NULL;
    size_t n;
    const char *t = asn_sym_text(v, id, &n);
    if (len)
        *len = n;
    return t;
}

int asn_vocab_type(const asn_vocab *v, int32_t id) { return valid(v, id) ? v->type[id] : -1; }
uint32_t asn_vocab_attr(const asn_vocab *v, int32_t id) { return valid(v, id) ? v->attr[id] : 0; }
float asn_vocab_score(const asn_vocab *v, int32_t id) { return valid(v, id) ? v->score[id] : 0.0f; }
int32_t asn_vocab_find(const asn_vocab *v, const char *text, size_t len) { return asn_tok_find(v, text, len); }
int asn_vocab_is_control(const asn_vocab *v, int32_t id)
{
    return valid(v, id) && (v->attr[id] & (ASN_TATTR_CONTROL | ASN_TATTR_UNKNOWN));
}

int32_t asn_vocab_bos(const asn_vocab *v) { return v->bos; }
int32_t asn_vocab_eos(const asn_vocab *v) { return v->eos; }
int32_t asn_vocab_eot(const asn_vocab *v) { return v->eot; }
int32_t asn_vocab_eom(const asn_vocab *v) { return v->eom; }
int32_t asn_vocab_unk(const asn_vocab *v) { return v->unk; }
int32_t asn_vocab_pad(const asn_vocab *v) { return v->pad; }
int32_t asn_vocab_sep(const asn_vocab *v) { return v->sep; }
int asn_vocab_add_bos(const asn_vocab *v) { return v->add_bos; }
int asn_vocab_add_eos(const asn_vocab *v) { return v->add_eos; }
int asn_vocab_add_space_prefix(const asn_vocab *v) { return v->add_space_prefix; }

int asn_vocab_is_eog(const asn_vocab *v, int32_t id)
{
    size_t lo = 0, hi = v->n_eog;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v->eog[mid] == id)
            return 1;
        if (v->eog[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

size_t asn_vocab_eog_ids(const asn_vocab *v, const int32_t **ids)
{
    *ids = v->eog;
    return v->n_eog;
}

/* ---------------------------------------------------------- tokenization */

typedef struct frag {
    int32_t tok; /* -1: raw text [off, off + len) */
    size_t off, len;
} frag;

typedef struct frags {
    frag *f;
    size_t n, cap;
} frags;

static void frag_push(frags *a, int32_t tok, size_t off, size_t len)
{
    asn_grow((void **)&a->f, &a->cap, a->n + 1, sizeof *a->f);
    a->f[a->n++] = (frag){tok, off, len};
}

static inline int c_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* llama.cpp's tokenizer_st_partition: the special tokens, longest first,
 * each cut out of every raw fragment left by the ones before it. */
static void partition(const asn_vocab *v, const char *text, size_t len, int parse_special, frags *out)
{
    out->n = 0;
    if (!len)
        return;
    frag_push(out, -1, 0, len);
    if (!v->n_special)
        return;
    unsigned char *hit = asn_xcalloc(v->trie->n ? v->trie->n : 1, 1);
    trie_scan(v->trie, (const unsigned char *)text, len, hit);
    frags tmp = {0};
    for (size_t k = 0; k < v->n_special; k++) {
        int32_t id = v->special[k];
        uint32_t a = v->attr[id];
        if (!hit[v->trie->term_of[k]])
            continue; /* not in the text at all */
        if (!parse_special && (a & (ASN_TATTR_CONTROL | ASN_TATTR_UNKNOWN)))
            continue; /* USER_DEFINED tokens are matched even so */
        size_t tl;
        const char *t = asn_sym_text(v, id, &tl);
        tmp.n = 0;
        for (size_t i = 0; i < out->n; i++) {
            frag f = out->f[i];
            if (f.tok >= 0) {
                frag_push(&tmp, f.tok, 0, 0);
                continue;
            }
            size_t pos = f.off, end = f.off + f.len;
            const char *m;
            while (pos < end && (m = memmem(text + pos, end - pos, t, tl))) {
                size_t mo = (size_t)(m - text), left = mo - pos;
                if (a & ASN_TATTR_LSTRIP)
                    while (left && c_space((unsigned char)text[pos + left - 1]))
                        left--;
                if (left)
                    frag_push(&tmp, -1, pos, left);
                frag_push(&tmp, id, 0, 0);
                pos = mo + tl;
                if (a & ASN_TATTR_RSTRIP)
                    while (pos < end && c_space((unsigned char)text[pos]))
                        pos++;
            }
            if (pos < end)
                frag_push(&tmp, -1, pos, end - pos);
        }
        frags sw = *out;
        *out = tmp;
        tmp = sw;
    }
    free(tmp.f);
    free(hit);
}

int asn_tokenize(const asn_vocab *v, const char *text, size_t len, int add_special, int parse_special,
                 int32_t **ids, size_t *n, asn_err *e)
{
    *ids = NULL;
    *n = 0;
    if (!text && len)
        return asn_err_set(e, "tokenize: no text");
    if (len > UINT32_MAX / 4)
        return asn_err_set(e, "tokenize: text too long (%zu bytes)", len);
    asn_ids out = {0};
    frags fr = {0};
    partition(v, text, len, parse_special, &fr);
    int rc = 0;
    int wpm = v->kind == ASN_VOCAB_WPM; /* WPM: BOS and SEP whatever the flags say */
    if (add_special && (v->add_bos || wpm) && v->bos >= 0)
        asn_ids_push(&out, v->bos);
    if (wpm) {
        asn_wpm_scratch *s = asn_wpm_scratch_new();
        for (size_t i = 0; i < fr.n; i++) {
            const frag *f = &fr.f[i];
            if (f->tok >= 0)
                asn_ids_push(&out, f->tok);
            else
                asn_wpm_tokenize(v, text + f->off, f->len, &out, s);
        }
        asn_wpm_scratch_free(s);
        if (add_special && v->sep >= 0)
            asn_ids_push(&out, v->sep);
    } else if (v->kind == ASN_VOCAB_SPM) {
        asn_spm_scratch *s = asn_spm_scratch_new();
        char *buf = NULL;
        size_t cap = 0;
        int prev_special = 1; /* the first fragment gets the space prefix too */
        for (size_t i = 0; i < fr.n; i++) {
            const frag *f = &fr.f[i];
            if (f->tok >= 0) {
                asn_ids_push(&out, f->tok);
                prev_special = 1;
                continue;
            }
            asn_grow((void **)&buf, &cap, 3 * f->len + 3, 1);
            size_t k = 0;
            if (v->add_space_prefix && prev_special)
                memcpy(buf, "\xE2\x96\x81", 3), k = 3;
            for (size_t j = 0; j < f->len; j++) {
                char c = text[f->off + j];
                if (c == ' ')
                    memcpy(buf + k, "\xE2\x96\x81", 3), k += 3;
                else
                    buf[k++] = c;
            }
            asn_spm_tokenize(v, buf, k, &out, s);
            prev_special = 0;
        }
        free(buf);
        asn_spm_scratch_free(s);
    } else {
        asn_bpe_scratch *s = asn_bpe_scratch_new();
        for (size_t i = 0; i < fr.n && !rc; i++) {
            const frag *f = &fr.f[i];
            if (f->tok >= 0)
                asn_ids_push(&out, f->tok);
            else
                rc = asn_bpe_tokenize(v, text + f->off, f->len, &out, s, e);
        }
        asn_bpe_scratch_free(s);
    }
    if (!rc && add_special && v->add_eos && v->eos >= 0 && !wpm)
        asn_ids_push(&out, v->eos);
    free(fr.f);
    if (rc) {
        free(out.v);
        return -1;
    }
    *ids = out.v;
    *n = out.n;
    return 0;
}

/* -------------------------------------------------------- detokenization */

const char *asn_vocab_piece(const asn_vocab *v, int32_t id, int render_special, size_t *len)
{
    *len = 0;
    if (!valid(v, id) || (!render_special && (v->attr[id] & (ASN_TATTR_CONTROL | ASN_TATTR_UNKNOWN))))
        return NULL;
    *len = v->poff[id + 1] - v->poff[id];
    return v->piece + v->poff[id];
}

size_t asn_vocab_max_piece(const asn_vocab *v) { return v->max_piece; }

int asn_token_to_piece(const asn_vocab *v, int32_t id, int render_special, char *buf, size_t cap)
{
    size_t n;
    const char *p = asn_vocab_piece(v, id, render_special, &n);
    if (n > cap)
        return -(int)n;
    if (n)
        memcpy(buf, p, n);
    return (int)n;
}

/* llama.cpp's clean_up_tokenization_spaces, in place; returns the length. */
static size_t clean_spaces(char *t, size_t total)
{
    /* " ?", " !", " .", " ," lose the space */
    size_t n1 = total;
    total = total ? 1 : 0;
    for (size_t i = 1; i < n1; i++) {
        char x = t[i];
        if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
            total--;
        t[total++] = x;
    }
    /* " ' " loses both spaces */
    size_t n2 = total;
    total = total ? 1 : 0;
    for (size_t i = 1; i < n2; i++) {
        char x = t[i];
        if (x == '\'' && i + 1 < n2 && t[i - 1] == ' ' && t[i + 1] == ' ') {
            total--;
            t[++i] = '\0';
        }
        t[total++] = x;
    }
    /* " 's", " 'm", " 're", " 've" lose the space */
    size_t n3 = total;
    total = total ? 1 : 0;
    for (size_t i = 1; i < n3; i++) {
        char x = t[i];
        if (t[i - 1] == ' ' && x == '\'' && i + 1 < n3) {
            char x1 = t[i + 1];
            if (x1 == 's' || x1 == 'm')
                total--;
            else if (i + 2 < n3 && ((x1 == 'r' && t[i + 2] == 'e') || (x1 == 'v' && t[i + 2] == 'e')))
                total--;
        }
        t[total++] = x;
    }
    return total;
}

int asn_detokenize(const asn_vocab *v, const int32_t *ids, size_t n, int remove_special, int unparse_special,
                   char **out, size_t *len, asn_err *e)
{
    *out = NULL;
    *len = 0;
    for (size_t i = 0; i < n; i++)
        if (!valid(v, ids[i]))
            return asn_err_set(e, "detokenize: token %zu: id %d is not in the vocab (0..%d)", i, ids[i], v->n - 1);
    int remove_space = v->add_space_prefix;
    if (remove_special && v->add_bos && n && ids[0] == v->bos) {
        remove_space = 0;
        ids++, n--;
    }
    if (remove_special && v->add_eos && n && ids[n - 1] == v->eos)
        n--;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        asn_vocab_piece(v, ids[i], unparse_special, &pl);
        total += pl;
    }
    char *t = asn_xmalloc(total + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = asn_vocab_piece(v, ids[i], unparse_special, &pl);
        if (remove_space && pl && p[0] == ' ') /* only the first token may lose one */
            p++, pl--;
        remove_space = 0;
        if (pl)
            memcpy(t + k, p, pl);
        k += pl;
    }
    if (v->clean_spaces)
        k = clean_spaces(t, k);
    t[k] = 0;
    *out = t;
    *len = k;
    return 0;
}

/* ------------------------------------------------------------- streaming */

void asn_detok_stream_init(asn_detok_stream *s, const asn_vocab *v, int render_special)
{
    memset(s, 0, sizeof *s);
    s->v = v;
    s->render_special = render_special;
}

/* Length of the unfinished UTF-8 sequence at the end of b[0..n) (0 if the
 * end is complete, or invalid for good). */
static size_t incomplete_tail(const unsigned char *b, size_t n)
{
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = b[n - back];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: look further back */
        size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 1;
        return need > back ? back : 0;
    }
    return 0;
}

int asn_detok_stream_push(asn_detok_stream *s, int32_t id, char *buf, size_t cap)
{
    const asn_vocab *v = s->v;
    if (!valid(v, id) || cap < v->max_piece + 4)
        return -1;
    size_t pl;
    const char *p = asn_vocab_piece(v, id, s->render_special, &pl);
    size_t n = (size_t)s->n_held;
    memcpy(buf, s->held, n);
    if (pl)
        memcpy(buf + n, p, pl);
    n += pl;
    size_t keep = incomplete_tail((const unsigned char *)buf, n);
    memcpy(s->held, buf + n - keep, keep);
    s->n_held = (int)keep;
    return (int)(n - keep);
}

int asn_detok_stream_flush(asn_detok_stream *s, char *buf, size_t cap)
{
    if (cap < (size_t)s->n_held)
        return -1;
    int n = s->n_held;
    memcpy(buf, s->held, (size_t)n);
    s->n_held = 0;
    return n;
}
