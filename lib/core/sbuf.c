/* sbuf.c — the growable byte string (asn/sbuf.h). */
#include "asn/sbuf.h"

#include "asn/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void asn_sbuf_init(asn_sbuf *b, size_t hint)
{
    b->buf = NULL;
    b->len = b->alloc = 0;
    if (hint)
        asn_sbuf_grow(b, hint);
}

void asn_sbuf_grow(asn_sbuf *b, size_t extra)
{
    asn_grow((void **)&b->buf, &b->alloc, b->len + extra + 1, 1);
    b->buf[b->len] = 0;
}

void asn_sbuf_add(asn_sbuf *b, const void *data, size_t n)
{
    asn_sbuf_grow(b, n);
    if (n)
        memcpy(b->buf + b->len, data, n);
    b->len += n;
    b->buf[b->len] = 0;
}

void asn_sbuf_adds(asn_sbuf *b, const char *s) { asn_sbuf_add(b, s, strlen(s)); }

void asn_sbuf_addc(asn_sbuf *b, char c) { asn_sbuf_add(b, &c, 1); }

void asn_sbuf_addf(asn_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    asn_sbuf_grow(b, 64);
    va_start(ap, fmt);
    int n = vsnprintf(b->buf + b->len, b->alloc - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->buf[b->len] = 0;
        return;
    }
    if ((size_t)n >= b->alloc - b->len) {
        asn_sbuf_grow(b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b->buf + b->len, b->alloc - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

const char *asn_sbuf_str(const asn_sbuf *b) { return b->buf ? b->buf : ""; }

void asn_sbuf_reset(asn_sbuf *b)
{
    b->len = 0;
    if (b->buf)
        b->buf[0] = 0;
}

char *asn_sbuf_detach(asn_sbuf *b, size_t *len)
{
    char *s = b->buf ? b->buf : asn_xstrdup("");
    if (len)
        *len = b->len;
    b->buf = NULL;
    b->len = b->alloc = 0;
    return s;
}

void asn_sbuf_release(asn_sbuf *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = b->alloc = 0;
}
