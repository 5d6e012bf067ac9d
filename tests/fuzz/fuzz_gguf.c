/* fuzz_gguf.c — libFuzzer target: arbitrary bytes as a GGUF file. Opens
 * them with asn_gguf_open_mem and touches everything a loader would: every
 * kv through the typed getters, every array element, every tensor's bytes,
 * and the first row of each tensor asn can dequantize. Must never crash,
 * read out of bounds or leak, only return errors. test_gguf.c replays the
 * inputs kept in tests/fuzz/regressions/fuzz_gguf/ through this function. */
#include "asn/gguf.h"

#include <stdlib.h>
#include <string.h>

/* Folds values into a sink so that nothing read is optimized away. */
static volatile uint64_t fuzz_gguf_sink;

static void fuzz_gguf_touch_kv(const asn_gguf *g, const asn_gguf_kv *kv)
{
    char key[256];
    size_t n = kv->key.n < sizeof key - 1 ? (size_t)kv->key.n : sizeof key - 1;
    memcpy(key, kv->key.p, n);
    key[n] = 0;
    asn_err e;
    uint32_t u32;
    int64_t i64;
    float f;
    int b;
    char *s = NULL;
    const asn_gguf_kv *arr = NULL;
    uint64_t acc = 0;
    if (asn_gguf_get_u32(g, key, 1, &u32, &e) == 0)
        acc += u32;
    if (asn_gguf_get_i64(g, key, 1, &i64, &e) == 0)
        acc += (uint64_t)i64;
    if (asn_gguf_get_f32(g, key, 1, &f, &e) == 0)
        acc += f == f;
    if (asn_gguf_get_bool(g, key, 1, &b, &e) == 0)
        acc += (uint64_t)b;
    if (asn_gguf_get_str(g, key, 1, &s, &e) == 0) {
        acc += strlen(s);
        free(s);
    }
    if (asn_gguf_get_arr(g, key, 1, &arr, &e) == 0 && arr) {
        for (uint64_t i = 0; i < arr->v.arr.n; i++) {
            if (arr->v.arr.type == ASN_GGUF_STRING) {
                asn_gguf_str el = asn_gguf_arr_str(arr, i);
                for (uint64_t j = 0; j < el.n; j++)
                    acc += (unsigned char)el.p[j];
            } else {
                acc += (uint64_t)asn_gguf_arr_int(arr, i);
                acc += asn_gguf_arr_float(arr, i) == 0;
            }
        }
    }
    fuzz_gguf_sink += acc;
}

static void fuzz_gguf_touch_tensor(const asn_gguf *g, const asn_gguf_tensor *t)
{
    uint64_t acc = 0;
    const uint8_t *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++)
        acc += p[i];
    acc += asn_gguf_find_tensor(g, "token_embd.weight") != NULL;
    /* nbytes > 0 means every dimension is at least 1, so the first row of
     * ne[0] elements lies inside the data */
    if (asn_ttype_supported(t->type) && t->nbytes > 0) {
        float *row = malloc((size_t)t->ne[0] * sizeof *row + 1);
        if (row && asn_dequantize_row(t->type, t->data, row, t->ne[0]) == 0)
            for (int64_t i = 0; i < t->ne[0]; i++)
                acc += row[i] == row[i];
        free(row);
    }
    fuzz_gguf_sink += acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open_mem(data, size, "fuzz.gguf", &e);
    if (!g)
        return 0;
    for (size_t i = 0; i < asn_gguf_n_kv(g); i++)
        fuzz_gguf_touch_kv(g, asn_gguf_kv_at(g, i));
    for (size_t i = 0; i < asn_gguf_n_tensors(g); i++)
        fuzz_gguf_touch_tensor(g, asn_gguf_tensor_at(g, i));
    asn_gguf_close(g);
    return 0;
}
