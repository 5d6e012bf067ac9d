/* test_ttype.c — ggml tensor types against llama.cpp's own numpy code:
 * every dequantizer bit for bit (also from a misaligned address) and the
 * Q4_1/Q5_0/Q5_1 reference quantizers byte for byte, on the records of
 * tests/data/ttype/ttype_ref.bin (tests/fixtures/make_ttype_fixtures.py
 * wrote it with gguf-py); names of the types asn cannot compute with;
 * rows that are not whole blocks refused. */
#include "asn/core.h"
#include "asn/gguf.h"
#include "t.h"

#include <stdint.h>
#include <stdlib.h>

/* The fixture file (NULL if it cannot be read), through the library's
 * whole-file reader. */
static uint8_t *read_fixture(size_t *n)
{
    const char *data = getenv("ASN_TESTDATA");
    char path[4096], *p = NULL;
    asn_err e;
    snprintf(path, sizeof path, "%s/ttype/ttype_ref.bin", data && *data ? data : "tests/data");
    return asn_read_file(path, &p, n, &e) ? NULL : (uint8_t *)p;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* One record of the fixture; its arrays point into the file buffer (any
 * alignment, hence the copies below). */
typedef struct record {
    uint32_t kind, type, n, nbytes;
    const uint8_t *blocks, *values;
} record;

/* Index of the first element whose bit pattern differs, or -1. */
static int64_t first_diff(const float *got, const uint8_t *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(got + i, want + 4 * i, 4))
            return i;
    return -1;
}

/* The row at the address the file gives it and again one byte past a
 * 16-byte boundary: both must equal gguf-py bit for bit. */
static void check_dequant(const record *r)
{
    const char *name = asn_ttype_name(r->type);
    char tname[128];
    float *y = asn_xmalloc(r->n * sizeof *y);
    int rc = asn_dequantize_row(r->type, r->blocks, y, r->n);
    int64_t at = rc ? -1 : first_diff(y, r->values, r->n);
    float want = 0;
    if (at >= 0)
        memcpy(&want, r->values + 4 * at, 4);
    snprintf(tname, sizeof tname, "%s: %u values dequantized bit for bit as gguf-py", name, r->n);
    T_OK(tname, rc == 0 && at < 0, "rc %d; element %lld: expected %.9g, got %.9g", rc, (long long)at,
         want, at >= 0 ? y[at] : 0.0f);

    uint8_t *buf = asn_xmalloc(r->nbytes + 32);
    uint8_t *odd = buf + (16 - (uintptr_t)buf % 16) + 1;
    memcpy(odd, r->blocks, r->nbytes);
    memset(y, 0xff, r->n * sizeof *y);
    rc = asn_dequantize_row(r->type, odd, y, r->n);
    at = rc ? -1 : first_diff(y, r->values, r->n);
    snprintf(tname, sizeof tname, "%s: the same from a misaligned address", name);
    T_OK(tname, rc == 0 && at < 0, "rc %d; element %lld differs", rc, (long long)at);
    free(buf);
    free(y);
}

static void check_quant(const record *r)
{
    char tname[128];
    float *x = asn_xmalloc(r->n * sizeof *x);
    memcpy(x, r->values, r->n * sizeof *x);
    uint8_t *q = asn_xmalloc(r->nbytes);
    int rc = asn_quantize_row(r->type, x, q, r->n);
    size_t at = 0;
    while (rc == 0 && at < r->nbytes && q[at] == r->blocks[at])
        at++;
    snprintf(tname, sizeof tname, "%s: %u values quantized byte for byte as gguf-py", asn_ttype_name(r->type),
             r->n);
    T_OK(tname, rc == 0 && at == r->nbytes, "rc %d; byte %zu: expected 0x%02x, got 0x%02x", rc, at,
         at < r->nbytes ? r->blocks[at] : 0, at < r->nbytes ? q[at] : 0);
    free(q);
    free(x);
}

static void test_fixture(void)
{
    size_t size = 0;
    uint8_t *file = read_fixture(&size);
    int ok = file && size >= 12 && !memcmp(file, "ASNTTYP1", 8);
    T_OK("fixture ttype/ttype_ref.bin is there", ok, "missing or bad magic (ASN_TESTDATA?)");
    if (!ok) {
        free(file);
        return;
    }
    uint32_t count = rd32(file + 8), done = 0, dequant_types = 0;
    size_t off = 12;
    for (; done < count && off + 16 <= size; done++) {
        record r = {rd32(file + off), rd32(file + off + 4), rd32(file + off + 8), rd32(file + off + 12),
                    NULL, NULL};
        off += 16;
        if (size - off < r.nbytes || (size - off - r.nbytes) / 4 < r.n ||
            asn_ttype_row_bytes(r.type, r.n) != r.nbytes)
            break;
        r.blocks = file + off;
        r.values = file + off + r.nbytes;
        off += r.nbytes + 4 * (size_t)r.n;
        if (r.kind == 0) {
            check_dequant(&r);
            dequant_types++;
        } else {
            check_quant(&r);
        }
    }
    T_OK("fixture: every record read, 14 types dequantized", done == count && off == size && dequant_types == 14,
         "%u of %u records, %zu of %zu bytes, %u dequantized", done, count, off, size, dequant_types);
    free(file);
}

static void test_table(void)
{
    static const struct {
        uint32_t id;
        const char *name;
        int be, bb, supported;
    } want[] = {
        {0, "F32", 1, 4, 1},          {1, "F16", 1, 2, 1},         {2, "Q4_0", 32, 18, 1},
        {8, "Q8_0", 32, 34, 1},       {12, "Q4_K", 256, 144, 1},   {14, "Q6_K", 256, 210, 1},
        {30, "BF16", 1, 2, 1},
        {3, "Q4_1", 32, 20, 1},       {6, "Q5_0", 32, 22, 1},      {7, "Q5_1", 32, 24, 1},
        {9, "Q8_1", 32, 36, 0},       {10, "Q2_K", 256, 84, 1},    {11, "Q3_K", 256, 110, 1},
        {13, "Q5_K", 256, 176, 1},    {15, "Q8_K", 256, 292, 0},   {16, "IQ2_XXS", 256, 66, 0},
        {17, "IQ2_XS", 256, 74, 0},   {18, "IQ3_XXS", 256, 98, 0}, {19, "IQ1_S", 256, 50, 0},
        {20, "IQ4_NL", 32, 18, 1},    {21, "IQ3_S", 256, 110, 0},  {22, "IQ2_S", 256, 82, 0},
        {23, "IQ4_XS", 256, 136, 1},  {24, "I8", 1, 1, 0},         {25, "I16", 1, 2, 0},
        {26, "I32", 1, 4, 0},         {27, "I64", 1, 8, 0},        {28, "F64", 1, 8, 0},
        {29, "IQ1_M", 256, 56, 0},    {34, "TQ1_0", 256, 54, 0},   {35, "TQ2_0", 256, 66, 0},
        {39, "MXFP4", 32, 17, 0},     {40, "NVFP4", 64, 36, 0},    {41, "Q1_0", 128, 18, 0},
        {42, "Q2_0", 64, 18, 0},
    };
    int bad = 0;
    char first[160] = "";
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int be = -1, bb = -1;
        int rc = asn_ttype_block(want[i].id, &be, &bb);
        if (rc || be != want[i].be || bb != want[i].bb || strcmp(asn_ttype_name(want[i].id), want[i].name) ||
            asn_ttype_supported(want[i].id) != want[i].supported) {
            if (!bad++)
                snprintf(first, sizeof first, "id %u: rc %d, %d/%d, %s, supported %d", want[i].id, rc, be, bb,
                         asn_ttype_name(want[i].id), asn_ttype_supported(want[i].id));
        }
    }
    T_OK("type table: every ggml type id named, with its block size and support", bad == 0,
         "%d wrong, first %s", bad, first);

    /* ids ggml retired and ids past the last stay unknown */
    static const uint32_t unknown[] = {4, 5, 31, 32, 33, 36, 37, 38, 43, 1000, 0xffffffffu};
    bad = 0;
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        int be = -1, bb = -1;
        if (asn_ttype_block(unknown[i], &be, &bb) != -1 || be || bb || asn_ttype_supported(unknown[i]) ||
            asn_ttype_row_bytes(unknown[i], 32) != 0)
            bad++;
    }
    T_OK("retired and out-of-range ids are unknown", bad == 0, "%d wrong", bad);
    T_EQ_STR("an unknown id is named by number", asn_ttype_name(31), "type 31");
    T_EQ_STR("an unsupported type is named", asn_ttype_name(16), "IQ2_XXS");
    T_EQ_INT("row bytes Q4_K x 512", asn_ttype_row_bytes(ASN_T_Q4_K, 512), 288);
    T_EQ_INT("row bytes F16 x 10", asn_ttype_row_bytes(ASN_T_F16, 10), 20);
    T_EQ_INT("row bytes Q8_0 x 64", asn_ttype_row_bytes(ASN_T_Q8_0, 64), 68);
}

static void test_refusals(void)
{
    static uint8_t q[4096];
    float y[1024];
    static const struct {
        uint32_t type;
        int64_t n;
    } bad_n[] = {{ASN_T_Q4_1, 31}, {ASN_T_Q5_0, 48}, {ASN_T_Q5_1, 33}, {ASN_T_Q2_K, 128},
                 {ASN_T_Q3_K, 255}, {ASN_T_Q5_K, 257}, {ASN_T_IQ4_NL, 16}, {ASN_T_IQ4_XS, 32},
                 {ASN_T_Q4_K, -256}};
    int bad = 0;
    for (size_t i = 0; i < sizeof bad_n / sizeof bad_n[0]; i++) {
        memset(y, 0x5a, sizeof y);
        int rc = asn_dequantize_row(bad_n[i].type, q, y, bad_n[i].n);
        if (rc != -1 || y[0] != y[1023] || y[0] == 0.0f)
            bad++;
    }
    T_OK("dequantize refuses n not a multiple of the block (dst untouched)", bad == 0, "%d wrong", bad);
    T_EQ_INT("dequantize refuses an unsupported type (IQ2_XXS)", asn_dequantize_row(ASN_T_IQ2_XXS, q, y, 256),
             -1);
    T_EQ_INT("dequantize of zero elements", asn_dequantize_row(ASN_T_IQ4_XS, q, y, 0), 0);
    float x[64] = {0};
    T_EQ_INT("quantize Q5_1 needs whole blocks", asn_quantize_row(ASN_T_Q5_1, x, q, 40), -1);
    T_EQ_INT("quantize to IQ4_NL is not offered", asn_quantize_row(ASN_T_IQ4_NL, x, q, 32), -1);
}

/* Non-finite input must still give a valid block (no undefined float to
 * int conversion; UBSan checks this in the sanitizer build). */
static void test_quant_nonfinite(void)
{
    float x[32];
    for (int j = 0; j < 32; j++)
        x[j] = (float)j - 10.0f;
    x[3] = INFINITY;
    x[7] = -INFINITY;
    x[11] = NAN;
    static const uint32_t types[] = {ASN_T_Q4_1, ASN_T_Q5_0, ASN_T_Q5_1};
    int bad = 0;
    for (size_t i = 0; i < 3; i++) {
        uint8_t q[32];
        bad += asn_quantize_row(types[i], x, q, 32) != 0;
    }
    T_OK("quantizing inf and NaN gives blocks", bad == 0, "%d failed", bad);
}

int main(void)
{
    test_fixture();
    test_table();
    test_refusals();
    test_quant_nonfinite();
    T_DONE();
}
