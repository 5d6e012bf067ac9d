/* fuzz_tokenizer.c — libFuzzer target: arbitrary bytes tokenized with one
 * of several vocabs (SPM, phi-3's special-token rules, the llama3, qwen2,
 * gpt2/starcoder matchers, PCRE2 pre-tokenizers on collapsed and on real
 * code points), then detokenized whole and streamed. Besides not crashing,
 * it checks what must hold for any input:
 *  - every id is in the vocab;
 *  - streamed pieces concatenate to the same bytes as the pieces;
 *  - byte-level BPE loses nothing: for valid UTF-8 the pieces give the
 *    input back (when each byte of it has a token: Falcon's vocab lacks
 *    some control characters, whose bytes llama.cpp drops);
 *  - SPM (no special tokens parsed or added) detokenizes valid UTF-8 input
 *    to itself, unless it holds U+2581 (read back as a space). Invalid
 *    input need not come back: a bad lead byte swallows the next bytes
 *    into one symbol, possibly half of the U+2581 that stands for a space,
 *    whose bytes then come back instead of the space (llama.cpp does the
 *    same; regressions/fuzz_tokenizer/spm-lead-byte-eats-space).
 * Input: byte 0 picks the vocab, byte 1 the flags, the rest is the text.
 * The vocabs are loaded once, from $ASN_FUZZ_VOCAB_DIR, else
 * $ASN_ROOT/tests/data/vocab, else tests/data/vocab. */
#include "asn/gguf.h"
#include "asn/vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const FILES[] = {
    "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf",   "ggml-vocab-llama-bpe.gguf",
    "ggml-vocab-qwen2.gguf",     "ggml-vocab-starcoder.gguf", "ggml-vocab-falcon.gguf",
    "ggml-vocab-deepseek-llm.gguf", "ggml-vocab-mpt.gguf",
};
#define N_FILES (sizeof FILES / sizeof *FILES)
static asn_vocab *vocabs[N_FILES];
static unsigned char byte_ok[N_FILES][256]; /* BPE: the byte's character is a token */
static int loaded;

static void load_all(void)
{
    char dir[3072], path[4096];
    const char *d = getenv("ASN_FUZZ_VOCAB_DIR"), *root = getenv("ASN_ROOT");
    if (d)
        snprintf(dir, sizeof dir, "%s", d);
    else
        snprintf(dir, sizeof dir, "%s/tests/data/vocab", root ? root : ".");
    for (size_t i = 0; i < N_FILES; i++) {
        asn_err e;
        snprintf(path, sizeof path, "%s/%s", dir, FILES[i]);
        asn_gguf *g = asn_gguf_open(path, &e);
        if (!g || !(vocabs[i] = asn_vocab_load(g, &e))) {
            fprintf(stderr, "fuzz_tokenizer: %s\n", e.msg);
            abort();
        }
        asn_gguf_close(g);
        for (int b = 0; b < 256; b++) { /* GPT-2's byte-to-unicode alphabet */
            int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE, k = 0;
            for (int x = 0; x < b; x++)
                k += !((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE);
            unsigned cp = printable ? (unsigned)b : 0x100u + (unsigned)k;
            char ch[2] = {(char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F))};
            byte_ok[i][b] = cp < 0x80 ? asn_vocab_find(vocabs[i], (char[]){(char)cp}, 1) >= 0
                                      : asn_vocab_find(vocabs[i], ch, 2) >= 0;
        }
    }
    loaded = 1;
}

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_tokenizer: %s\n", what);
    abort();
}

/* Strict UTF-8: no overlong forms, surrogates or code points past U+10FFFF. */
static int utf8_strict(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!len || i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
        if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] >= 0xA0) || (c == 0xF0 && s[i + 1] < 0x90) ||
            (c == 0xF4 && s[i + 1] >= 0x90))
            return 0;
        i += len;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!loaded)
        load_all();
    if (size < 2)
        return 0;
    size_t which = data[0] % N_FILES;
    const asn_vocab *v = vocabs[which];
    int add_special = data[1] & 1, parse_special = (data[1] >> 1) & 1, render = (data[1] >> 2) & 1;
    const char *text = (const char *)data + 2;
    size_t len = size - 2;

    asn_err e;
    int32_t *ids;
    size_t n;
    if (asn_tokenize(v, text, len, add_special, parse_special, &ids, &n, &e))
        fail(e.msg);
    int32_t nv = asn_vocab_n_tokens(v);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= nv)
            fail("id out of range");

    /* pieces, whole and streamed */
    size_t cap = asn_vocab_max_piece(v) + 4, total = 0, all = 0, streamed_len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        asn_vocab_piece(v, ids[i], render, &pl);
        total += pl;
        asn_vocab_piece(v, ids[i], 1, &pl);
        all += pl;
    }
    char *pieces = malloc(all + 1), *streamed = malloc(total + 4), *buf = malloc(cap);
    size_t k = 0;
    asn_detok_stream st;
    asn_detok_stream_init(&st, v, render);
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = asn_vocab_piece(v, ids[i], render, &pl);
        if (pl)
            memcpy(pieces + k, p, pl);
        k += pl;
        int w = asn_detok_stream_push(&st, ids[i], buf, cap);
        if (w < 0 || streamed_len + (size_t)w > total)
            fail("stream push");
        if (w)
            memcpy(streamed + streamed_len, buf, (size_t)w);
        streamed_len += (size_t)w;
    }
    int w = asn_detok_stream_flush(&st, buf, cap);
    if (w < 0 || streamed_len + (size_t)w > total)
        fail("stream flush");
    memcpy(streamed + streamed_len, buf, (size_t)w);
    streamed_len += (size_t)w;
    if (streamed_len != total || memcmp(streamed, pieces, total))
        fail("streamed pieces differ from the pieces");

    /* byte-level BPE is lossless on valid UTF-8 (specials rendered as text) */
    int all_bytes = 1;
    for (size_t i = 0; i < len; i++)
        all_bytes &= byte_ok[which][(unsigned char)text[i]];
    if (asn_vocab_kind_of(v) == ASN_VOCAB_BPE && all_bytes && utf8_strict((const unsigned char *)text, len)) {
        size_t from = add_special && asn_vocab_add_bos(v) && n && ids[0] == asn_vocab_bos(v);
        size_t to = n - (add_special && asn_vocab_add_eos(v) && n > from && ids[n - 1] == asn_vocab_eos(v));
        k = 0;
        for (size_t i = from; i < to; i++) {
            size_t pl;
            const char *p = asn_vocab_piece(v, ids[i], 1, &pl);
            if (pl)
                memcpy(pieces + k, p, pl);
            k += pl;
        }
        if (k != len || memcmp(pieces, text, len))
            fail("BPE pieces do not give the input back");
    }

    /* SPM detokenizes to the input */
    char *out;
    size_t out_len;
    if (asn_detokenize(v, ids, n, add_special, render, &out, &out_len, &e))
        fail(e.msg);
    if (asn_vocab_kind_of(v) == ASN_VOCAB_SPM && !add_special && !parse_special &&
        utf8_strict((const unsigned char *)text, len) && !memmem(text, len, "\xE2\x96\x81", 3) &&
        (out_len != len || memcmp(out, text, len)))
        fail("SPM detokenize does not give the input back");
    free(out);
    free(pieces);
    free(streamed);
    free(buf);
    free(ids);
    return 0;
}
