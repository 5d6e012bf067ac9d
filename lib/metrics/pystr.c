/* pystr.c — Python's str semantics over UTF-8, as the instruction checks
 * (ifeval.c) and the language detection (langdetect.c) need them: code
 * points, str.isspace's white space, case mapping and tests through
 * glibc's C.UTF-8 locale (never the process locale), strip and split.
 * The asn_py_* functions are public (asn/verifiers.h); the rest is
 * pystr.h's, for lib/metrics only. */
#include "asn/verifiers.h"
#include "metrics/pystr.h"

#include <ctype.h>
#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

char *asn__xstrndup(const char *s, size_t n)
{
    char *r = asn_xmalloc(n + 1);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

/* Decodes one code point at s (n > 0 bytes left); *len = bytes used. A
 * malformed byte decodes as itself (never happens on jansson's strings). */
uint32_t asn__u8dec(const char *s, size_t n, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t k = u[0] < 0x80 ? 1 : u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (k == 0 || k > n) {
        *len = 1;
        return u[0];
    }
    for (size_t i = 1; i < k; i++)
        if ((u[i] & 0xC0) != 0x80) {
            *len = 1;
            return u[0];
        }
    *len = k;
    if (k == 1)
        return u[0];
    if (k == 2)
        return ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    if (k == 3)
        return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) | ((uint32_t)(u[2] & 0x3F) << 6) |
           (u[3] & 0x3F);
}

size_t asn__u8enc(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Number of code points (Python's len). */
size_t asn__u8count(const char *s)
{
    size_t k = 0, n = strlen(s), l;
    for (size_t i = 0; i < n; i += l) {
        asn__u8dec(s + i, n - i, &l);
        k++;
    }
    return k;
}

/* ------------------------------------------------ Python str semantics */

/* str.isspace(): the characters Python strips and splits on. */
int asn__py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

/* Case mapping from glibc's built-in C.UTF-8 locale, through a locale
 * object so the process locale is never touched. */
static locale_t utf8_loc;
static pthread_once_t loc_once = PTHREAD_ONCE_INIT;
static void loc_init(void) { utf8_loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0); }

uint32_t asn__cp_lower(uint32_t c)
{
    if (c < 0x80)
        return (uint32_t)tolower((int)c);
    pthread_once(&loc_once, loc_init);
    return utf8_loc ? (uint32_t)towlower_l((wint_t)c, utf8_loc) : c;
}
uint32_t asn__cp_upper(uint32_t c)
{
    if (c < 0x80)
        return (uint32_t)toupper((int)c);
    pthread_once(&loc_once, loc_init);
    return utf8_loc ? (uint32_t)towupper_l((wint_t)c, utf8_loc) : c;
}
int asn__cp_isupper(uint32_t c)
{
    if (c < 0x80)
        return c >= 'A' && c <= 'Z';
    pthread_once(&loc_once, loc_init);
    return utf8_loc && iswupper_l((wint_t)c, utf8_loc);
}
int asn__cp_islower(uint32_t c)
{
    if (c < 0x80)
        return c >= 'a' && c <= 'z';
    pthread_once(&loc_once, loc_init);
    return utf8_loc && iswlower_l((wint_t)c, utf8_loc);
}
int asn__cp_isalpha(uint32_t c)
{
    if (c < 0x80)
        return isalpha((int)c);
    pthread_once(&loc_once, loc_init);
    return utf8_loc && iswalpha_l((wint_t)c, utf8_loc);
}

/* Byte span of s without leading/trailing Python white space. */
void asn__strip_span(const char *s, size_t n, size_t *b, size_t *e)
{
    size_t i = 0, l;
    while (i < n) {
        uint32_t c = asn__u8dec(s + i, n - i, &l);
        if (!asn__py_space(c))
            break;
        i += l;
    }
    *b = i;
    size_t end = n;
    while (end > i) { /* back over one character at a time */
        size_t k = end - 1;
        while (k > i && ((unsigned char)s[k] & 0xC0) == 0x80 && end - k < 4)
            k--;
        uint32_t c = asn__u8dec(s + k, end - k, &l);
        if (k + l != end) { /* a stray continuation byte: not white space */
            break;
        }
        if (!asn__py_space(c))
            break;
        end = k;
    }
    *e = end;
}

char *asn_py_strip(const char *s)
{
    size_t b, e;
    asn__strip_span(s, strlen(s), &b, &e);
    return asn__xstrndup(s + b, e - b);
}

/* A case mapping changes a character's UTF-8 length by at most one byte
 * up (U+0250 -> U+2C6F is 2 -> 3), so twice the input always fits. */
static char *map_case(const char *s, uint32_t (*f)(uint32_t))
{
    size_t n = strlen(s), l, k = 0;
    char *o = asn_xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i += l) {
        unsigned char c0 = (unsigned char)s[i];
        if (c0 < 0x80) {
            o[k++] = (char)f(c0);
            l = 1;
        } else {
            k += asn__u8enc(f(asn__u8dec(s + i, n - i, &l)), o + k);
        }
    }
    o[k] = 0;
    return o;
}
char *asn_py_lower(const char *s) { return map_case(s, asn__cp_lower); }
char *asn_py_upper(const char *s) { return map_case(s, asn__cp_upper); }

static int case_test(const char *s, int (*want)(uint32_t), int (*other)(uint32_t))
{
    size_t n = strlen(s), l;
    int cased = 0;
    for (size_t i = 0; i < n; i += l) {
        uint32_t c = asn__u8dec(s + i, n - i, &l);
        if (other(c))
            return 0;
        if (want(c))
            cased = 1;
    }
    return cased;
}
int asn_py_isupper(const char *s) { return case_test(s, asn__cp_isupper, asn__cp_islower); }
int asn_py_islower(const char *s) { return case_test(s, asn__cp_islower, asn__cp_isupper); }

/* Python's s.split() with no argument: tokens between white-space runs.
 * Calls f(token, len, arg) for each. */
void asn__py_split_ws(const char *s, void (*f)(const char *, size_t, void *), void *arg)
{
    size_t n = strlen(s), i = 0, l, start = 0;
    int in = 0;
    while (i < n) {
        uint32_t c = asn__u8dec(s + i, n - i, &l);
        if (asn__py_space(c)) {
            if (in)
                f(s + start, i - start, arg);
            in = 0;
        } else if (!in) {
            in = 1;
            start = i;
        }
        i += l;
    }
    if (in)
        f(s + start, n - start, arg);
}

int asn__starts_with(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }
int asn__ends_with(const char *s, const char *p)
{
    size_t n = strlen(s), m = strlen(p);
    return n >= m && !memcmp(s + n - m, p, m);
}
