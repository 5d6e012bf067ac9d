/* asn/gguf.h — GGUF files (v2 and v3): a validating, mmap-based reader of
 * metadata and tensors, tensor types with (de)quantization, and a writer.
 *
 * The reader checks everything before use: magic, version, counts against
 * the file size, string and array lengths, value types, tensor dimensions,
 * types, offsets and sizes inside the data section. A truncated, corrupt or
 * hostile file gets an error (never a crash or an out-of-bounds read).
 * Metadata strings point into the mapping and are not NUL-terminated. */
#ifndef ASN_GGUF_H
#define ASN_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "asn/core.h"

/* ------------------------------------------------------- metadata values */

typedef enum asn_gguf_vtype {
    ASN_GGUF_U8 = 0,
    ASN_GGUF_I8 = 1,
    ASN_GGUF_U16 = 2,
    ASN_GGUF_I16 = 3,
    ASN_GGUF_U32 = 4,
    ASN_GGUF_I32 = 5,
    ASN_GGUF_F32 = 6,
    ASN_GGUF_BOOL = 7,
    ASN_GGUF_STRING = 8,
    ASN_GGUF_ARRAY = 9,
    ASN_GGUF_U64 = 10,
    ASN_GGUF_I64 = 11,
    ASN_GGUF_F64 = 12,
} asn_gguf_vtype;

typedef struct asn_gguf_str {
    const char *p; /* into the mapping; not NUL-terminated */
    uint64_t n;
} asn_gguf_str;

typedef struct asn_gguf_kv {
    asn_gguf_str key;
    asn_gguf_vtype type;
    union {
        uint64_t u;      /* unsigned integers and bool */
        int64_t i;       /* signed integers */
        double f;        /* f32, f64 */
        asn_gguf_str s;  /* string */
        struct {
            asn_gguf_vtype type;    /* element type (never ARRAY) */
            uint64_t n;             /* element count */
            const uint8_t *data;    /* packed elements in the mapping */
            const uint64_t *str_off; /* string arrays: offset from data of element i
                                        (its u64 length, then its bytes); else NULL */
        } arr;
    } v;
} asn_gguf_kv;

/* ----------------------------------------------------------- tensor types */

/* ggml type ids: all of them (ids ggml retired, 4, 5, 31-33 and 36-38,
 * are unknown). */
typedef enum asn_ttype {
    ASN_T_F32 = 0,
    ASN_T_F16 = 1,
    ASN_T_Q4_0 = 2,
    ASN_T_Q4_1 = 3,
    ASN_T_Q5_0 = 6,
    ASN_T_Q5_1 = 7,
    ASN_T_Q8_0 = 8,
    ASN_T_Q8_1 = 9,
    ASN_T_Q2_K = 10,
    ASN_T_Q3_K = 11,
    ASN_T_Q4_K = 12,
    ASN_T_Q5_K = 13,
    ASN_T_Q6_K = 14,
    ASN_T_Q8_K = 15,
    ASN_T_IQ2_XXS = 16,
    ASN_T_IQ2_XS = 17,
    ASN_T_IQ3_XXS = 18,
    ASN_T_IQ1_S = 19,
    ASN_T_IQ4_NL = 20,
    ASN_T_IQ3_S = 21,
    ASN_T_IQ2_S = 22,
    ASN_T_IQ4_XS = 23,
    ASN_T_I8 = 24,
    ASN_T_I16 = 25,
    ASN_T_I32 = 26,
    ASN_T_I64 = 27,
    ASN_T_F64 = 28,
    ASN_T_IQ1_M = 29,
    ASN_T_BF16 = 30,
    ASN_T_TQ1_0 = 34,
    ASN_T_TQ2_0 = 35,
    ASN_T_MXFP4 = 39,
    ASN_T_NVFP4 = 40,
    ASN_T_Q1_0 = 41,
    ASN_T_Q2_0 = 42,
} asn_ttype;

/* Name of a ggml type ("F32", "Q4_K", "IQ2_XXS", ...; "type 31" for ids
 * that are not in the enum above). */
const char *asn_ttype_name(uint32_t type);
/* Elements per block and bytes per block: 0, or -1 (both set to 0) if the
 * type is not one of the above. Known types that asn cannot compute with
 * still report their sizes, so a file that holds them can be read and
 * reported on. */
int asn_ttype_block(uint32_t type, int *block_elems, int *block_bytes);
/* 1 if asn can dequantize the type: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS. The others (Q8_1 and
 * Q8_K, the formats of activations inside ggml's dot products, the IQ grid and
 * ternary types, MXFP4, NVFP4, Q1_0, Q2_0 and the integer types) are read but
 * not computed with. */
int asn_ttype_supported(uint32_t type);
/* Bytes of a row of n elements (n a multiple of the block size); 0 for an
 * unknown type. */
size_t asn_ttype_row_bytes(uint32_t type, int64_t n);
/* Dequantizes n elements (a multiple of the block size) from src
 * (asn_ttype_row_bytes(type, n) bytes, any alignment) to float, with
 * ggml's arithmetic (results equal ggml's bit for bit). 0, or -1 (dst
 * untouched) if the type is not supported or n is not a multiple of the
 * block size. */
int asn_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n);
/* Quantizes n floats into dst (asn_ttype_row_bytes(type, n) bytes), for
 * F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1: the quantized types byte
 * for byte as ggml's reference quantizers (quantize_row_q8_0_ref and so
 * on). -1 for other types or n not a multiple of the block size. Used by
 * writers and tests. */
int asn_quantize_row(uint32_t type, const float *src, void *dst, int64_t n);

/* IEEE half and bfloat16 conversions. Narrowing rounds to nearest even,
 * keeps subnormals, overflows to infinity and turns NaN into a quiet NaN
 * of the same sign; widening is exact (NaN payloads kept). */
float asn_f16_to_f32(uint16_t h);
uint16_t asn_f32_to_f16(float f);
float asn_bf16_to_f32(uint16_t h);
uint16_t asn_f32_to_bf16(float f);

/* ----------------------------------------------------------------- reader */

typedef struct asn_gguf_tensor {
    asn_gguf_str name;
    uint32_t n_dims;
    int64_t ne[4];      /* ne[0] fastest; missing dims are 1 */
    uint32_t type;
    uint64_t offset;    /* relative to the data section */
    const void *data;   /* into the mapping: any alignment in an open_mem buffer */
    size_t nbytes;      /* 0 when a dimension is 0 (ne[0] may still be large) */
} asn_gguf_tensor;

typedef struct asn_gguf asn_gguf;

/* Maps and validates a file. Errors name the file and what is wrong
 * ("model.gguf: tensor 3 (blk.0.attn_q.weight): data past end of file").
 * Accepted: versions 2 and 3; general.alignment absent (32) or a u32 power
 * of two; tensors of every type above (asn_ttype_supported says which asn
 * can compute with), 1 to 4 dimensions, offsets aligned, data inside the
 * file (overlaps and gaps are allowed). Rejected besides truncation: bad
 * magic, versions 1, > 3 and big-endian ones, unknown value types, nested
 * arrays, empty or duplicate keys, duplicate tensor names, unknown tensor
 * types, element counts that overflow, ne[0] not a multiple of the block. */
asn_gguf *asn_gguf_open(const char *path, asn_err *e);
/* The same over a buffer the caller keeps alive (fuzzing, tests); name
 * (NULL: "(memory)") stands for the file in messages. */
asn_gguf *asn_gguf_open_mem(const void *data, size_t size, const char *name, asn_err *e);
void asn_gguf_close(asn_gguf *g);

uint32_t asn_gguf_version(const asn_gguf *g);
const char *asn_gguf_path(const asn_gguf *g);
size_t asn_gguf_n_kv(const asn_gguf *g);
const asn_gguf_kv *asn_gguf_kv_at(const asn_gguf *g, size_t i);
const asn_gguf_kv *asn_gguf_find(const asn_gguf *g, const char *key);
size_t asn_gguf_n_tensors(const asn_gguf *g);
const asn_gguf_tensor *asn_gguf_tensor_at(const asn_gguf *g, size_t i);
const asn_gguf_tensor *asn_gguf_find_tensor(const asn_gguf *g, const char *name);

/* Typed getters. Absent and optional: return 0 leaving *out unchanged;
 * absent and required, or of an incompatible type, or out of range: -1 with
 * an error naming the file and key. Integer getters accept any integer type
 * whose value fits; float getters accept f32, f64 and integers. */
int asn_gguf_get_u32(const asn_gguf *g, const char *key, int required, uint32_t *out, asn_err *e);
int asn_gguf_get_i64(const asn_gguf *g, const char *key, int required, int64_t *out, asn_err *e);
int asn_gguf_get_f32(const asn_gguf *g, const char *key, int required, float *out, asn_err *e);
int asn_gguf_get_bool(const asn_gguf *g, const char *key, int required, int *out, asn_err *e);
/* A string value as a new NUL-terminated copy (caller frees). */
int asn_gguf_get_str(const asn_gguf *g, const char *key, int required, char **out, asn_err *e);
/* An array value: its kv (*out = NULL when absent and optional); -1 if the
 * value is not an array. The caller checks v.arr.type and reads elements
 * with asn_gguf_arr_*, which convert between integer and float types. */
int asn_gguf_get_arr(const asn_gguf *g, const char *key, int required, const asn_gguf_kv **out,
                     asn_err *e);
/* Elements of an array kv, converted, in O(1); the index must be < v.arr.n
 * (out of range or a wrong element type gives "" / 0). u64 values above
 * INT64_MAX wrap in asn_gguf_arr_int. */
asn_gguf_str asn_gguf_arr_str(const asn_gguf_kv *kv, uint64_t i);
int64_t asn_gguf_arr_int(const asn_gguf_kv *kv, uint64_t i);  /* integer and bool arrays */
double asn_gguf_arr_float(const asn_gguf_kv *kv, uint64_t i); /* f32/f64 and integer arrays */

/* ----------------------------------------------------------------- writer */

typedef struct asn_gguf_writer asn_gguf_writer;

asn_gguf_writer *asn_gguf_writer_new(void);
void asn_gguf_writer_free(asn_gguf_writer *w);
/* Metadata, in the order given (a key set twice keeps its first place and
 * its last value). Misuse (NULL or empty key, NULL value) is reported by
 * asn_gguf_write. */
void asn_gguf_set_u32(asn_gguf_writer *w, const char *key, uint32_t v);
void asn_gguf_set_i32(asn_gguf_writer *w, const char *key, int32_t v);
void asn_gguf_set_u64(asn_gguf_writer *w, const char *key, uint64_t v);
void asn_gguf_set_f32(asn_gguf_writer *w, const char *key, float v);
void asn_gguf_set_bool(asn_gguf_writer *w, const char *key, int v);
void asn_gguf_set_str(asn_gguf_writer *w, const char *key, const char *v);
void asn_gguf_set_arr_str(asn_gguf_writer *w, const char *key, const char *const *v, size_t n);
void asn_gguf_set_arr_f32(asn_gguf_writer *w, const char *key, const float *v, size_t n);
void asn_gguf_set_arr_i32(asn_gguf_writer *w, const char *key, const int32_t *v, size_t n);
/* A tensor whose bytes (already in `type`'s format, asn_ttype_row_bytes(type,
 * ne[0]) * ne[1] * ... bytes) are copied. n_dims 1..4; the name must be
 * shorter than 64 bytes (llama.cpp's limit) and new. Misuse is reported by
 * asn_gguf_write. */
void asn_gguf_add_tensor(asn_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                         const int64_t *ne, const void *data);
/* Writes a GGUF v3 file (alignment general.alignment if set, else 32):
 * kvs in order, tensor infos, then each tensor's data padded to the
 * alignment, as ggml writes it. The file appears atomically (written to a
 * temporary name beside it, then renamed). */
int asn_gguf_write(asn_gguf_writer *w, const char *path, asn_err *e);

#endif
