/* gguf.c — GGUF files: the validating reader (over an mmap or a caller's
 * buffer), typed metadata getters, and the v3 writer.
 *
 * Layout (GGUF v3, as ggml's gguf.h documents it): magic, version, tensor count, kv count,
 * the kvs, the tensor infos, padding to the alignment, the data section.
 * The reader walks the whole header once, checking every count, length,
 * type and offset against the bytes that remain before anything relies on
 * it; afterwards every pointer it hands out lies inside the buffer. All
 * integers are little-endian and read byte by byte (the header has no
 * alignment at all). */
#include "asn/gguf.h"
#include "asn/sbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ggml's GGUF_DEFAULT_ALIGNMENT. */
#define GGUF_DEFAULT_ALIGNMENT 32
/* Smallest possible kv: key length (u64), a 1-byte key, value type (i32)
 * and a 1-byte value (u8, i8, bool). Bounds a hostile kv count. */
#define KV_MIN_BYTES (8 + 1 + 4 + 1)
/* Smallest possible tensor info: name length (u64), empty name, n_dims
 * (u32), one dimension (i64), type (i32), offset (u64). */
#define TINFO_MIN_BYTES (8 + 4 + 8 + 4 + 8)
/* ggml's GGML_MAX_NAME: llama.cpp rejects tensor names of 64 bytes or more,
 * so the writer does too (the reader is lenient). */
#define GGML_MAX_NAME 64
/* How much of a key or tensor name an error message shows. */
#define SHOW_MAX 80

/* --------------------------------------------------------------- helpers */

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static inline double rdf32(const uint8_t *p)
{
    uint32_t u = rd32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline double rdf64(const uint8_t *p)
{
    uint64_t u = rd64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static const char *const vtype_names[] = {"u8",     "i8",    "u16", "i16", "u32", "i32", "f32",
                                          "bool",   "string", "array", "u64", "i64", "f64"};
#define N_VTYPES 13

/* Bytes of one value of a fixed-size type; 0 for string, array, unknown. */
static size_t vtype_size(uint32_t t)
{
    static const uint8_t sizes[N_VTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < N_VTYPES ? sizes[t] : 0;
}

static const char *vtype_name(uint32_t t)
{
    return t < N_VTYPES ? vtype_names[t] : "unknown";
}

static int vtype_is_int(uint32_t t)
{
    return t <= ASN_GGUF_I32 || t == ASN_GGUF_U64 || t == ASN_GGUF_I64;
}

static int vtype_is_signed(uint32_t t)
{
    return t == ASN_GGUF_I8 || t == ASN_GGUF_I16 || t == ASN_GGUF_I32 || t == ASN_GGUF_I64;
}

/* A key or tensor name for an error message: at most SHOW_MAX bytes, with
 * control bytes shown as '?' so the message stays on one line. */
static const char *show(asn_gguf_str s, char buf[SHOW_MAX + 4])
{
    size_t n = s.n < SHOW_MAX ? (size_t)s.n : SHOW_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        buf[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (n < s.n) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = 0;
    return buf;
}

static uint64_t fnv1a(const char *p, uint64_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static int str_eq(asn_gguf_str a, const char *p, uint64_t n)
{
    return a.n == n && (n == 0 || memcmp(a.p, p, (size_t)n) == 0);
}

/* ------------------------------------------------------------ name index */

/* Open addressing over key and tensor names, so that duplicate detection
 * stays linear for files with many entries and lookups are O(1). */
typedef struct name_slot {
    asn_gguf_str name;
    size_t idx; /* entry index + 1; 0 = empty */
} name_slot;

typedef struct name_index {
    name_slot *slot;
    size_t mask;
} name_index;

static void index_init(name_index *x, size_t n)
{
    size_t cap = 8;
    while (cap < 2 * n)
        cap *= 2;
    x->slot = asn_xcalloc(cap, sizeof *x->slot);
    x->mask = cap - 1;
}

static name_slot *index_slot(const name_index *x, const char *p, uint64_t n)
{
    size_t i = (size_t)fnv1a(p, n) & x->mask;
    while (x->slot[i].idx && !str_eq(x->slot[i].name, p, n))
        i = (i + 1) & x->mask;
    return &x->slot[i];
}

/* Entry index of a name, or -1. */
static long long index_find(const name_index *x, const char *p, uint64_t n)
{
    if (!x->slot)
        return -1;
    name_slot *s = index_slot(x, p, n);
    return s->idx ? (long long)s->idx - 1 : -1;
}

/* Adds a name; the index of the entry that already has it, or -1. */
static long long index_add(name_index *x, asn_gguf_str name, size_t idx)
{
    name_slot *s = index_slot(x, name.p, name.n);
    if (s->idx)
        return (long long)s->idx - 1;
    s->name = name;
    s->idx = idx + 1;
    return -1;
}

/* ----------------------------------------------------------------- reader */

struct asn_gguf {
    char *name; /* for messages */
    const uint8_t *base;
    size_t size;
    void *map; /* mmap to release, or NULL for a caller's buffer */
    uint32_t version;
    uint32_t alignment;
    size_t n_kv;
    asn_gguf_kv *kv;
    size_t n_tensors;
    asn_gguf_tensor *tensors;
    uint64_t data_off;
    name_index kv_index, tensor_index;
};

/* A cursor over the header; every read is checked against the end. */
typedef struct cursor {
    const uint8_t *base;
    size_t pos, size;
} cursor;

static size_t remain(const cursor *c)
{
    return c->size - c->pos;
}

static int take(cursor *c, size_t n, const uint8_t **p)
{
    if (n > remain(c))
        return -1;
    *p = c->base + c->pos;
    c->pos += n;
    return 0;
}

static int take_u32(cursor *c, uint32_t *v)
{
    const uint8_t *p;
    if (take(c, 4, &p))
        return -1;
    *v = rd32(p);
    return 0;
}

static int take_u64(cursor *c, uint64_t *v)
{
    const uint8_t *p;
    if (take(c, 8, &p))
        return -1;
    *v = rd64(p);
    return 0;
}

/* A length-prefixed string; a length past the end fails before any use. */
static int take_str(cursor *c, asn_gguf_str *s)
{
    uint64_t n;
    const uint8_t *p;
    if (take_u64(c, &n) || n > remain(c) || take(c, (size_t)n, &p))
        return -1;
    s->p = (const char *)p;
    s->n = n;
    return 0;
}

static int fail(const asn_gguf *g, asn_err *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const asn_gguf *g, asn_err *e, const char *fmt, ...)
{
    char msg[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return asn_err_set(e, "%s: %s", g->name, msg);
}

/* Reads a scalar of fixed-size type t from p into kv's value. */
static void scalar_value(asn_gguf_kv *kv, uint32_t t, const uint8_t *p)
{
    switch (t) {
    case ASN_GGUF_U8: kv->v.u = p[0]; break;
    case ASN_GGUF_I8: kv->v.i = (int8_t)p[0]; break;
    case ASN_GGUF_U16: kv->v.u = rd16(p); break;
    case ASN_GGUF_I16: kv->v.i = (int16_t)rd16(p); break;
    case ASN_GGUF_U32: kv->v.u = rd32(p); break;
    case ASN_GGUF_I32: kv->v.i = (int32_t)rd32(p); break;
    case ASN_GGUF_F32: kv->v.f = rdf32(p); break;
    case ASN_GGUF_BOOL: kv->v.u = p[0] != 0; break;
    case ASN_GGUF_U64: kv->v.u = rd64(p); break;
    case ASN_GGUF_I64: kv->v.i = (int64_t)rd64(p); break;
    case ASN_GGUF_F64: kv->v.f = rdf64(p); break;
    default: break;
    }
}

static int parse_array(asn_gguf *g, cursor *c, asn_gguf_kv *kv, const char *what, asn_err *e)
{
    uint32_t et;
    uint64_t n;
    if (take_u32(c, &et) || take_u64(c, &n))
        return fail(g, e, "%s: truncated array header", what);
    if (et == ASN_GGUF_ARRAY)
        return fail(g, e, "%s: nested arrays are not supported", what);
    if (et >= N_VTYPES)
        return fail(g, e, "%s: unknown array element type %u", what, et);
    kv->v.arr.type = (asn_gguf_vtype)et;
    kv->v.arr.n = n;
    kv->v.arr.data = c->base + c->pos;
    kv->v.arr.str_off = NULL;
    if (et != ASN_GGUF_STRING) {
        size_t es = vtype_size(et);
        if (n > remain(c) / es)
            return fail(g, e, "%s: array of %llu %s values runs past end of file", what,
                        (unsigned long long)n, vtype_name(et));
        c->pos += (size_t)n * es;
        return 0;
    }
    /* each string takes at least its 8-byte length: bounds the allocation */
    if (n > remain(c) / 8)
        return fail(g, e, "%s: array of %llu strings runs past end of file", what, (unsigned long long)n);
    uint64_t *off = asn_xmalloc((size_t)n * sizeof *off);
    kv->v.arr.str_off = off;
    size_t start = c->pos;
    for (uint64_t j = 0; j < n; j++) {
        off[j] = c->pos - start;
        asn_gguf_str s;
        if (take_str(c, &s))
            return fail(g, e, "%s: string %llu runs past end of file", what, (unsigned long long)j);
    }
    return 0;
}

static int parse_kv(asn_gguf *g, cursor *c, size_t i, asn_err *e)
{
    asn_gguf_kv *kv = &g->kv[i];
    char what[SHOW_MAX + 48], b[SHOW_MAX + 4];
    if (take_str(c, &kv->key))
        return fail(g, e, "key %zu: truncated or runs past end of file", i);
    if (kv->key.n == 0)
        return fail(g, e, "key %zu: empty key", i);
    snprintf(what, sizeof what, "key %zu (%s)", i, show(kv->key, b));
    long long dup = index_add(&g->kv_index, kv->key, i);
    if (dup >= 0)
        return fail(g, e, "%s: duplicate key (also key %lld)", what, dup);
    uint32_t t;
    if (take_u32(c, &t))
        return fail(g, e, "%s: truncated before the value type", what);
    if (t >= N_VTYPES)
        return fail(g, e, "%s: unknown value type %u", what, t);
    kv->type = (asn_gguf_vtype)t;
    if (t == ASN_GGUF_ARRAY)
        return parse_array(g, c, kv, what, e);
    if (t == ASN_GGUF_STRING) {
        if (take_str(c, &kv->v.s))
            return fail(g, e, "%s: string value runs past end of file", what);
        return 0;
    }
    const uint8_t *p;
    if (take(c, vtype_size(t), &p))
        return fail(g, e, "%s: truncated %s value", what, vtype_name(t));
    scalar_value(kv, t, p);
    return 0;
}

static int set_alignment(asn_gguf *g, asn_err *e)
{
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const asn_gguf_kv *kv = asn_gguf_find(g, "general.alignment");
    if (!kv)
        return 0;
    if (kv->type != ASN_GGUF_U32)
        return fail(g, e, "general.alignment: expected u32, got %s", vtype_name(kv->type));
    if (kv->v.u == 0 || (kv->v.u & (kv->v.u - 1)))
        return fail(g, e, "general.alignment: %llu is not a power of two", (unsigned long long)kv->v.u);
    g->alignment = (uint32_t)kv->v.u;
    return 0;
}

static int parse_tensor_info(asn_gguf *g, cursor *c, size_t i, asn_err *e)
{
    asn_gguf_tensor *t = &g->tensors[i];
    char what[SHOW_MAX + 48], b[SHOW_MAX + 4];
    if (take_str(c, &t->name))
        return fail(g, e, "tensor %zu: name truncated or runs past end of file", i);
    snprintf(what, sizeof what, "tensor %zu (%s)", i, show(t->name, b));
    if (take_u32(c, &t->n_dims))
        return fail(g, e, "%s: truncated", what);
    if (t->n_dims < 1 || t->n_dims > 4)
        return fail(g, e, "%s: %u dimensions (must be 1 to 4)", what, t->n_dims);
    for (uint32_t d = 0; d < 4; d++) {
        uint64_t v = 1;
        if (d < t->n_dims && take_u64(c, &v))
            return fail(g, e, "%s: truncated", what);
        t->ne[d] = (int64_t)v;
        if (t->ne[d] < 0)
            return fail(g, e, "%s: dimension %u is negative (%lld)", what, d, (long long)t->ne[d]);
    }
    uint64_t off;
    if (take_u32(c, &t->type) || take_u64(c, &off))
        return fail(g, e, "%s: truncated", what);
    t->offset = off;
    int be, bb;
    if (asn_ttype_block(t->type, &be, &bb))
        return fail(g, e, "%s: unknown type %u", what, t->type);
    int64_t nel = t->ne[0];
    if (__builtin_mul_overflow(nel, t->ne[1], &nel) || __builtin_mul_overflow(nel, t->ne[2], &nel) ||
        __builtin_mul_overflow(nel, t->ne[3], &nel))
        return fail(g, e, "%s: element count overflows (ne = %lld x %lld x %lld x %lld)", what,
                    (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
    if (t->ne[0] % be)
        return fail(g, e, "%s: ne[0] = %lld is not a multiple of the %s block size %d", what,
                    (long long)t->ne[0], asn_ttype_name(t->type), be);
    uint64_t nb = (uint64_t)(t->ne[0] / be);
    if (__builtin_mul_overflow(nb, (uint64_t)bb, &nb) || __builtin_mul_overflow(nb, (uint64_t)t->ne[1], &nb) ||
        __builtin_mul_overflow(nb, (uint64_t)t->ne[2], &nb) ||
        __builtin_mul_overflow(nb, (uint64_t)t->ne[3], &nb) || nb > SIZE_MAX)
        return fail(g, e, "%s: size in bytes overflows", what);
    t->nbytes = (size_t)nb;
    long long dup = index_add(&g->tensor_index, t->name, i);
    if (dup >= 0)
        return fail(g, e, "%s: duplicate tensor name (also tensor %lld)", what, dup);
    return 0;
}

/* Places every tensor in the data section, which starts at the first
 * aligned offset after the infos. Offsets are honoured as they are (ggml
 * also insists that tensors be packed in order; asn does not need that). */
static int place_tensors(asn_gguf *g, size_t infos_end, asn_err *e)
{
    if (g->n_tensors == 0)
        return 0;
    uint64_t a = g->alignment;
    g->data_off = (infos_end + a - 1) / a * a;
    if (g->data_off > g->size)
        return fail(g, e, "data section starts past end of file (offset %llu, file size %zu)",
                    (unsigned long long)g->data_off, g->size);
    uint64_t room = g->size - g->data_off;
    for (size_t i = 0; i < g->n_tensors; i++) {
        asn_gguf_tensor *t = &g->tensors[i];
        char b[SHOW_MAX + 4];
        if (t->offset % a)
            return fail(g, e, "tensor %zu (%s): offset %llu is not a multiple of the alignment %u", i,
                        show(t->name, b), (unsigned long long)t->offset, g->alignment);
        if (t->offset > room || t->nbytes > room - t->offset)
            return fail(g, e, "tensor %zu (%s): data past end of file (offset %llu + %zu bytes, data section %llu bytes)",
                        i, show(t->name, b), (unsigned long long)t->offset, t->nbytes,
                        (unsigned long long)room);
        t->data = g->base + g->data_off + t->offset;
    }
    return 0;
}

static int parse(asn_gguf *g, asn_err *e)
{
    cursor c = {g->base, 0, g->size};
    const uint8_t *p;
    if (take(&c, 4, &p))
        return fail(g, e, "too short for a GGUF file (%zu bytes)", g->size);
    if (memcmp(p, "GGUF", 4))
        return fail(g, e, "not a GGUF file (bad magic)");
    if (take_u32(&c, &g->version))
        return fail(g, e, "truncated before the version");
    if (g->version == 0)
        return fail(g, e, "bad GGUF version 0");
    if ((g->version & 0xffff) == 0)
        return fail(g, e, "GGUF version 0x%08x looks big-endian; only little-endian files are supported",
                    g->version);
    if (g->version == 1)
        return fail(g, e, "GGUF version 1 is not supported (only versions 2 and 3)");
    if (g->version > 3)
        return fail(g, e, "GGUF version %u is not supported (only versions 2 and 3)", g->version);
    uint64_t n_tensors, n_kv;
    if (take_u64(&c, &n_tensors) || take_u64(&c, &n_kv))
        return fail(g, e, "truncated header");
    /* counts are bounded by the bytes left, so a hostile count can neither
     * allocate much nor run long */
    size_t rest = remain(&c);
    if (n_kv > rest / KV_MIN_BYTES)
        return fail(g, e, "kv count %llu does not fit in the %zu bytes left", (unsigned long long)n_kv, rest);
    if (n_tensors > rest / TINFO_MIN_BYTES || n_kv * KV_MIN_BYTES > rest - n_tensors * TINFO_MIN_BYTES)
        return fail(g, e, "tensor count %llu (with %llu kvs) does not fit in the %zu bytes left",
                    (unsigned long long)n_tensors, (unsigned long long)n_kv, rest);
    g->n_kv = (size_t)n_kv;
    g->kv = asn_xcalloc(g->n_kv, sizeof *g->kv);
    index_init(&g->kv_index, g->n_kv);
    for (size_t i = 0; i < g->n_kv; i++)
        if (parse_kv(g, &c, i, e))
            return -1;
    if (set_alignment(g, e))
        return -1;
    g->n_tensors = (size_t)n_tensors;
    g->tensors = asn_xcalloc(g->n_tensors, sizeof *g->tensors);
    index_init(&g->tensor_index, g->n_tensors);
    for (size_t i = 0; i < g->n_tensors; i++)
        if (parse_tensor_info(g, &c, i, e))
            return -1;
    return place_tensors(g, c.pos, e);
}

static asn_gguf *open_buffer(const void *data, size_t size, void *map, const char *name, asn_err *e)
{
    asn_gguf *g = asn_xcalloc(1, sizeof *g);
    g->name = asn_xstrdup(name ? name : "(memory)");
    g->base = data;
    g->size = size;
    g->map = map;
    if (parse(g, e)) {
        asn_gguf_close(g);
        return NULL;
    }
    return g;
}

asn_gguf *asn_gguf_open_mem(const void *data, size_t size, const char *name, asn_err *e)
{
    if (!data && size) {
        asn_err_set(e, "%s: no data", name ? name : "(memory)");
        return NULL;
    }
    static const uint8_t empty[1];
    return open_buffer(data ? data : empty, size, NULL, name, e);
}

asn_gguf *asn_gguf_open(const char *path, asn_err *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        asn_err_set(e, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        asn_err_set(e, "%s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        asn_err_set(e, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    if (size == 0) {
        close(fd);
        return open_buffer("", 0, NULL, path, e);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (map == MAP_FAILED) {
        asn_err_set(e, "%s: mmap: %s", path, strerror(err));
        return NULL;
    }
    return open_buffer(map, size, map, path, e);
}

void asn_gguf_close(asn_gguf *g)
{
    if (!g)
        return;
    for (size_t i = 0; g->kv && i < g->n_kv; i++)
        if (g->kv[i].type == ASN_GGUF_ARRAY)
            free((void *)g->kv[i].v.arr.str_off);
    free(g->kv);
    free(g->tensors);
    free(g->kv_index.slot);
    free(g->tensor_index.slot);
    if (g->map)
        munmap(g->map, g->size);
    free(g->name);
    free(g);
}

uint32_t asn_gguf_version(const asn_gguf *g)
{
    return g->version;
}

const char *asn_gguf_path(const asn_gguf *g)
{
    return g->name;
}

size_t asn_gguf_n_kv(const asn_gguf *g)
{
    return g->n_kv;
}

const asn_gguf_kv *asn_gguf_kv_at(const asn_gguf *g, size_t i)
{
    return i < g->n_kv ? &g->kv[i] : NULL;
}

const asn_gguf_kv *asn_gguf_find(const asn_gguf *g, const char *key)
{
    if (!g || !key)
        return NULL;
    long long i = index_find(&g->kv_index, key, strlen(key));
    return i >= 0 ? &g->kv[i] : NULL;
}

size_t asn_gguf_n_tensors(const asn_gguf *g)
{
    return g->n_tensors;
}

const asn_gguf_tensor *asn_gguf_tensor_at(const asn_gguf *g, size_t i)
{
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const asn_gguf_tensor *asn_gguf_find_tensor(const asn_gguf *g, const char *name)
{
    if (!g || !name)
        return NULL;
    long long i = index_find(&g->tensor_index, name, strlen(name));
    return i >= 0 ? &g->tensors[i] : NULL;
}

/* ------------------------------------------------------------ typed access */

/* 1 found, 0 absent and optional, -1 absent and required. */
static int lookup(const asn_gguf *g, const char *key, int required, const asn_gguf_kv **kv, asn_err *e)
{
    *kv = asn_gguf_find(g, key);
    if (*kv)
        return 1;
    if (required)
        return asn_err_set(e, "%s: missing key %s", g->name, key);
    return 0;
}

static int wrong_type(const asn_gguf *g, const char *key, const char *want, const asn_gguf_kv *kv, asn_err *e)
{
    return asn_err_set(e, "%s: key %s: expected %s, got %s", g->name, key, want, vtype_name(kv->type));
}

/* An integer kv as a signed value with a flag for u64 values above
 * INT64_MAX; -1 if not an integer. */
static int int_value(const asn_gguf_kv *kv, int64_t *v, int *big)
{
    if (!vtype_is_int(kv->type))
        return -1;
    *big = !vtype_is_signed(kv->type) && kv->v.u > INT64_MAX;
    *v = vtype_is_signed(kv->type) ? kv->v.i : (int64_t)kv->v.u;
    return 0;
}

int asn_gguf_get_u32(const asn_gguf *g, const char *key, int required, uint32_t *out, asn_err *e)
{
    const asn_gguf_kv *kv;
    int rc = lookup(g, key, required, &kv, e);
    if (rc <= 0)
        return rc;
    int64_t v;
    int big;
    if (int_value(kv, &v, &big))
        return wrong_type(g, key, "an integer", kv, e);
    if (big || v < 0 || v > UINT32_MAX)
        return asn_err_set(e, "%s: key %s: value %s%lld out of range for u32", g->name, key, big ? "(u64) " : "",
                           (long long)v);
    *out = (uint32_t)v;
    return 0;
}

int asn_gguf_get_i64(const asn_gguf *g, const char *key, int required, int64_t *out, asn_err *e)
{
    const asn_gguf_kv *kv;
    int rc = lookup(g, key, required, &kv, e);
    if (rc <= 0)
        return rc;
    int64_t v;
    int big;
    if (int_value(kv, &v, &big))
        return wrong_type(g, key, "an integer", kv, e);
    if (big)
        return asn_err_set(e, "%s: key %s: value %llu out of range for i64", g->name, key,
                           (unsigned long long)kv->v.u);
    *out = v;
    return 0;
}

int asn_gguf_get_f32(const asn_gguf *g, const char *key, int required, float *out, asn_err *e)
{
    const asn_gguf_kv *kv;
    int rc = lookup(g, key, required, &kv, e);
    if (rc <= 0)
        return rc;
    double d;
    if (kv->type == ASN_GGUF_F32 || kv->type == ASN_GGUF_F64)
        d = kv->v.f;
    else if (vtype_is_int(kv->type))
        d = vtype_is_signed(kv->type) ? (double)kv->v.i : (double)kv->v.u;
    else
        return wrong_type(g, key, "a number", kv, e);
    if (isfinite(d) && fabs(d) > FLT_MAX)
        return asn_err_set(e, "%s: key %s: value %g out of range for f32", g->name, key, d);
    *out = (float)d;
    return 0;
}

int asn_gguf_get_bool(const asn_gguf *g, const char *key, int required, int *out, asn_err *e)
{
    const asn_gguf_kv *kv;
    int rc = lookup(g, key, required, &kv, e);
    if (rc <= 0)
        return rc;
    int64_t v;
    int big;
    if (kv->type == ASN_GGUF_BOOL) {
        *out = kv->v.u != 0;
        return 0;
    }
    if (int_value(kv, &v, &big) == 0 && !big && (v == 0 || v == 1)) {
        *out = (int)v;
        return 0;
    }
    return wrong_type(g, key, "bool", kv, e);
}

int asn_gguf_get_str(const asn_gguf *g, const char *key, int required, char **out, asn_err *e)
{
    const asn_gguf_kv *kv;
    int rc = lookup(g, key, required, &kv, e);
    if (rc <= 0)
        return rc;
    if (kv->type != ASN_GGUF_STRING)
        return wrong_type(g, key, "string", kv, e);
    char *s = asn_xmalloc((size_t)kv->v.s.n + 1);
    if (kv->v.s.n)
        memcpy(s, kv->v.s.p, (size_t)kv->v.s.n);
    s[kv->v.s.n] = 0;
    *out = s;
    return 0;
}

int asn_gguf_get_arr(const asn_gguf *g, const char *key, int required, const asn_gguf_kv **out, asn_err *e)
{
    const asn_gguf_kv *kv;
    int rc = lookup(g, key, required, &kv, e);
    if (rc <= 0) {
        if (rc == 0)
            *out = NULL;
        return rc;
    }
    if (kv->type != ASN_GGUF_ARRAY)
        return wrong_type(g, key, "array", kv, e);
    *out = kv;
    return 0;
}

asn_gguf_str asn_gguf_arr_str(const asn_gguf_kv *kv, uint64_t i)
{
    asn_gguf_str s = {"", 0};
    if (!kv || kv->type != ASN_GGUF_ARRAY || kv->v.arr.type != ASN_GGUF_STRING || i >= kv->v.arr.n)
        return s;
    const uint8_t *p = kv->v.arr.data + kv->v.arr.str_off[i];
    s.n = rd64(p);
    s.p = (const char *)p + 8;
    return s;
}

int64_t asn_gguf_arr_int(const asn_gguf_kv *kv, uint64_t i)
{
    if (!kv || kv->type != ASN_GGUF_ARRAY || i >= kv->v.arr.n)
        return 0;
    const uint8_t *d = kv->v.arr.data;
    switch (kv->v.arr.type) {
    case ASN_GGUF_U8: return d[i];
    case ASN_GGUF_I8: return (int8_t)d[i];
    case ASN_GGUF_BOOL: return d[i] != 0;
    case ASN_GGUF_U16: return rd16(d + 2 * i);
    case ASN_GGUF_I16: return (int16_t)rd16(d + 2 * i);
    case ASN_GGUF_U32: return rd32(d + 4 * i);
    case ASN_GGUF_I32: return (int32_t)rd32(d + 4 * i);
    case ASN_GGUF_U64:
    case ASN_GGUF_I64: return (int64_t)rd64(d + 8 * i);
    default: return 0;
    }
}

double asn_gguf_arr_float(const asn_gguf_kv *kv, uint64_t i)
{
    if (!kv || kv->type != ASN_GGUF_ARRAY || i >= kv->v.arr.n)
        return 0;
    const uint8_t *d = kv->v.arr.data;
    switch (kv->v.arr.type) {
    case ASN_GGUF_F32: return rdf32(d + 4 * i);
    case ASN_GGUF_F64: return rdf64(d + 8 * i);
    case ASN_GGUF_U64: return (double)rd64(d + 8 * i);
    default: return (double)asn_gguf_arr_int(kv, i);
    }
}

/* ----------------------------------------------------------------- writer */

static void put_u32(asn_sbuf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    asn_sbuf_add(b, x, 4);
}

static void put_u64(asn_sbuf *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(asn_sbuf *b, const char *s)
{
    size_t n = strlen(s);
    put_u64(b, n);
    asn_sbuf_add(b, s, n);
}

typedef struct wkv {
    char *key;
    asn_gguf_vtype type;
    asn_sbuf val; /* the encoded value (for arrays: element type, count, elements) */
} wkv;

typedef struct wtensor {
    char *name;
    uint32_t type, n_dims;
    int64_t ne[4];
    uint8_t *data;
    size_t nbytes;
} wtensor;

struct asn_gguf_writer {
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
    char err[512]; /* the first misuse, reported by asn_gguf_write */
};

static void werr(asn_gguf_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void werr(asn_gguf_writer *w, const char *fmt, ...)
{
    if (w->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
}

asn_gguf_writer *asn_gguf_writer_new(void)
{
    return asn_xcalloc(1, sizeof(asn_gguf_writer));
}

void asn_gguf_writer_free(asn_gguf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        asn_sbuf_release(&w->kv[i].val);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
        free(w->t[i].data);
    }
    free(w->kv);
    free(w->t);
    free(w);
}

/* The value slot of key (emptied if the key was set before, which keeps its
 * place), or NULL after recording a misuse. */
static asn_sbuf *set_kv(asn_gguf_writer *w, const char *key, asn_gguf_vtype type)
{
    if (!key || !*key) {
        werr(w, "metadata key is %s", key ? "empty" : "NULL");
        return NULL;
    }
    for (size_t i = 0; i < w->n_kv; i++) {
        if (!strcmp(w->kv[i].key, key)) {
            w->kv[i].type = type;
            w->kv[i].val.len = 0;
            return &w->kv[i].val;
        }
    }
    asn_grow((void **)&w->kv, &w->cap_kv, w->n_kv + 1, sizeof *w->kv);
    wkv *kv = &w->kv[w->n_kv++];
    memset(kv, 0, sizeof *kv);
    kv->key = asn_xstrdup(key);
    kv->type = type;
    return &kv->val;
}

void asn_gguf_set_u32(asn_gguf_writer *w, const char *key, uint32_t v)
{
    asn_sbuf *b = set_kv(w, key, ASN_GGUF_U32);
    if (b)
        put_u32(b, v);
}

void asn_gguf_set_i32(asn_gguf_writer *w, const char *key, int32_t v)
{
    asn_sbuf *b = set_kv(w, key, ASN_GGUF_I32);
    if (b)
        put_u32(b, (uint32_t)v);
}

void asn_gguf_set_u64(asn_gguf_writer *w, const char *key, uint64_t v)
{
    asn_sbuf *b = set_kv(w, key, ASN_GGUF_U64);
    if (b)
        put_u64(b, v);
}

void asn_gguf_set_f32(asn_gguf_writer *w, const char *key, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    asn_sbuf *b = set_kv(w, key, ASN_GGUF_F32);
    if (b)
        put_u32(b, u);
}

void asn_gguf_set_bool(asn_gguf_writer *w, const char *key, int v)
{
    uint8_t x = v != 0;
    asn_sbuf *b = set_kv(w, key, ASN_GGUF_BOOL);
    if (b)
        asn_sbuf_add(b, &x, 1);
}

void asn_gguf_set_str(asn_gguf_writer *w, const char *key, const char *v)
{
    if (!v) {
        werr(w, "key %s: NULL string", key ? key : "(null)");
        return;
    }
    asn_sbuf *b = set_kv(w, key, ASN_GGUF_STRING);
    if (b)
        put_str(b, v);
}

static asn_sbuf *set_arr(asn_gguf_writer *w, const char *key, asn_gguf_vtype et, const void *v, size_t n)
{
    if (n && !v) {
        werr(w, "key %s: NULL array of %zu elements", key ? key : "(null)", n);
        return NULL;
    }
    asn_sbuf *b = set_kv(w, key, ASN_GGUF_ARRAY);
    if (b) {
        put_u32(b, et);
        put_u64(b, n);
    }
    return b;
}

void asn_gguf_set_arr_str(asn_gguf_writer *w, const char *key, const char *const *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        if (!v[i]) {
            werr(w, "key %s: string %zu is NULL", key ? key : "(null)", i);
            return;
        }
    }
    asn_sbuf *b = set_arr(w, key, ASN_GGUF_STRING, v, n);
    for (size_t i = 0; b && i < n; i++)
        put_str(b, v[i]);
}

void asn_gguf_set_arr_f32(asn_gguf_writer *w, const char *key, const float *v, size_t n)
{
    asn_sbuf *b = set_arr(w, key, ASN_GGUF_F32, v, n);
    for (size_t i = 0; b && i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        put_u32(b, u);
    }
}

void asn_gguf_set_arr_i32(asn_gguf_writer *w, const char *key, const int32_t *v, size_t n)
{
    asn_sbuf *b = set_arr(w, key, ASN_GGUF_I32, v, n);
    for (size_t i = 0; b && i < n; i++)
        put_u32(b, (uint32_t)v[i]);
}

void asn_gguf_add_tensor(asn_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                         const int64_t *ne, const void *data)
{
    int be, bb;
    if (!name) {
        werr(w, "tensor name is NULL");
        return;
    }
    if (strlen(name) >= GGML_MAX_NAME) {
        werr(w, "tensor %s: name longer than %d bytes", name, GGML_MAX_NAME - 1);
        return;
    }
    for (size_t i = 0; i < w->n_t; i++) {
        if (!strcmp(w->t[i].name, name)) {
            werr(w, "tensor %s: added twice", name);
            return;
        }
    }
    if (n_dims < 1 || n_dims > 4 || !ne) {
        werr(w, "tensor %s: %u dimensions (must be 1 to 4)", name, n_dims);
        return;
    }
    if (asn_ttype_block(type, &be, &bb)) {
        werr(w, "tensor %s: unknown type %u", name, type);
        return;
    }
    int64_t dims[4] = {1, 1, 1, 1};
    uint64_t nb = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        dims[d] = ne[d];
        if (ne[d] < 0 || __builtin_mul_overflow(nb, (uint64_t)ne[d], &nb)) {
            werr(w, "tensor %s: bad dimension %u (%lld)", name, d, (long long)ne[d]);
            return;
        }
    }
    if (dims[0] % be) {
        werr(w, "tensor %s: ne[0] = %lld is not a multiple of the %s block size %d", name,
             (long long)dims[0], asn_ttype_name(type), be);
        return;
    }
    nb = nb / (uint64_t)be * (uint64_t)bb; /* nb / be is exact: ne[0] is a multiple of be */
    if (nb && !data) {
        werr(w, "tensor %s: NULL data", name);
        return;
    }
    asn_grow((void **)&w->t, &w->cap_t, w->n_t + 1, sizeof *w->t);
    wtensor *t = &w->t[w->n_t++];
    t->name = asn_xstrdup(name);
    t->type = type;
    t->n_dims = n_dims;
    memcpy(t->ne, dims, sizeof dims);
    t->nbytes = (size_t)nb;
    t->data = asn_xmalloc(t->nbytes);
    if (nb)
        memcpy(t->data, data, t->nbytes);
}

static int writer_alignment(const asn_gguf_writer *w, uint32_t *align, asn_err *e)
{
    *align = GGUF_DEFAULT_ALIGNMENT;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment"))
            continue;
        uint32_t a = w->kv[i].type == ASN_GGUF_U32 ? rd32((const uint8_t *)w->kv[i].val.buf) : 0;
        if (a == 0 || (a & (a - 1)))
            return asn_err_set(e, "general.alignment must be a u32 power of two");
        *align = a;
    }
    return 0;
}

static int pad(FILE *f, uint64_t *pos, uint32_t align)
{
    static const uint8_t zeros[256];
    uint64_t n = (align - *pos % align) % align;
    *pos += n;
    while (n) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        if (fwrite(zeros, 1, k, f) != k)
            return -1;
        n -= k;
    }
    return 0;
}

static int write_all(const asn_gguf_writer *w, FILE *f, uint32_t align)
{
    asn_sbuf h = ASN_SBUF_INIT;
    asn_sbuf_add(&h, "GGUF", 4);
    put_u32(&h, 3);
    put_u64(&h, w->n_t);
    put_u64(&h, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        put_str(&h, w->kv[i].key);
        put_u32(&h, w->kv[i].type);
        asn_sbuf_add(&h, w->kv[i].val.buf, w->kv[i].val.len);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(&h, t->name);
        put_u32(&h, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            put_u64(&h, (uint64_t)t->ne[d]);
        put_u32(&h, t->type);
        put_u64(&h, off);
        off += (t->nbytes + align - 1) / align * align;
    }
    uint64_t pos = h.len;
    int rc = fwrite(h.buf, 1, h.len, f) == h.len ? 0 : -1;
    asn_sbuf_release(&h);
    /* like ggml: the data section and every tensor padded to the alignment */
    if (rc || pad(f, &pos, align))
        return -1;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if (fwrite(t->data, 1, t->nbytes, f) != t->nbytes)
            return -1;
        pos += t->nbytes;
        if (pad(f, &pos, align))
            return -1;
    }
    return 0;
}

int asn_gguf_write(asn_gguf_writer *w, const char *path, asn_err *e)
{
    if (w->err[0])
        return asn_err_set(e, "%s: %s", path, w->err);
    uint32_t align;
    if (writer_alignment(w, &align, e))
        return asn_err_prefix(e, "%s", path);
    /* written beside the target and renamed, so that readers never see a
     * half-written file */
    size_t n = strlen(path) + 32;
    char *tmp = asn_xmalloc(n);
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        asn_err_set(e, "%s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    int rc = write_all(w, f, align);
    int err = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        err = errno;
    }
    if (rc) {
        unlink(tmp);
        asn_err_set(e, "%s: write failed: %s", path, strerror(err));
    }
    free(tmp);
    return rc;
}
