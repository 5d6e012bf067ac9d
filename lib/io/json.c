/* json.c — JSON output with Python's number layout, canonical digests, the
 * JSONL reader and typed field access. Parsing itself is jansson's. */
#include "asn/json.h"
#include "asn/sbuf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- numbers */

/* Lays out a decimal significand `digits` (no dot) with exponent `e10` (the
 * value is 0.d1d2... * 10^(e10+1), i.e. d1.d2... * 10^e10) as Python's repr:
 * positional for -4 <= e10 < 16, otherwise d.ddde[+-]XX. */
static void python_layout(char *buf, int neg, const char *digits, int e10)
{
    int nd = (int)strlen(digits);
    char *p = buf;
    if (neg)
        *p++ = '-';
    if (e10 >= -4 && e10 < 16) {
        if (e10 < 0) {
            p += sprintf(p, "0.");
            for (int i = 0; i < -e10 - 1; i++)
                *p++ = '0';
            p += sprintf(p, "%s", digits);
        } else if (nd <= e10 + 1) {
            p += sprintf(p, "%s", digits);
            for (int i = nd; i < e10 + 1; i++)
                *p++ = '0';
            p += sprintf(p, ".0");
        } else {
            memcpy(p, digits, (size_t)e10 + 1);
            p += e10 + 1;
            *p++ = '.';
            p += sprintf(p, "%s", digits + e10 + 1);
        }
        *p = 0;
        return;
    }
    *p++ = digits[0];
    if (nd > 1) {
        *p++ = '.';
        p += sprintf(p, "%s", digits + 1);
    }
    sprintf(p, "e%c%02d", e10 < 0 ? '-' : '+', e10 < 0 ? -e10 : e10);
}

/* Splits "%.*e" output ("-1.2345e-05") into sign, digit string and exponent,
 * dropping trailing zeros of the significand. */
static void split_e(const char *s, int *neg, char *digits, int *e10)
{
    *neg = *s == '-';
    if (*neg)
        s++;
    int n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.')
            digits[n++] = *s;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = 0;
    *e10 = atoi(s + 1);
}

static void shortest(char *buf, double d, int is_float)
{
    if (d == 0) {
        strcpy(buf, signbit(d) ? "-0.0" : "0.0");
        return;
    }
    char tmp[40], digits[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec, d);
        int ok = is_float ? strtof(tmp, NULL) == (float)d : strtod(tmp, NULL) == d;
        if (ok)
            break;
    }
    int neg, e10;
    split_e(tmp, &neg, digits, &e10);
    python_layout(buf, neg, digits, e10);
}

void asn_fmt_double(char *buf, double d) { shortest(buf, d, 0); }
void asn_fmt_float(char *buf, float f) { shortest(buf, f, 1); }

json_t *asn_json_f32(float f)
{
    if (!isfinite(f))
        return json_null();
    char buf[40];
    asn_fmt_float(buf, f);
    /* The double nearest the short decimal prints back as that decimal. */
    return json_real(strtod(buf, NULL));
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid; *bad
 * gets the length of the maximal invalid prefix (the bytes one U+FFFD
 * replaces, per the Unicode "best practice" Python follows). */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    *bad = 1;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    for (size_t i = 1; i <= need; i++) {
        unsigned char b = i < n ? s[i] : 0;
        if (i >= n || b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
            *bad = i;
            return 0;
        }
    }
    return need + 1;
}

json_t *asn_json_text(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    char *out = asn_xmalloc(3 * n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t bad, k = utf8_seq(u + i, n - i, &bad);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i += bad;
        }
    }
    json_t *v = json_stringn(out, o);
    free(out);
    return v;
}

/* --------------------------------------------------------------- output */

static void put_string(asn_sbuf *b, const char *s, size_t n)
{
    asn_sbuf_add(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(u, sizeof u, "\\u%04x", c);
                esc = u;
            }
        }
        if (esc) {
            asn_sbuf_add(b, s + i - run, run);
            run = 0;
            asn_sbuf_adds(b, esc);
        } else {
            run++;
        }
    }
    asn_sbuf_add(b, s + n - run, run);
    asn_sbuf_add(b, "\"", 1);
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void dump(asn_sbuf *b, const json_t *v, int flags)
{
    char num[40];
    switch (json_typeof(v)) {
    case JSON_NULL: asn_sbuf_adds(b, "null"); break;
    case JSON_TRUE: asn_sbuf_adds(b, "true"); break;
    case JSON_FALSE: asn_sbuf_adds(b, "false"); break;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        asn_sbuf_adds(b, num);
        break;
    case JSON_REAL: {
        double d = json_real_value(v);
        if (!isfinite(d)) {
            asn_sbuf_adds(b, "null");
            break;
        }
        asn_fmt_double(num, d);
        asn_sbuf_adds(b, num);
        break;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_ARRAY: {
        asn_sbuf_add(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                asn_sbuf_add(b, ",", 1);
            dump(b, json_array_get(v, i), flags);
        }
        asn_sbuf_add(b, "]", 1);
        break;
    }
    case JSON_OBJECT: {
        size_t n = json_object_size(v), i = 0;
        const char **keys = asn_xmalloc((n ? n : 1) * sizeof *keys);
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) keys[i++] = k;
        if (flags & ASN_JSON_SORT_KEYS)
            qsort(keys, n, sizeof *keys, cmp_keys);
        asn_sbuf_add(b, "{", 1);
        for (i = 0; i < n; i++) {
            if (i)
                asn_sbuf_add(b, ",", 1);
            put_string(b, keys[i], strlen(keys[i]));
            asn_sbuf_add(b, ":", 1);
            dump(b, json_object_get(v, keys[i]), flags);
        }
        asn_sbuf_add(b, "}", 1);
        free(keys);
        break;
    }
    }
}

char *asn_json_dumps(const json_t *v, int flags)
{
    asn_sbuf b = {0};
    dump(&b, v, flags);
    return b.buf;
}

int asn_jsonl_write(FILE *f, const json_t *v)
{
    char *s = asn_json_dumps(v, 0);
    size_t n = strlen(s);
    s[n] = '\n'; /* the buffer always has room for the terminator */
    int ok = fwrite(s, 1, n + 1, f) == n + 1;
    free(s);
    return ok ? 0 : -1;
}

void asn_json_digest(const json_t *v, int nhex, char *out)
{
    char *s = asn_json_dumps(v, ASN_JSON_SORT_KEYS);
    char hex[65];
    asn_sha256_hex(s, strlen(s), hex);
    free(s);
    if (nhex > 64)
        nhex = 64;
    memcpy(out, hex, (size_t)nhex);
    out[nhex] = 0;
}

/* ---------------------------------------------------------------- input */

struct asn_jsonl {
    FILE *f;
    int own;
    char *path;
    char *line;
    size_t cap;
    long lineno, rec_line;
    long long pos, rec_pos; /* byte offsets: the next line's, the last record's */
    size_t rec_len;         /* the last record's line, newline included */
};

asn_jsonl *asn_jsonl_over(FILE *f, const char *name)
{
    asn_jsonl *r = asn_xcalloc(1, sizeof *r);
    r->f = f;
    r->path = asn_xstrdup(name);
    return r;
}

long long asn_jsonl_offset(const asn_jsonl *r, size_t *len)
{
    *len = r->rec_len;
    return r->rec_pos;
}

json_t *asn_jsonl_parse_line(const char *text, size_t len)
{
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) /* UTF-8 BOM */
        text += 3, len -= 3;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    return json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
}

asn_jsonl *asn_jsonl_open(const char *path, asn_err *e)
{
    FILE *f = stdin;
    int own = 0;
    if (strcmp(path, "-")) {
        f = fopen(path, "r");
        if (!f) {
            asn_err_set(e, "%s: %s", path, strerror(errno));
            return NULL;
        }
        own = 1;
    }
    asn_jsonl *r = asn_xcalloc(1, sizeof *r);
    r->f = f;
    r->own = own;
    r->path = asn_xstrdup(own ? path : "<stdin>");
    return r;
}

const char *asn_jsonl_path(const asn_jsonl *r) { return r->path; }
long asn_jsonl_lineno(const asn_jsonl *r) { return r->rec_line; }

static int keep_big_integers;

void asn_jsonl_keep_big_integers(int on) { keep_big_integers = on; }

/* Whether the integer literal p[0..n) (an optional '-', then digits) lies
 * outside json_int_t (64 bits). */
static int int_too_big(const char *p, size_t n)
{
    int neg = *p == '-';
    p += neg, n -= (size_t)neg;
    const char *lim = neg ? "9223372036854775808" : "9223372036854775807";
    return n > 19 || (n == 19 && memcmp(p, lim, 19) > 0);
}

/* text with every integer literal beyond 64 bits (outside strings) written
 * as {"ASN_JSON_BIG_INTEGER": "digits"}; NULL when there is none. */
static char *mark_big_integers(const char *text, size_t len, size_t *out_len)
{
    asn_sbuf b = {0};
    size_t from = 0;
    int found = 0;
    for (size_t i = 0; i < len;) {
        if (text[i] == '"') { /* skip the string */
            for (i++; i < len && text[i] != '"'; i++)
                i += text[i] == '\\';
            i++;
            continue;
        }
        if (text[i] != '-' && !(text[i] >= '0' && text[i] <= '9')) {
            i++;
            continue;
        }
        size_t j = i + (text[i] == '-');
        while (j < len && text[j] >= '0' && text[j] <= '9')
            j++;
        int integer = j == len || !strchr(".eE", text[j]);
        while (j < len && strchr("0123456789.eE+-", text[j]))
            j++;
        if (integer && int_too_big(text + i, j - i)) {
            asn_sbuf_add(&b, text + from, i - from);
            asn_sbuf_addf(&b, "{\"%s\":\"%.*s\"}", ASN_JSON_BIG_INTEGER, (int)(j - i), text + i);
            from = j;
            found = 1;
        }
        i = j;
    }
    if (!found) {
        asn_sbuf_release(&b);
        return NULL;
    }
    asn_sbuf_add(&b, text + from, len - from);
    *out_len = b.len;
    return b.buf;
}

int asn_jsonl_next(asn_jsonl *r, json_t **rec, asn_err *e)
{
    *rec = NULL;
    for (;;) {
        ssize_t n = getline(&r->line, &r->cap, r->f);
        if (n < 0) {
            if (ferror(r->f)) {
                asn_err_set(e, "%s:%ld: read error: %s", r->path, r->lineno + 1, strerror(errno));
                return -2;
            }
            return 0;
        }
        r->lineno++;
        r->rec_pos = r->pos;
        r->rec_len = (size_t)n;
        r->pos += n;
        size_t len = (size_t)n;
        char *text = r->line;
        if (r->lineno == 1 && len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) /* UTF-8 BOM */
            text += 3, len -= 3;
        while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
            len--;
        size_t i = 0;
        while (i < len && (text[i] == ' ' || text[i] == '\t'))
            i++;
        if (i == len)
            continue; /* blank line */
        r->rec_line = r->lineno;
        json_error_t je;
        json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
        if (!v && keep_big_integers && (strstr(je.text, "too big integer") || strstr(je.text, "too big negative integer"))) {
            size_t ml;
            char *marked = mark_big_integers(text, len, &ml);
            if (marked)
                v = json_loadb(marked, ml, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
            free(marked);
        }
        if (!v)
            return asn_err_set(e, "%s:%ld: invalid JSON at column %d: %s", r->path, r->lineno,
                               je.column, je.text);
        if (!json_is_object(v)) {
            json_decref(v);
            return asn_err_set(e, "%s:%ld: record must be a JSON object", r->path, r->lineno);
        }
        *rec = v;
        return 1;
    }
}

void asn_jsonl_close(asn_jsonl *r)
{
    if (!r)
        return;
    if (r->own)
        fclose(r->f);
    free(r->line);
    free(r->path);
    free(r);
}

/* ---------------------------------------------------- typed field access */

const char *asn_json_type_name(const json_t *v)
{
    if (!v)
        return "missing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

int asn_json_number(const json_t *v, double *out)
{
    if (json_is_integer(v))
        *out = (double)json_integer_value(v);
    else if (json_is_real(v))
        *out = json_real_value(v);
    else
        return -1;
    return 0;
}

static int absent(const json_t *obj, const char *key, int required, asn_err *e, const char *what)
{
    if (required)
        return asn_err_set(e, "field \"%s\" is missing (%s expected)", key, what);
    (void)obj;
    return 0;
}

int asn_get_string(const json_t *obj, const char *key, int required, const char **out, asn_err *e)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return absent(obj, key, required, e, "a string");
    if (!json_is_string(v))
        return asn_err_set(e, "field \"%s\" must be a string, not %s", key, asn_json_type_name(v));
    *out = json_string_value(v);
    return 0;
}

int asn_get_int(const json_t *obj, const char *key, int required, long long *out, asn_err *e)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return absent(obj, key, required, e, "an integer");
    if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
        fabs(json_real_value(v)) < 9e15) {
        *out = (long long)json_real_value(v);
        return 0;
    }
    if (!json_is_integer(v))
        return asn_err_set(e, "field \"%s\" must be an integer, not %s", key, asn_json_type_name(v));
    *out = json_integer_value(v);
    return 0;
}

int asn_get_number(const json_t *obj, const char *key, int required, double *out, asn_err *e)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return absent(obj, key, required, e, "a number");
    if (asn_json_number(v, out))
        return asn_err_set(e, "field \"%s\" must be a number, not %s", key, asn_json_type_name(v));
    return 0;
}
