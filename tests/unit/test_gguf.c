/* test_gguf.c — the GGUF module: tensor type table; f16/bf16 conversions
 * and Q8_0/Q4_0/Q4_K/Q6_K (de)quantization against an independent numpy
 * implementation (tests/fixtures/make_gguf_fixtures.py wrote
 * gguf_ref.gguf, which also checks the reader on a file asn did not
 * write); writer -> reader round trips; hostile inputs (hand-made bad
 * files, every truncation and single-byte corruption of a valid file); the
 * vocab-only files of llama.cpp; replay of fuzzing regressions. */
#include "asn/core.h"
#include "asn/gguf.h"
#include "t.h"

/* The fuzz target itself, so that regressions replay exactly what the
 * fuzzer ran (it defines LLVMFuzzerTestOneInput). */
#include "../fuzz/fuzz_gguf.c"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char path_buf[4096];
static const char *test_path(const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/%s", root ? root : ".", name);
    return path_buf;
}

static char tmp_dir[256];
static char tmp_buf[512];
static const char *tmp_path(const char *name)
{
    snprintf(tmp_buf, sizeof tmp_buf, "%s/%s", tmp_dir, name);
    return tmp_buf;
}

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = asn_xmalloc(len > 0 ? (size_t)len : 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int str_is(asn_gguf_str s, const char *want)
{
    return s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
}

/* Deterministic test data (splitmix64). */
static uint64_t rnd_state = 0x1234567;
static uint64_t rnd(void)
{
    uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rnd_normal(void)
{
    double u1 = ((double)(rnd() >> 11) + 0.5) / 9007199254740992.0;
    double u2 = (double)(rnd() >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
}

/* The type table (ids, names, block sizes, support) is tested with the
 * dequantizers in test_ttype.c. */

/* ------------------------------------------ conversions against numpy */

static void sha_hex(const void *p, size_t n, char out[65])
{
    asn_sha256_hex(p, n, out);
}

static void check_digest(const asn_gguf *ref, const char *name, const char *key, const void *p, size_t n)
{
    char got[65], *want = NULL;
    asn_err e;
    sha_hex(p, n, got);
    if (asn_gguf_get_str(ref, key, 1, &want, &e)) {
        T_OK(name, 0, "%s", e.msg);
        return;
    }
    T_EQ_STR(name, got, want);
    free(want);
}

/* The bulk inputs of make_gguf_fixtures.py (bulk_inputs): an LCG over bit
 * patterns without NaNs, then the midpoints between consecutive halves. */
static uint32_t *bulk_inputs(size_t *n)
{
    size_t cap = (1u << 20) + 6 * 0x7bff, k = 0;
    uint32_t *v = asn_xmalloc(cap * sizeof *v);
    for (uint64_t i = 0; i < (1u << 20); i++) {
        uint32_t b = (uint32_t)((i * 2654435761ull + 0x9E3779B9ull) & 0xffffffffu);
        if ((b & 0x7fffffff) <= 0x7f800000)
            v[k++] = b;
    }
    size_t start = k;
    for (uint32_t h = 0; h < 0x7bff; h++) {
        double a = asn_f16_to_f32((uint16_t)h), b = asn_f16_to_f32((uint16_t)(h + 1));
        int64_t mid = f32_bits((float)((a + b) / 2));
        for (int d = -1; d <= 1; d++)
            if (mid + d >= 0)
                v[k++] = (uint32_t)(mid + d);
    }
    size_t half = k - start;
    for (size_t i = 0; i < half; i++)
        v[k++] = v[start + i] | 0x80000000u;
    *n = k;
    return v;
}

static void test_conversions(const asn_gguf *ref)
{
    /* every half to f32 */
    uint32_t *all = asn_xmalloc(65536 * sizeof *all);
    for (uint32_t h = 0; h < 65536; h++) {
        float f = asn_f16_to_f32((uint16_t)h);
        all[h] = f != f ? 0x7fc00000u : f32_bits(f);
    }
    check_digest(ref, "f16 -> f32, all 65536 halves, matches numpy", "ref.f16_to_f32", all, 65536 * 4);
    free(all);

    size_t n;
    uint32_t *in = bulk_inputs(&n);
    uint16_t *h = asn_xmalloc(n * sizeof *h), *b = asn_xmalloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++) {
        h[i] = asn_f32_to_f16(bits_f32(in[i]));
        b[i] = asn_f32_to_bf16(bits_f32(in[i]));
    }
    char name[128];
    snprintf(name, sizeof name, "f32 -> f16 of %zu patterns (incl. every rounding midpoint) matches numpy", n);
    check_digest(ref, name, "ref.f32_to_f16", h, n * 2);
    snprintf(name, sizeof name, "f32 -> bf16 of %zu patterns matches the reference", n);
    check_digest(ref, name, "ref.f32_to_bf16", b, n * 2);
    free(in);
    free(h);
    free(b);

    /* the edge cases one by one, for readable failures */
    const asn_gguf_tensor *src = asn_gguf_find_tensor(ref, "conv.src");
    const asn_gguf_tensor *f16 = asn_gguf_find_tensor(ref, "conv.f16");
    const asn_gguf_tensor *bf16 = asn_gguf_find_tensor(ref, "conv.bf16");
    T_OK("conversion tensors present", src && f16 && bf16, "missing");
    if (!src || !f16 || !bf16)
        return;
    int bad_h = 0, bad_b = 0;
    char first[160] = "";
    for (int64_t i = 0; i < src->ne[0]; i++) {
        uint32_t x;
        uint16_t wh, wb;
        memcpy(&x, (const uint8_t *)src->data + 4 * i, 4);
        memcpy(&wh, (const uint8_t *)f16->data + 2 * i, 2);
        memcpy(&wb, (const uint8_t *)bf16->data + 2 * i, 2);
        uint16_t gh = asn_f32_to_f16(bits_f32(x)), gb = asn_f32_to_bf16(bits_f32(x));
        if (gh != wh && !bad_h++)
            snprintf(first, sizeof first, "f16 of %08x: expected %04x, got %04x", x, wh, gh);
        if (gb != wb && !bad_b++)
            snprintf(first, sizeof first, "bf16 of %08x: expected %04x, got %04x", x, wb, gb);
    }
    snprintf(name, sizeof name, "f32 -> f16 and bf16 of %lld edge cases", (long long)src->ne[0]);
    T_OK(name, !bad_h && !bad_b, "%d + %d wrong, %s", bad_h, bad_b, first);

    int bad = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t x = (uint16_t)i;
        float f = asn_f16_to_f32(x);
        if (f == f && asn_f32_to_f16(f) != x)
            bad++;
        float g = asn_bf16_to_f32(x);
        if (g == g && asn_f32_to_bf16(g) != x)
            bad++;
    }
    T_OK("f16 and bf16 survive a round trip through f32", bad == 0, "%d wrong", bad);
    uint16_t hn = asn_f32_to_f16(NAN), hm = asn_f32_to_f16(-NAN);
    uint16_t bn = asn_f32_to_bf16(NAN), bm = asn_f32_to_bf16(-NAN);
    uint16_t bs = asn_f32_to_bf16(bits_f32(0x7f800001)); /* signalling, payload in low bits only */
    T_OK("NaN stays a quiet NaN of the same sign",
         (hn & 0xfe00) == 0x7e00 && (hm & 0xfe00) == 0xfe00 && (bn & 0xffc0) == 0x7fc0 &&
             (bm & 0xffc0) == 0xffc0 && (bs & 0x7fc0) == 0x7fc0,
         "f16 %04x %04x, bf16 %04x %04x %04x", hn, hm, bn, bm, bs);
    T_OK("half NaN payloads kept in f32", f32_bits(asn_f16_to_f32(0x7c01)) == 0x7f802000u &&
                                              f32_bits(asn_f16_to_f32(0xfe00)) == 0xffc00000u,
         "%08x %08x", f32_bits(asn_f16_to_f32(0x7c01)), f32_bits(asn_f16_to_f32(0xfe00)));
    T_OK("special halves", asn_f16_to_f32(0x3c00) == 1.0f && asn_f16_to_f32(0x0001) == 0x1p-24f &&
                               isinf(asn_f16_to_f32(0xfc00)) && asn_f16_to_f32(0xfc00) < 0 &&
                               asn_f16_to_f32(0x7bff) == 65504.0f && signbit(asn_f16_to_f32(0x8000)),
         "1, 2^-24, -inf, 65504, -0 wrong");
}

/* ---------------------------------------- quantization against numpy */

static int first_diff_f32(const float *a, const void *b, int64_t n, int64_t *at)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t x = f32_bits(a[i]), y;
        memcpy(&y, (const uint8_t *)b + 4 * i, 4);
        if (x != y) {
            *at = i;
            return 1;
        }
    }
    return 0;
}

/* Dequantizes every row of tensor `name` and compares with the F32 tensor
 * `name`.expect bit for bit. */
static void check_dequant(const asn_gguf *ref, const char *name)
{
    char ename[64], tname[128];
    snprintf(ename, sizeof ename, "%s.expect", name);
    const asn_gguf_tensor *q = asn_gguf_find_tensor(ref, name), *x = asn_gguf_find_tensor(ref, ename);
    snprintf(tname, sizeof tname, "%s dequantized bit for bit as numpy", name);
    if (!q || !x) {
        T_OK(tname, 0, "tensor missing");
        return;
    }
    int64_t n = q->ne[0], rows = q->ne[1];
    size_t rb = asn_ttype_row_bytes(q->type, n);
    float *y = asn_xmalloc((size_t)(n * rows) * sizeof *y);
    int rc = 0;
    for (int64_t r = 0; r < rows; r++)
        rc |= asn_dequantize_row(q->type, (const uint8_t *)q->data + r * rb, y + r * n, n);
    int64_t at = -1;
    int diff = first_diff_f32(y, x->data, n * rows, &at);
    float want = 0;
    if (diff)
        memcpy(&want, (const uint8_t *)x->data + 4 * at, 4);
    T_OK(tname, rc == 0 && !diff, "rc %d; element %lld: expected %.9g, got %.9g", rc, (long long)at, want,
         diff ? y[at] : 0.0f);

    /* the same from an odd address (blocks have no alignment) */
    uint8_t *odd = asn_xmalloc(rb * (size_t)rows + 1);
    memcpy(odd + 1, q->data, rb * (size_t)rows);
    float *y2 = asn_xmalloc((size_t)(n * rows) * sizeof *y2);
    for (int64_t r = 0; r < rows; r++)
        asn_dequantize_row(q->type, odd + 1 + r * rb, y2 + r * n, n);
    snprintf(tname, sizeof tname, "%s dequantized from an unaligned address", name);
    T_OK(tname, memcmp(y, y2, (size_t)(n * rows) * sizeof *y) == 0, "differs");
    free(odd);
    free(y2);
    free(y);
}

static void check_quant(const asn_gguf *ref, const char *name, uint32_t type)
{
    char sname[64], tname[128];
    snprintf(sname, sizeof sname, "%s.src", name);
    const asn_gguf_tensor *src = asn_gguf_find_tensor(ref, sname), *q = asn_gguf_find_tensor(ref, name);
    snprintf(tname, sizeof tname, "%s quantized byte for byte as ggml's reference rule (numpy)", name);
    if (!src || !q) {
        T_OK(tname, 0, "tensor missing");
        return;
    }
    int64_t n = src->ne[0] * src->ne[1];
    float *x = asn_xmalloc((size_t)n * sizeof *x);
    memcpy(x, src->data, (size_t)n * sizeof *x);
    size_t nb = asn_ttype_row_bytes(type, n);
    uint8_t *got = asn_xcalloc(nb, 1);
    int rc = asn_quantize_row(type, x, got, n);
    size_t at = 0;
    while (at < nb && got[at] == ((const uint8_t *)q->data)[at])
        at++;
    int be, bb;
    asn_ttype_block(type, &be, &bb);
    T_OK(tname, rc == 0 && nb == q->nbytes && at == nb, "rc %d, %zu/%zu bytes; first difference in block %zu", rc,
         nb, q->nbytes, at / (size_t)bb);
    free(x);
    free(got);
}

static void test_quant(const asn_gguf *ref)
{
    check_quant(ref, "q8_0", ASN_T_Q8_0);
    check_quant(ref, "q4_0", ASN_T_Q4_0);
    check_dequant(ref, "q8_0");
    check_dequant(ref, "q4_0");
    check_dequant(ref, "q4_k");
    check_dequant(ref, "q6_k");

    /* F16 / BF16 rows: quantize = per-element conversion, and back */
    const asn_gguf_tensor *src = asn_gguf_find_tensor(ref, "conv.src");
    const asn_gguf_tensor *f16 = asn_gguf_find_tensor(ref, "conv.f16");
    const asn_gguf_tensor *bf16 = asn_gguf_find_tensor(ref, "conv.bf16");
    if (src && f16 && bf16) {
        int64_t n = src->ne[0];
        float *x = asn_xmalloc((size_t)n * 4), *y = asn_xmalloc((size_t)n * 4);
        uint8_t *q = asn_xmalloc((size_t)n * 4);
        memcpy(x, src->data, (size_t)n * 4);
        int ok = asn_quantize_row(ASN_T_F16, x, q, n) == 0 && memcmp(q, f16->data, (size_t)n * 2) == 0;
        ok = ok && asn_quantize_row(ASN_T_BF16, x, q, n) == 0 && memcmp(q, bf16->data, (size_t)n * 2) == 0;
        ok = ok && asn_quantize_row(ASN_T_F32, x, q, n) == 0 && memcmp(q, x, (size_t)n * 4) == 0;
        T_OK("quantize F16, BF16, F32 rows", ok, "bytes differ");
        int bad = asn_dequantize_row(ASN_T_F16, f16->data, y, n) != 0;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, (const uint8_t *)f16->data + 2 * i, 2);
            float w = asn_f16_to_f32(h);
            bad += memcmp(&w, &y[i], 4) != 0;
        }
        bad += asn_dequantize_row(ASN_T_BF16, bf16->data, y, n) != 0;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, (const uint8_t *)bf16->data + 2 * i, 2);
            float w = asn_bf16_to_f32(h);
            bad += memcmp(&w, &y[i], 4) != 0;
        }
        bad += asn_dequantize_row(ASN_T_F32, src->data, y, n) != 0 || memcmp(y, x, (size_t)n * 4) != 0;
        T_OK("dequantize F16, BF16, F32 rows", bad == 0, "%d wrong", bad);
        free(x);
        free(y);
        free(q);
    }

    float x[256] = {0}, y[256];
    uint8_t q[300] = {0};
    T_EQ_INT("quantize to Q4_K is not offered", asn_quantize_row(ASN_T_Q4_K, x, q, 256), -1);
    T_EQ_INT("quantize Q8_0 needs whole blocks", asn_quantize_row(ASN_T_Q8_0, x, q, 33), -1);
    T_EQ_INT("dequantize an unsupported type (IQ2_XXS)", asn_dequantize_row(ASN_T_IQ2_XXS, q, y, 256), -1);
    T_EQ_INT("dequantize Q4_0 needs whole blocks", asn_dequantize_row(ASN_T_Q4_0, q, y, 31), -1);
    T_EQ_INT("dequantize an unknown type", asn_dequantize_row(31, q, y, 32), -1);

    /* round trip error bounds on random data: Q8_0 within half a step
     * (amax / 254, plus the f16 rounding of d), Q4_0 within one step */
    enum { N = 32 * 64 };
    float *a = asn_xmalloc(N * 4), *b = asn_xmalloc(N * 4);
    uint8_t *buf = asn_xmalloc(N * 2);
    for (int i = 0; i < N; i++)
        a[i] = rnd_normal() * (float)(1 + i / 32);
    double worst8 = 0, worst4 = 0;
    asn_quantize_row(ASN_T_Q8_0, a, buf, N);
    asn_dequantize_row(ASN_T_Q8_0, buf, b, N);
    for (int blk = 0; blk < N / 32; blk++) {
        float amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(a[blk * 32 + j]));
        for (int j = 0; j < 32; j++)
            worst8 = fmax(worst8, fabs(a[blk * 32 + j] - b[blk * 32 + j]) / amax);
    }
    asn_quantize_row(ASN_T_Q4_0, a, buf, N);
    asn_dequantize_row(ASN_T_Q4_0, buf, b, N);
    for (int blk = 0; blk < N / 32; blk++) {
        float amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(a[blk * 32 + j]));
        for (int j = 0; j < 32; j++)
            worst4 = fmax(worst4, fabs(a[blk * 32 + j] - b[blk * 32 + j]) / amax);
    }
    T_OK("Q8_0 round trip error <= amax/254 (+ f16 scale rounding)", worst8 <= 1.0 / 254 + 1e-3, "%g", worst8);
    T_OK("Q4_0 round trip error <= amax/8 (+ f16 scale rounding)", worst4 <= 1.0 / 8 + 1e-3, "%g", worst4);
    float inf_row[32];
    for (int i = 0; i < 32; i++)
        inf_row[i] = i == 3 ? INFINITY : i == 5 ? NAN : (float)i;
    T_OK("quantizing inf/NaN gives a block, not a crash",
         asn_quantize_row(ASN_T_Q8_0, inf_row, buf, 32) == 0 && asn_quantize_row(ASN_T_Q4_0, inf_row, buf, 32) == 0,
         "failed");
    free(a);
    free(b);
    free(buf);
}

/* --------------------------------------- a file asn did not write */

static void test_ref_file(const asn_gguf *g)
{
    asn_err e;
    T_EQ_INT("reference file: version", asn_gguf_version(g), 3);
    T_EQ_INT("reference file: kv count", asn_gguf_n_kv(g), 32);
    T_EQ_INT("reference file: tensor count", asn_gguf_n_tensors(g), 15);
    T_OK("kvs in file order", str_is(asn_gguf_kv_at(g, 0)->key, "general.alignment") &&
                                  str_is(asn_gguf_kv_at(g, 1)->key, "test.u8") && !asn_gguf_kv_at(g, 32),
         "order wrong");

    const asn_gguf_kv *kv;
    int ok = 1;
#define KV(key, t, field, val)                                                                           \
    kv = asn_gguf_find(g, key);                                                                          \
    if (!kv || kv->type != (t) || kv->v.field != (val)) {                                                \
        printf("# %s wrong\n", key);                                                                     \
        ok = 0;                                                                                          \
    }
    KV("test.u8", ASN_GGUF_U8, u, 200);
    KV("test.i8", ASN_GGUF_I8, i, -100);
    KV("test.u16", ASN_GGUF_U16, u, 60000);
    KV("test.i16", ASN_GGUF_I16, i, -30000);
    KV("test.u32", ASN_GGUF_U32, u, 4000000000u);
    KV("test.i32", ASN_GGUF_I32, i, -2000000000);
    KV("test.f32", ASN_GGUF_F32, f, 3.25);
    KV("test.bool", ASN_GGUF_BOOL, u, 1);
    KV("test.false", ASN_GGUF_BOOL, u, 0);
    KV("test.u64", ASN_GGUF_U64, u, (1ull << 63) + 5);
    KV("test.i64", ASN_GGUF_I64, i, -(1ll << 62));
    KV("test.f64", ASN_GGUF_F64, f, 3.141592653589793);
#undef KV
    T_OK("scalar values of every type", ok, "see above");
    kv = asn_gguf_find(g, "test.str");
    T_OK("string value (UTF-8)", kv && kv->type == ASN_GGUF_STRING && str_is(kv->v.s, "h\xc3\xa9llo \xe2\x96\x81world"),
         "wrong");
    kv = asn_gguf_find(g, "test.empty_str");
    T_OK("empty string value", kv && kv->type == ASN_GGUF_STRING && kv->v.s.n == 0, "wrong");
    T_OK("absent key", asn_gguf_find(g, "test") == NULL && asn_gguf_find(g, "test.u8x") == NULL, "found");

    /* typed getters */
    uint32_t u = 77;
    int64_t i64 = 0;
    float f = 0;
    int b = -1;
    char *s = NULL;
    T_OK("get_u32 of a u8", asn_gguf_get_u32(g, "test.u8", 1, &u, &e) == 0 && u == 200, "%u", u);
    T_OK("get_u32 of a u32", asn_gguf_get_u32(g, "test.u32", 1, &u, &e) == 0 && u == 4000000000u, "%u", u);
    T_OK("get_u32 of a negative i8 is out of range",
         asn_gguf_get_u32(g, "test.i8", 1, &u, &e) == -1 && strstr(e.msg, "test.i8") && strstr(e.msg, "range"),
         "%s", e.msg);
    T_OK("get_u32 of a large u64 is out of range", asn_gguf_get_u32(g, "test.u64", 0, &u, &e) == -1, "accepted");
    T_OK("get_u32 of a string is a type error",
         asn_gguf_get_u32(g, "test.str", 1, &u, &e) == -1 && strstr(e.msg, "expected an integer, got string"), "%s",
         e.msg);
    u = 77;
    T_OK("get_u32 absent and optional leaves the value", asn_gguf_get_u32(g, "nope", 0, &u, &e) == 0 && u == 77,
         "%u", u);
    T_OK("get_u32 absent and required",
         asn_gguf_get_u32(g, "nope.key", 1, &u, &e) == -1 && strstr(e.msg, "nope.key") && strstr(e.msg, "gguf_ref"),
         "%s", e.msg);
    T_OK("get_i64 of an i64", asn_gguf_get_i64(g, "test.i64", 1, &i64, &e) == 0 && i64 == -(1ll << 62), "%lld",
         (long long)i64);
    T_OK("get_i64 of a u64 above INT64_MAX", asn_gguf_get_i64(g, "test.u64", 1, &i64, &e) == -1, "accepted");
    T_OK("get_i64 of an i16", asn_gguf_get_i64(g, "test.i16", 1, &i64, &e) == 0 && i64 == -30000, "%lld",
         (long long)i64);
    T_OK("get_f32 of an f64", asn_gguf_get_f32(g, "test.f64", 1, &f, &e) == 0 && f == (float)3.141592653589793, "%g",
         f);
    T_OK("get_f32 of an i32", asn_gguf_get_f32(g, "test.i32", 1, &f, &e) == 0 && f == -2e9f, "%g", f);
    T_OK("get_f32 of a bool is a type error", asn_gguf_get_f32(g, "test.bool", 1, &f, &e) == -1, "accepted");
    T_OK("get_bool", asn_gguf_get_bool(g, "test.bool", 1, &b, &e) == 0 && b == 1 &&
                         asn_gguf_get_bool(g, "test.false", 1, &b, &e) == 0 && b == 0,
         "%d", b);
    T_OK("get_bool of u8 200 is a type error", asn_gguf_get_bool(g, "test.u8", 1, &b, &e) == -1, "accepted");
    T_OK("get_str", asn_gguf_get_str(g, "test.str", 1, &s, &e) == 0 && !strcmp(s, "h\xc3\xa9llo \xe2\x96\x81world"),
         "%s", s ? s : "(null)");
    free(s);
    s = NULL;
    T_OK("get_str of an empty string", asn_gguf_get_str(g, "test.empty_str", 1, &s, &e) == 0 && s && !*s, "wrong");
    free(s);
    s = NULL;
    T_OK("get_str of a number is a type error", asn_gguf_get_str(g, "test.f32", 1, &s, &e) == -1 && !s, "accepted");

    /* arrays */
    const asn_gguf_kv *a = NULL;
    T_OK("get_arr of a string array", asn_gguf_get_arr(g, "test.arr.str", 1, &a, &e) == 0 && a &&
                                           a->v.arr.type == ASN_GGUF_STRING && a->v.arr.n == 4,
         "wrong");
    if (a)
        T_OK("string array elements (incl. empty)",
             str_is(asn_gguf_arr_str(a, 0), "a") && str_is(asn_gguf_arr_str(a, 1), "") &&
                 str_is(asn_gguf_arr_str(a, 2), "\xe2\x96\x81" "b") && str_is(asn_gguf_arr_str(a, 3), "ccc") &&
                 asn_gguf_arr_str(a, 4).n == 0,
             "wrong");
    T_OK("get_arr of a scalar is a type error", asn_gguf_get_arr(g, "test.u8", 1, &a, &e) == -1, "accepted");
    a = (const asn_gguf_kv *)1;
    T_OK("get_arr absent and optional gives NULL", asn_gguf_get_arr(g, "nope", 0, &a, &e) == 0 && a == NULL,
         "wrong");
    static const struct {
        const char *key;
        int n;
        int64_t v[3];
    } ints[] = {
        {"test.arr.u8", 3, {0, 1, 255}},
        {"test.arr.i8", 3, {-128, 0, 127}},
        {"test.arr.u16", 2, {65535, 7}},
        {"test.arr.i16", 2, {-32768, 32767}},
        {"test.arr.u32", 2, {4294967295ll, 0}},
        {"test.arr.i32", 3, {-5, 6, -7}},
        {"test.arr.bool", 3, {1, 0, 1}},
        {"test.arr.u64", 1, {-1}},
        {"test.arr.i64", 2, {INT64_MIN, INT64_MAX}},
        {"test.arr.empty_i32", 0, {0}},
    };
    int bad = 0;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        kv = asn_gguf_find(g, ints[k].key);
        if (!kv || kv->type != ASN_GGUF_ARRAY || kv->v.arr.n != (uint64_t)ints[k].n) {
            printf("# %s missing or wrong length\n", ints[k].key);
            bad++;
            continue;
        }
        for (int j = 0; j < ints[k].n; j++) {
            if (asn_gguf_arr_int(kv, (uint64_t)j) != ints[k].v[j]) {
                printf("# %s[%d] = %lld\n", ints[k].key, j, (long long)asn_gguf_arr_int(kv, (uint64_t)j));
                bad++;
            }
        }
    }
    T_OK("integer and bool arrays of every width (incl. empty)", bad == 0, "%d wrong", bad);
    kv = asn_gguf_find(g, "test.arr.f32");
    T_OK("f32 array", kv && asn_gguf_arr_float(kv, 0) == 0.5 && asn_gguf_arr_float(kv, 1) == -1.25 &&
                          asn_gguf_arr_float(kv, 2) == (double)1e30f,
         "wrong");
    kv = asn_gguf_find(g, "test.arr.f64");
    T_OK("f64 array", kv && asn_gguf_arr_float(kv, 0) == 1e300 && asn_gguf_arr_float(kv, 1) == -2.5, "wrong");
    kv = asn_gguf_find(g, "test.arr.i32");
    T_OK("integer array read as float", kv && asn_gguf_arr_float(kv, 2) == -7.0, "wrong");
    kv = asn_gguf_find(g, "test.arr.empty_str");
    T_OK("empty string array", kv && kv->v.arr.type == ASN_GGUF_STRING && kv->v.arr.n == 0, "wrong");

    /* tensors */
    const asn_gguf_tensor *t = asn_gguf_find_tensor(g, "f32.4d");
    int ok4 = t && t->n_dims == 4 && t->ne[0] == 2 && t->ne[1] == 3 && t->ne[2] == 4 && t->ne[3] == 5 &&
              t->type == ASN_T_F32 && t->nbytes == 480;
    for (int k = 0; ok4 && k < 120; k++) {
        float v;
        memcpy(&v, (const uint8_t *)t->data + 4 * k, 4);
        ok4 = v == (float)k;
    }
    T_OK("4-D tensor: shape, size, data", ok4, "wrong");
    t = asn_gguf_find_tensor(g, "q5_k");
    T_OK("a Q5_K tensor is read", t && t->type == ASN_T_Q5_K && t->nbytes == 176, "wrong");
    t = asn_gguf_find_tensor(g, "q6_k");
    T_OK("1-D/2-D shape: missing dims are 1", t && t->n_dims == 2 && t->ne[2] == 1 && t->ne[3] == 1, "wrong");
    bad = 0;
    for (size_t k = 0; k < asn_gguf_n_tensors(g); k++) {
        t = asn_gguf_tensor_at(g, k);
        if (t->offset % 64 || (uintptr_t)t->data % 64)
            bad++;
    }
    T_OK("general.alignment = 64 honoured", bad == 0, "%d tensors misaligned", bad);
    T_OK("absent tensor", !asn_gguf_find_tensor(g, "q6_") && !asn_gguf_tensor_at(g, 15), "found");
}

/* ------------------------------------------------------- round trips */

/* Random bytes for a K-quant block, with finite scales at the given byte
 * offsets. */
static void fill_kblocks(uint8_t *p, size_t nblocks, size_t bsize, const int *d_at, int nd)
{
    for (size_t i = 0; i < nblocks * bsize; i++)
        p[i] = (uint8_t)rnd();
    for (size_t b = 0; b < nblocks; b++)
        for (int k = 0; k < nd; k++) {
            uint16_t h = asn_f32_to_f16(0.001f + (float)(rnd() % 1000) * 1e-5f);
            memcpy(p + b * bsize + (size_t)d_at[k], &h, 2);
        }
}

typedef struct rt_tensor {
    const char *name;
    uint32_t type, n_dims;
    int64_t ne[4];
    uint8_t *data;
    size_t nbytes;
    float *src; /* the floats quantized, for error bounds */
} rt_tensor;

static void test_roundtrip(uint32_t align)
{
    char label[96];
    asn_err e;
    asn_gguf_writer *w = asn_gguf_writer_new();
    if (align)
        asn_gguf_set_u32(w, "general.alignment", align);
    asn_gguf_set_str(w, "general.architecture", "llama");
    asn_gguf_set_u32(w, "t.u32", 4000000000u);
    asn_gguf_set_i32(w, "t.i32", -7);
    asn_gguf_set_u64(w, "t.u64", 0xfedcba9876543210ull);
    asn_gguf_set_f32(w, "t.f32", -0.1f);
    asn_gguf_set_bool(w, "t.true", 5);
    asn_gguf_set_bool(w, "t.false", 0);
    asn_gguf_set_str(w, "t.empty", "");
    asn_gguf_set_u32(w, "t.twice", 1);
    const char *strs[] = {"", "hello", "", "\xe2\x96\x81x y"};
    asn_gguf_set_arr_str(w, "t.strs", strs, 4);
    asn_gguf_set_arr_str(w, "t.no_strs", NULL, 0);
    const float fl[] = {1.5f, -0.0f, INFINITY};
    asn_gguf_set_arr_f32(w, "t.floats", fl, 3);
    asn_gguf_set_arr_f32(w, "t.no_floats", NULL, 0);
    const int32_t in[] = {INT32_MIN, 0, INT32_MAX};
    asn_gguf_set_arr_i32(w, "t.ints", in, 3);
    asn_gguf_set_str(w, "t.twice", "second");

    rt_tensor ts[] = {
        {"f32.2d", ASN_T_F32, 2, {8, 3, 1, 1}, 0, 0, 0},
        {"f16", ASN_T_F16, 1, {66, 1, 1, 1}, 0, 0, 0},
        {"bf16", ASN_T_BF16, 2, {10, 2, 1, 1}, 0, 0, 0},
        {"q8_0", ASN_T_Q8_0, 2, {64, 3, 1, 1}, 0, 0, 0},
        {"q4_0", ASN_T_Q4_0, 2, {96, 2, 1, 1}, 0, 0, 0},
        {"q4_k", ASN_T_Q4_K, 2, {256, 2, 1, 1}, 0, 0, 0},
        {"q6_k", ASN_T_Q6_K, 2, {512, 1, 1, 1}, 0, 0, 0},
        {"q5_k", ASN_T_Q5_K, 1, {256, 1, 1, 1}, 0, 0, 0},
        {"f32.4d", ASN_T_F32, 4, {3, 2, 2, 2}, 0, 0, 0},
        {"empty", ASN_T_F32, 2, {4, 0, 1, 1}, 0, 0, 0},
    };
    enum { NT = sizeof ts / sizeof ts[0] };
    for (int k = 0; k < NT; k++) {
        rt_tensor *t = &ts[k];
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        t->nbytes = asn_ttype_row_bytes(t->type, t->ne[0]) * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
        t->data = asn_xmalloc(t->nbytes + 1);
        if (t->type == ASN_T_Q4_K) {
            static const int d_at[] = {0, 2};
            fill_kblocks(t->data, t->nbytes / 144, 144, d_at, 2);
        } else if (t->type == ASN_T_Q6_K) {
            static const int d_at[] = {208};
            fill_kblocks(t->data, t->nbytes / 210, 210, d_at, 1);
        } else if (t->type == ASN_T_Q5_K) {
            for (size_t i = 0; i < t->nbytes; i++)
                t->data[i] = (uint8_t)rnd();
        } else {
            t->src = asn_xmalloc((size_t)n * sizeof(float) + 4);
            for (int64_t i = 0; i < n; i++)
                t->src[i] = rnd_normal() * 3;
            asn_quantize_row(t->type, t->src, t->data, n);
        }
        asn_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data);
    }
    snprintf(label, sizeof label, "rt-%u.gguf", align);
    char path[512];
    snprintf(path, sizeof path, "%s", tmp_path(label));
    int rc = asn_gguf_write(w, path, &e);
    snprintf(label, sizeof label, "writer (alignment %u): write", align ? align : 32);
    T_OK(label, rc == 0, "%s", e.msg);
    asn_gguf_writer_free(w);
    asn_gguf *g = rc == 0 ? asn_gguf_open(path, &e) : NULL;
    snprintf(label, sizeof label, "writer (alignment %u): file reads back", align ? align : 32);
    T_OK(label, g != NULL, "%s", e.msg);
    if (!g)
        goto out;

    /* metadata */
    int ok = asn_gguf_version(g) == 3 && asn_gguf_n_kv(g) == (align ? 15u : 14u);
    size_t base = align ? 1 : 0;
    static const char *order[] = {"general.architecture", "t.u32", "t.i32",  "t.u64",       "t.f32",
                                  "t.true",               "t.false", "t.empty", "t.twice",   "t.strs",
                                  "t.no_strs",            "t.floats", "t.no_floats", "t.ints"};
    for (size_t k = 0; ok && k < 14; k++)
        ok = str_is(asn_gguf_kv_at(g, base + k)->key, order[k]);
    snprintf(label, sizeof label, "round trip (alignment %u): kv count and insertion order", align ? align : 32);
    T_OK(label, ok, "wrong");
    const asn_gguf_kv *kv;
    uint32_t u;
    int64_t i64;
    float f;
    int b;
    char *s = NULL;
    ok = asn_gguf_get_u32(g, "t.u32", 1, &u, &e) == 0 && u == 4000000000u;
    ok = ok && asn_gguf_get_i64(g, "t.i32", 1, &i64, &e) == 0 && i64 == -7;
    ok = ok && (kv = asn_gguf_find(g, "t.u64")) && kv->type == ASN_GGUF_U64 && kv->v.u == 0xfedcba9876543210ull;
    ok = ok && asn_gguf_get_f32(g, "t.f32", 1, &f, &e) == 0 && f == -0.1f;
    ok = ok && asn_gguf_get_bool(g, "t.true", 1, &b, &e) == 0 && b == 1;
    ok = ok && asn_gguf_get_bool(g, "t.false", 1, &b, &e) == 0 && b == 0;
    ok = ok && asn_gguf_get_str(g, "t.empty", 1, &s, &e) == 0 && !strcmp(s, "");
    free(s);
    s = NULL;
    ok = ok && asn_gguf_get_str(g, "t.twice", 1, &s, &e) == 0 && !strcmp(s, "second");
    free(s);
    snprintf(label, sizeof label, "round trip (alignment %u): scalar values; a key set twice keeps its last value",
             align ? align : 32);
    T_OK(label, ok, "%s", e.msg);
    kv = asn_gguf_find(g, "t.strs");
    ok = kv && kv->v.arr.type == ASN_GGUF_STRING && kv->v.arr.n == 4;
    for (int k = 0; ok && k < 4; k++)
        ok = str_is(asn_gguf_arr_str(kv, (uint64_t)k), strs[k]);
    kv = asn_gguf_find(g, "t.no_strs");
    ok = ok && kv && kv->v.arr.type == ASN_GGUF_STRING && kv->v.arr.n == 0;
    kv = asn_gguf_find(g, "t.floats");
    ok = ok && kv && kv->v.arr.type == ASN_GGUF_F32 && kv->v.arr.n == 3 && asn_gguf_arr_float(kv, 0) == 1.5 &&
         signbit(asn_gguf_arr_float(kv, 1)) && isinf(asn_gguf_arr_float(kv, 2));
    kv = asn_gguf_find(g, "t.no_floats");
    ok = ok && kv && kv->v.arr.type == ASN_GGUF_F32 && kv->v.arr.n == 0;
    kv = asn_gguf_find(g, "t.ints");
    ok = ok && kv && kv->v.arr.type == ASN_GGUF_I32 && asn_gguf_arr_int(kv, 0) == INT32_MIN &&
         asn_gguf_arr_int(kv, 2) == INT32_MAX;
    snprintf(label, sizeof label, "round trip (alignment %u): arrays (incl. empty strings and arrays)",
             align ? align : 32);
    T_OK(label, ok, "wrong");

    /* tensors */
    uint32_t a = align ? align : 32;
    int bad = asn_gguf_n_tensors(g) != NT;
    uint64_t expect_off = 0;
    for (int k = 0; !bad && k < NT; k++) {
        const asn_gguf_tensor *t = asn_gguf_tensor_at(g, (size_t)k);
        const rt_tensor *r = &ts[k];
        if (!str_is(t->name, r->name) || t->type != r->type || t->n_dims != r->n_dims ||
            memcmp(t->ne, r->ne, sizeof t->ne) || t->nbytes != r->nbytes || t->offset != expect_off ||
            (r->nbytes && memcmp(t->data, r->data, r->nbytes)) || asn_gguf_find_tensor(g, r->name) != t) {
            printf("# tensor %s differs\n", r->name);
            bad++;
        }
        expect_off += (t->nbytes + a - 1) / a * a;
    }
    snprintf(label, sizeof label, "round trip (alignment %u): tensors of every type, in order, each aligned", a);
    T_OK(label, !bad, "%d wrong", bad);
    struct stat st;
    stat(path, &st);
    snprintf(label, sizeof label, "round trip (alignment %u): file padded to the alignment", a);
    T_OK(label, st.st_size % a == 0, "size %lld", (long long)st.st_size);

    /* quantized tensors read back dequantize close to what was written */
    double worst = 0;
    for (int k = 0; k < NT; k++) {
        const asn_gguf_tensor *t = asn_gguf_tensor_at(g, (size_t)k);
        if (!ts[k].src || !t || !t->nbytes)
            continue;
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        float *y = asn_xmalloc((size_t)n * sizeof *y);
        size_t rb = asn_ttype_row_bytes(t->type, t->ne[0]);
        for (int64_t r = 0; r < n / t->ne[0]; r++)
            asn_dequantize_row(t->type, (const uint8_t *)t->data + r * rb, y + r * t->ne[0], t->ne[0]);
        double tol = t->type == ASN_T_Q4_0 ? 3.0 : t->type == ASN_T_Q8_0 ? 0.15 : 0.05;
        for (int64_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(y[i] - ts[k].src[i]) / tol);
        free(y);
    }
    snprintf(label, sizeof label, "round trip (alignment %u): dequantized tensors near their source", a);
    T_OK(label, worst <= 1, "worst error %g of the tolerance", worst);

    /* the same bytes through open_mem at an odd address, and as version 2 */
    size_t n;
    uint8_t *bytes = read_all(path, &n);
    uint8_t *odd = asn_xmalloc(n + 1);
    memcpy(odd + 1, bytes, n);
    odd[1 + 4] = 2;
    asn_gguf *g2 = asn_gguf_open_mem(odd + 1, n, "odd.gguf", &e);
    ok = g2 && asn_gguf_version(g2) == 2 && asn_gguf_n_tensors(g2) == NT;
    if (ok) {
        const asn_gguf_tensor *t = asn_gguf_find_tensor(g2, "f32.2d");
        float y[24];
        ok = t && asn_dequantize_row(ASN_T_F32, t->data, y, 24) == 0 && !memcmp(y, ts[0].src, sizeof y);
    }
    snprintf(label, sizeof label, "round trip (alignment %u): version 2 from an unaligned buffer", a);
    T_OK(label, ok, "%s", g2 ? "data differ" : e.msg);
    asn_gguf_close(g2);
    free(odd);
    free(bytes);
    asn_gguf_close(g);
out:
    for (int k = 0; k < NT; k++) {
        free(ts[k].data);
        free(ts[k].src);
    }
    unlink(path);
}

static void expect_write_error(const char *name, asn_gguf_writer *w, const char *want)
{
    asn_err e = {""};
    int rc = asn_gguf_write(w, tmp_path("bad-write.gguf"), &e);
    T_OK(name, rc == -1 && strstr(e.msg, want) && strstr(e.msg, "bad-write.gguf"), "rc %d, message \"%s\"", rc,
         e.msg);
    asn_gguf_writer_free(w);
    struct stat st;
    T_OK("  ... and no file is left behind", stat(tmp_path("bad-write.gguf"), &st) != 0, "file exists");
}

static void test_writer_errors(void)
{
    float x[32] = {0};
    int64_t ne[4] = {32, 1, 1, 1};
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_gguf_set_u32(w, "general.alignment", 48);
    expect_write_error("writer: general.alignment not a power of two", w, "power of two");
    w = asn_gguf_writer_new();
    asn_gguf_set_i32(w, "general.alignment", 32);
    expect_write_error("writer: general.alignment not u32", w, "u32");
    w = asn_gguf_writer_new();
    char long_name[65];
    memset(long_name, 'n', 64);
    long_name[64] = 0;
    asn_gguf_add_tensor(w, long_name, ASN_T_F32, 1, ne, x);
    expect_write_error("writer: tensor name of 64 bytes", w, "longer than 63");
    w = asn_gguf_writer_new();
    asn_gguf_add_tensor(w, "w", ASN_T_F32, 1, ne, x);
    asn_gguf_add_tensor(w, "w", ASN_T_F32, 1, ne, x);
    expect_write_error("writer: duplicate tensor", w, "added twice");
    w = asn_gguf_writer_new();
    int64_t ne33[1] = {33};
    asn_gguf_add_tensor(w, "w", ASN_T_Q4_0, 1, ne33, x);
    expect_write_error("writer: ne[0] not a multiple of the block", w, "multiple");
    w = asn_gguf_writer_new();
    asn_gguf_add_tensor(w, "w", 31, 1, ne, x);
    expect_write_error("writer: unknown type", w, "unknown type 31");
    w = asn_gguf_writer_new();
    asn_gguf_add_tensor(w, "w", ASN_T_F32, 5, ne, x);
    expect_write_error("writer: 5 dimensions", w, "dimensions");
    w = asn_gguf_writer_new();
    asn_gguf_set_u32(w, "", 1);
    expect_write_error("writer: empty key", w, "empty");
    w = asn_gguf_writer_new();
    asn_err e = {""};
    int rc = asn_gguf_write(w, tmp_path("no/such/dir/x.gguf"), &e);
    T_OK("writer: unwritable path", rc == -1 && strstr(e.msg, "no/such/dir"), "%s", e.msg);
    asn_gguf_writer_free(w);
    asn_gguf_writer_free(NULL);

    /* an empty writer gives a valid file with nothing in it */
    w = asn_gguf_writer_new();
    rc = asn_gguf_write(w, tmp_path("empty.gguf"), &e);
    asn_gguf_writer_free(w);
    asn_gguf *g = rc == 0 ? asn_gguf_open(tmp_path("empty.gguf"), &e) : NULL;
    T_OK("writer: empty file reads back", g && asn_gguf_n_kv(g) == 0 && asn_gguf_n_tensors(g) == 0, "%s", e.msg);
    asn_gguf_close(g);
    unlink(tmp_path("empty.gguf"));
}

/* ---------------------------------------------------- hostile inputs */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void b_put(buf *b, const void *p, size_t n)
{
    asn_grow((void **)&b->p, &b->cap, b->n + n, 1);
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void b_u32(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    b_put(b, x, 4);
}
static void b_u64(buf *b, uint64_t v)
{
    b_u32(b, (uint32_t)v);
    b_u32(b, (uint32_t)(v >> 32));
}
static void b_str(buf *b, const char *s)
{
    b_u64(b, strlen(s));
    b_put(b, s, strlen(s));
}
static void b_hdr(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    b->n = 0;
    b_put(b, "GGUF", 4);
    b_u32(b, version);
    b_u64(b, n_tensors);
    b_u64(b, n_kv);
}
static void b_kv_u32(buf *b, const char *key, uint32_t v)
{
    b_str(b, key);
    b_u32(b, ASN_GGUF_U32);
    b_u32(b, v);
}
static void b_tensor(buf *b, const char *name, uint32_t n_dims, const int64_t *ne, uint32_t type, uint64_t off)
{
    b_str(b, name);
    b_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        b_u64(b, (uint64_t)ne[d]);
    b_u32(b, type);
    b_u64(b, off);
}
static void b_pad(buf *b, size_t a)
{
    static const uint8_t z[64];
    b_put(b, z, (a - b->n % a) % a);
}

/* Opens b's bytes from an allocation of exactly that size (so that ASan
 * sees any over-read) and expects failure with a message that names the
 * file and contains `want`. */
static void expect_bad(const char *name, const buf *b, const char *want)
{
    uint8_t *p = asn_xmalloc(b->n);
    memcpy(p, b->p, b->n);
    asn_err e = {""};
    asn_gguf *g = asn_gguf_open_mem(p, b->n, "bad.gguf", &e);
    T_OK(name, !g && !strncmp(e.msg, "bad.gguf: ", 10) && strstr(e.msg, want) && !strchr(e.msg, '\n'),
         "expected an error containing \"%s\", got %s", want, g ? "success" : e.msg);
    asn_gguf_close(g);
    LLVMFuzzerTestOneInput(p, b->n);
    free(p);
}

static void expect_good(const char *name, const buf *b)
{
    uint8_t *p = asn_xmalloc(b->n);
    memcpy(p, b->p, b->n);
    asn_err e = {""};
    asn_gguf *g = asn_gguf_open_mem(p, b->n, "good.gguf", &e);
    T_OK(name, g != NULL, "%s", e.msg);
    asn_gguf_close(g);
    free(p);
}

static void test_hostile(void)
{
    buf b = {0};
    int64_t ne4[1] = {4};

    b_hdr(&b, 3, 1, 1);
    b_kv_u32(&b, "general.alignment", 16);
    b_tensor(&b, "w", 1, ne4, ASN_T_F32, 0);
    b_pad(&b, 16);
    b_put(&b, "0123456789abcdef", 16);
    expect_good("hand-made file with alignment 16 opens (control)", &b);

    b.n = 0;
    expect_bad("empty input", &b, "too short");
    b_put(&b, "GGU", 3);
    expect_bad("3 bytes", &b, "too short");
    b_hdr(&b, 3, 0, 0);
    b.p[3] = 'X';
    expect_bad("bad magic", &b, "bad magic");
    b_hdr(&b, 1, 0, 0);
    expect_bad("version 1", &b, "version 1 is not supported");
    b_hdr(&b, 4, 0, 0);
    expect_bad("version 4", &b, "version 4 is not supported");
    b_hdr(&b, 0x03000000, 0, 0);
    expect_bad("big-endian version", &b, "big-endian");
    b_hdr(&b, 0, 0, 0);
    expect_bad("version 0", &b, "version 0");
    b_hdr(&b, 3, 0, 0);
    b.n -= 3;
    expect_bad("truncated counts", &b, "truncated header");

    b_hdr(&b, 3, 0, 1ull << 62);
    b_kv_u32(&b, "a", 1);
    expect_bad("huge n_kv", &b, "kv count 4611686018427387904 does not fit");
    b_hdr(&b, 3, 0, UINT64_MAX);
    expect_bad("n_kv = 2^64 - 1", &b, "kv count");
    b_hdr(&b, 3, 1ull << 40, 0);
    b_kv_u32(&b, "a", 1);
    expect_bad("huge n_tensors", &b, "tensor count 1099511627776");
    b_hdr(&b, 3, 1, 2);
    b_kv_u32(&b, "a", 1);
    b_kv_u32(&b, "b", 1);
    expect_bad("kvs and tensors together too many", &b, "does not fit");

    b_hdr(&b, 3, 0, 1);
    b_u64(&b, 1000);
    b_put(&b, "abcdefghijklmnopqrstuvwxyz", 26);
    expect_bad("key length past EOF", &b, "key 0: truncated or runs past end of file");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "a.b");
    b_u32(&b, ASN_GGUF_STRING);
    b_u64(&b, 1ull << 63);
    b_put(&b, "xyz", 3);
    expect_bad("string value length past EOF", &b, "key 0 (a.b): string value runs past end of file");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "arr");
    b_u32(&b, ASN_GGUF_ARRAY);
    b_u32(&b, ASN_GGUF_ARRAY);
    b_u64(&b, 1);
    b_u32(&b, ASN_GGUF_U8);
    b_u64(&b, 1);
    b_put(&b, "x", 1);
    expect_bad("nested array", &b, "key 0 (arr): nested arrays are not supported");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, 13);
    b_u32(&b, 0);
    expect_bad("unknown value type", &b, "key 0 (k): unknown value type 13");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, ASN_GGUF_ARRAY);
    b_u32(&b, 99);
    b_u64(&b, 0);
    expect_bad("unknown array element type", &b, "unknown array element type 99");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, ASN_GGUF_ARRAY);
    b_u32(&b, ASN_GGUF_U32);
    b_u64(&b, 1ull << 61);
    b_u32(&b, 0);
    expect_bad("array count past EOF", &b, "array of 2305843009213693952 u32 values runs past end of file");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, ASN_GGUF_ARRAY);
    b_u32(&b, ASN_GGUF_STRING);
    b_u64(&b, UINT64_MAX);
    b_u64(&b, 0);
    expect_bad("string array count past EOF", &b, "strings runs past end of file");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "tokens");
    b_u32(&b, ASN_GGUF_ARRAY);
    b_u32(&b, ASN_GGUF_STRING);
    b_u64(&b, 3);
    b_str(&b, "a");
    b_u64(&b, 100);
    b_put(&b, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 29);
    expect_bad("string array element past EOF", &b, "key 0 (tokens): string 1 runs past end of file");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "");
    b_u32(&b, ASN_GGUF_U8);
    b_put(&b, "xxxx", 4);
    expect_bad("empty key", &b, "key 0: empty key");
    b_hdr(&b, 3, 0, 2);
    b_kv_u32(&b, "a.b", 1);
    b_kv_u32(&b, "a.b", 2);
    expect_bad("duplicate key", &b, "key 1 (a.b): duplicate key (also key 0)");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "bad\nkey");
    b_u32(&b, 77);
    b_u32(&b, 0);
    expect_bad("control bytes in a key are not printed", &b, "key 0 (bad?key): unknown value type 77");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, ASN_GGUF_U64);
    b_u32(&b, 0);
    expect_bad("truncated scalar", &b, "key 0 (k): truncated u64 value");

    b_hdr(&b, 3, 0, 1);
    b_kv_u32(&b, "general.alignment", 48);
    expect_bad("alignment not a power of two", &b, "general.alignment: 48 is not a power of two");
    b_hdr(&b, 3, 0, 1);
    b_kv_u32(&b, "general.alignment", 0);
    expect_bad("alignment 0", &b, "not a power of two");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "general.alignment");
    b_u32(&b, ASN_GGUF_STRING);
    b_str(&b, "32");
    expect_bad("alignment of the wrong type", &b, "general.alignment: expected u32, got string");

    /* tensor infos: one tensor "w" after no kvs; data section at 64 */
#define TENSOR_CASE(label, name, nd, ne, type, off, datalen, want)                                       \
    do {                                                                                                   \
        b_hdr(&b, 3, 1, 0);                                                                                \
        b_tensor(&b, name, nd, ne, type, off);                                                             \
        b_pad(&b, 32);                                                                                     \
        for (int z_ = 0; z_ < (datalen); z_++)                                                             \
            b_put(&b, "\0", 1);                                                                            \
        expect_bad(label, &b, want);                                                                       \
    } while (0)
    int64_t ne_ovf[2] = {1ll << 32, 1ll << 32};
    int64_t ne_bytes_ovf[2] = {1ll << 61, 2};
    int64_t ne_neg[2] = {4, -1};
    int64_t ne33[1] = {33};
    int64_t ne1000[1] = {1000};
    int64_t ne5[5] = {1, 1, 1, 1, 1};
    TENSOR_CASE("tensor with 0 dimensions", "w", 0, ne4, ASN_T_F32, 0, 16, "tensor 0 (w): 0 dimensions");
    TENSOR_CASE("tensor with 5 dimensions", "w", 5, ne5, ASN_T_F32, 0, 16, "tensor 0 (w): 5 dimensions");
    TENSOR_CASE("negative dimension", "w", 2, ne_neg, ASN_T_F32, 0, 16, "tensor 0 (w): dimension 1 is negative");
    TENSOR_CASE("element count overflow", "w", 2, ne_ovf, ASN_T_F32, 0, 16, "tensor 0 (w): element count overflows");
    TENSOR_CASE("byte size overflow", "w", 2, ne_bytes_ovf, ASN_T_F32, 0, 16, "tensor 0 (w): size in bytes overflows");
    TENSOR_CASE("unknown tensor type", "blk.0.attn_q.weight", 1, ne4, 31, 0, 16,
                "tensor 0 (blk.0.attn_q.weight): unknown type 31");
    TENSOR_CASE("ne[0] not a multiple of the block", "w", 1, ne33, ASN_T_Q4_0, 0, 64,
                "ne[0] = 33 is not a multiple of the Q4_0 block size 32");
    TENSOR_CASE("misaligned offset", "w", 1, ne4, ASN_T_F32, 4, 32,
                "tensor 0 (w): offset 4 is not a multiple of the alignment 32");
    TENSOR_CASE("data past EOF", "w", 1, ne1000, ASN_T_F32, 0, 64, "tensor 0 (w): data past end of file");
    TENSOR_CASE("offset past EOF", "w", 1, ne4, ASN_T_F32, 1ull << 63, 64, "tensor 0 (w): data past end of file");
    TENSOR_CASE("offset near 2^64", "w", 1, ne4, ASN_T_F32, UINT64_MAX - 31, 64, "data past end of file");
#undef TENSOR_CASE
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "w", 1, ne4, ASN_T_F32, 0);
    expect_bad("data section past EOF", &b, "data section starts past end of file");
    b_hdr(&b, 3, 2, 0);
    b_tensor(&b, "w", 1, ne4, ASN_T_F32, 0);
    b_tensor(&b, "w", 1, ne4, ASN_T_F32, 32);
    b_pad(&b, 32);
    b_put(&b, "0123456789abcdef0123456789abcdef0123456789abcdef", 48);
    expect_bad("duplicate tensor name", &b, "tensor 1 (w): duplicate tensor name (also tensor 0)");
    b_hdr(&b, 3, 1, 0);
    b_str(&b, "w");
    b_u32(&b, 4);
    b_u64(&b, 4);
    b_u64(&b, 4);
    b_u64(&b, 4);
    expect_bad("truncated tensor info", &b, "tensor 0 (w): truncated");

    /* a zero-sized tensor may have a large ne[0]; no bytes to check */
    int64_t ne_zero[2] = {1ll << 40, 0};
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "z", 2, ne_zero, ASN_T_F32, 0);
    b_pad(&b, 32);
    expect_good("zero-sized tensor with a large ne[0] is accepted", &b);
    free(b.p);
}

/* Every prefix and every single-byte corruption of a small valid file:
 * each must fail cleanly or succeed, never crash (ASan in make test-san). */
static void test_truncations(void)
{
    asn_err e;
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_gguf_set_str(w, "general.architecture", "llama");
    asn_gguf_set_u32(w, "llama.block_count", 2);
    asn_gguf_set_f32(w, "llama.rope.freq_base", 10000.0f);
    asn_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", 1);
    const char *toks[] = {"<unk>", "<s>", "", "\xe2\x96\x81the"};
    asn_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, 4);
    const float scores[] = {0, -1, -2, -3};
    asn_gguf_set_arr_f32(w, "tokenizer.ggml.scores", scores, 4);
    asn_gguf_set_u64(w, "x.u64", 5);
    float x[64];
    uint8_t q[68];
    for (int i = 0; i < 64; i++)
        x[i] = (float)i - 20;
    asn_quantize_row(ASN_T_Q8_0, x, q, 64);
    int64_t ne_q[2] = {32, 2}, ne_f[1] = {5};
    asn_gguf_add_tensor(w, "q", ASN_T_Q8_0, 2, ne_q, q);
    asn_gguf_add_tensor(w, "f", ASN_T_F32, 1, ne_f, x);
    const char *path = tmp_path("small.gguf");
    int rc = asn_gguf_write(w, path, &e);
    asn_gguf_writer_free(w);
    size_t n = 0;
    uint8_t *full = rc == 0 ? read_all(path, &n) : NULL;
    unlink(path);
    T_OK("small valid file written", full && n > 0, "%s", e.msg);
    if (!full)
        return;
    asn_gguf *g = asn_gguf_open_mem(full, n, "small.gguf", &e);
    T_OK("small valid file opens", g != NULL, "%s", e.msg);
    if (!g) {
        free(full);
        return;
    }
    const asn_gguf_tensor *last = asn_gguf_tensor_at(g, 1);
    size_t data_end = (size_t)((const uint8_t *)last->data - full) + last->nbytes;
    asn_gguf_close(g);

    int early_ok = 0, bad_msg = 0, late_fail = 0;
    char first[sizeof e.msg] = "";
    for (size_t len = 0; len < n; len++) {
        uint8_t *p = asn_xmalloc(len);
        memcpy(p, full, len);
        asn_err e2 = {""};
        asn_gguf *t = asn_gguf_open_mem(p, len, "cut.gguf", &e2);
        if (t) {
            if (len < data_end)
                early_ok++;
        } else {
            if (len >= data_end)
                late_fail++;
            if (strncmp(e2.msg, "cut.gguf: ", 10) || strchr(e2.msg, '\n'))
                bad_msg++;
            if (len == n / 2)
                snprintf(first, sizeof first, "%s", e2.msg);
        }
        asn_gguf_close(t);
        LLVMFuzzerTestOneInput(p, len);
        free(p);
    }
    char name[160];
    snprintf(name, sizeof name, "truncated at each of %zu byte positions: fails cleanly before the data ends", n);
    T_OK(name, early_ok == 0 && bad_msg == 0, "%d opened, %d bad messages", early_ok, bad_msg);
    T_OK("truncated only in the last tensor's padding: still opens", late_fail == 0, "%d failed", late_fail);
    printf("# e.g. %s\n", first);

    uint8_t *p = asn_xmalloc(n);
    int opened = 0;
    for (size_t i = 0; i < n; i++) {
        static const uint8_t vals[] = {0x00, 0xff, 0x80, 0x01, 0x7f};
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(p, full, n);
            p[i] = vals[v];
            asn_gguf *t = asn_gguf_open_mem(p, n, "flip.gguf", &e);
            opened += t != NULL;
            asn_gguf_close(t);
            LLVMFuzzerTestOneInput(p, n);
        }
    }
    snprintf(name, sizeof name, "every byte set to 5 values (%zu files): no crash (%d opened)", n * 5, opened);
    T_OK(name, 1, "%s", "");
    free(p);
    free(full);
}

/* ------------------------------------------------- llama.cpp vocab files */

static void test_vocab(void)
{
    FILE *f = fopen(test_path("fixtures/gguf_vocab.txt"), "r");
    T_OK("vocab fixture opens", f != NULL, "missing tests/fixtures/gguf_vocab.txt");
    if (!f)
        return;
    char line[1024];
    int files = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        char file[128], model[32], sha[65];
        unsigned long n_kv, n_tensors, n_tokens, n_merges, bos;
        if (sscanf(line, "%127s %lu %lu %31s %lu %64s %lu %lu", file, &n_kv, &n_tensors, model, &n_tokens, sha,
                   &n_merges, &bos) != 8)
            continue;
        files++;
        char rel[200], name[256];
        snprintf(rel, sizeof rel, "data/gguf/%s", file);
        asn_err e;
        asn_gguf *g = asn_gguf_open(test_path(rel), &e);
        snprintf(name, sizeof name, "%s opens", file);
        T_OK(name, g != NULL, "%s", e.msg);
        if (!g)
            continue;
        char *m = NULL;
        uint32_t b = 0;
        const asn_gguf_kv *toks = NULL, *merges = NULL;
        int ok = asn_gguf_n_kv(g) == n_kv && asn_gguf_n_tensors(g) == n_tensors && asn_gguf_version(g) == 3 &&
                 asn_gguf_get_str(g, "tokenizer.ggml.model", 1, &m, &e) == 0 && !strcmp(m, model) &&
                 asn_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", 1, &b, &e) == 0 && b == bos &&
                 asn_gguf_get_arr(g, "tokenizer.ggml.tokens", 1, &toks, &e) == 0 &&
                 asn_gguf_get_arr(g, "tokenizer.ggml.merges", 0, &merges, &e) == 0 && toks &&
                 toks->v.arr.type == ASN_GGUF_STRING && toks->v.arr.n == n_tokens &&
                 (merges ? merges->v.arr.n : 0) == n_merges;
        snprintf(name, sizeof name, "%s: kv/tensor counts, model %s, bos %lu, %lu tokens, %lu merges", file, model,
                 bos, n_tokens, n_merges);
        T_OK(name, ok, "model %s, bos %u, tokens %llu (%s)", m ? m : "?", b,
             toks ? (unsigned long long)toks->v.arr.n : 0ull, e.msg);
        free(m);
        if (ok) {
            buf all = {0};
            for (uint64_t i = 0; i < toks->v.arr.n; i++) {
                asn_gguf_str s = asn_gguf_arr_str(toks, i);
                if (i)
                    b_put(&all, "\n", 1);
                if (s.n)
                    b_put(&all, s.p, s.n);
            }
            char got[65];
            sha_hex(all.p, all.n, got);
            snprintf(name, sizeof name, "%s: every token's text (sha256)", file);
            T_EQ_STR(name, got, sha);
            free(all.p);
        }
        asn_gguf_close(g);
    }
    fclose(f);
    T_OK("vocab fixture lists files", files >= 2, "%d", files);
}

static void test_open_errors(void)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open(tmp_path("missing.gguf"), &e);
    T_OK("open: missing file", !g && strstr(e.msg, "missing.gguf") && strstr(e.msg, "No such file"), "%s", e.msg);
    g = asn_gguf_open(tmp_dir, &e);
    T_OK("open: a directory", !g && strstr(e.msg, "not a regular file"), "%s", e.msg);
    FILE *f = fopen(tmp_path("zero.gguf"), "wb");
    if (f)
        fclose(f);
    g = asn_gguf_open(tmp_path("zero.gguf"), &e);
    T_OK("open: empty file", !g && strstr(e.msg, "zero.gguf: too short"), "%s", e.msg);
    unlink(tmp_path("zero.gguf"));
    g = asn_gguf_open_mem(NULL, 0, NULL, &e);
    T_OK("open_mem: no name, no data", !g && !strncmp(e.msg, "(memory): ", 10), "%s", e.msg);
}

/* ---------------------------------------------- fuzzing seeds, regressions */

static int replay_dir(const char *rel, int must_open, int *opened)
{
    DIR *d = opendir(test_path(rel));
    int n = 0;
    *opened = 0;
    if (!d)
        return 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path_buf);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        size_t len;
        uint8_t *data = read_all(p, &len);
        if (!data)
            continue;
        /* an exact-size copy, so that ASan sees over-reads */
        uint8_t *exact = asn_xmalloc(len);
        memcpy(exact, data, len);
        asn_err e;
        asn_gguf *g = asn_gguf_open_mem(exact, len, de->d_name, &e);
        *opened += g != NULL;
        if (must_open && !g)
            printf("# %s\n", e.msg);
        asn_gguf_close(g);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

static void test_fuzz_inputs(void)
{
    int opened;
    int n = replay_dir("fuzz/seeds/fuzz_gguf", 1, &opened);
    T_OK("fuzz seeds are valid GGUF files", n >= 2 && opened == n, "%d of %d open", opened, n);
    n = replay_dir("fuzz/regressions/fuzz_gguf", 0, &opened);
    char name[96];
    snprintf(name, sizeof name, "fuzzing regressions replayed without a crash (%d inputs)", n);
    T_OK(name, 1, "%s", "");
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/asn-gguf-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        printf("not ok - temporary directory: cannot create %s\n", tmp_dir);
        return 1;
    }
    asn_err e;
    asn_gguf *ref = asn_gguf_open(test_path("fixtures/gguf_ref.gguf"), &e);
    T_OK("reference file (written by numpy) opens", ref != NULL, "%s", e.msg);
    if (ref) {
        test_conversions(ref);
        test_quant(ref);
        test_ref_file(ref);
        asn_gguf_close(ref);
    }
    test_roundtrip(0);
    test_roundtrip(64);
    test_roundtrip(1);
    test_writer_errors();
    test_hostile();
    test_truncations();
    test_vocab();
    test_open_errors();
    test_fuzz_inputs();
    rmdir(tmp_dir);
    T_DONE();
}
