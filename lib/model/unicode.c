/* unicode.c — what the tokenizers need of Unicode: the class of each code
 * point (a flat table built once from the ranges of unicode_data.h, which
 * gen_unicode_data.py writes from the Unicode Character Database), the
 * lowercase and decomposition maps of WordPiece's normalizer, UTF-8
 * decoding and encoding with llama.cpp's tolerance for bad input, and the
 * GPT-2 byte-to-unicode alphabet of byte-level BPE. */
#include "tok_internal.h"

#include <pthread.h>
#include <stdlib.h>

#include "unicode_data.h"

#define N_CP 0x110000

const uint8_t *asn_ucd_table;
static uint8_t ucd_flat[N_CP];
static pthread_once_t ucd_once = PTHREAD_ONCE_INIT;

static void ucd_build(void)
{
    size_t nr = sizeof asn_ucd_ranges / sizeof *asn_ucd_ranges;
    for (size_t i = 0; i < nr; i++) {
        uint32_t lo = asn_ucd_ranges[i] >> 8;
        uint32_t hi = i + 1 < nr ? asn_ucd_ranges[i + 1] >> 8 : N_CP;
        uint8_t c = (uint8_t)(asn_ucd_ranges[i] & ASN_UC_CAT_MASK);
        for (uint32_t cp = lo; cp < hi && cp < N_CP; cp++)
            ucd_flat[cp] = c;
    }
    for (size_t i = 0; i < sizeof asn_ucd_space / sizeof *asn_ucd_space; i++)
        ucd_flat[asn_ucd_space[i]] |= ASN_UC_SPACE;
    asn_ucd_table = ucd_flat;
}

void asn_ucd_init(void) { pthread_once(&ucd_once, ucd_build); }

uint32_t asn_ucd_tolower(uint32_t cp)
{
    size_t lo = 0, hi = sizeof asn_ucd_lower / sizeof *asn_ucd_lower;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (asn_ucd_lower[mid][0] == cp)
            return asn_ucd_lower[mid][1];
        if (asn_ucd_lower[mid][0] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return cp;
}

uint32_t asn_ucd_nfd_first(uint32_t cp)
{
    size_t lo = 0, hi = sizeof asn_ucd_nfd / sizeof *asn_ucd_nfd;
    while (lo < hi) { /* the last range starting at or before cp */
        size_t mid = (lo + hi) / 2;
        if (asn_ucd_nfd[mid][0] <= cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && cp <= asn_ucd_nfd[lo - 1][1] ? asn_ucd_nfd[lo - 1][2] : cp;
}

/* ------------------------------------------------------------------ UTF-8 */

static inline int cont(unsigned char c) { return (c & 0xC0) == 0x80; }

size_t asn_utf8_decode(const char *str, size_t n, uint32_t *out)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, k = 0;
    while (i < n) {
        unsigned char c = s[i];
        uint32_t cp;
        size_t len;
        if (c < 0x80) {
            cp = c, len = 1;
        } else if (!(c & 0x40)) {
            goto bad; /* a continuation byte cannot start a sequence */
        } else if (!(c & 0x20)) {
            if (i + 1 >= n || !cont(s[i + 1]))
                goto bad;
            cp = ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F), len = 2;
        } else if (!(c & 0x10)) {
            if (i + 2 >= n || !cont(s[i + 1]) || !cont(s[i + 2]))
                goto bad;
            cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
            len = 3;
        } else if (!(c & 0x08)) {
            if (i + 3 >= n || !cont(s[i + 1]) || !cont(s[i + 2]) || !cont(s[i + 3]))
                goto bad;
            cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
                 ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
            if (cp > 0x10FFFF)
                goto bad;
            len = 4;
        } else {
            goto bad;
        }
        out[k++] = cp;
        i += len;
        continue;
    bad:
        out[k++] = 0xFFFD;
        i++;
    }
    return k;
}

int asn_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | ((cp >> 18) & 0x07));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ------------------------------------------------- byte-level alphabet */

/* Printable Latin-1 bytes stand for themselves; the other 68 (controls,
 * space, DEL, 0x80-0xA0, soft hyphen) map in byte order to U+0100.. */
static int printable(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

uint32_t asn_byte_cp(uint8_t b)
{
    if (printable(b))
        return b;
    uint32_t k = 0;
    for (unsigned x = 0; x < b; x++)
        k += !printable(x);
    return 0x100 + k;
}

int asn_cp_byte(uint32_t cp)
{
    if (cp < 0x100)
        return printable(cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68)
        return -1;
    uint32_t k = cp - 0x100;
    for (unsigned b = 0; b < 256; b++)
        if (!printable(b) && k-- == 0)
            return (int)b;
    return -1;
}
