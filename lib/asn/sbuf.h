/* asn/sbuf.h — the growable byte string every module builds text in (as
 * git's strbuf). buf is NUL-terminated after the first add (the NUL not
 * counted in len); a zeroed asn_sbuf (ASN_SBUF_INIT or {0}) is empty, with
 * buf NULL. Allocation cannot fail (asn_xmalloc). */
#ifndef ASN_SBUF_H
#define ASN_SBUF_H

#include <stddef.h>

typedef struct asn_sbuf {
    char *buf;
    size_t len, alloc;
} asn_sbuf;

#define ASN_SBUF_INIT {NULL, 0, 0}

/* Empty, with room for hint bytes (0: allocates nothing). */
void asn_sbuf_init(asn_sbuf *b, size_t hint);
/* Room for extra more bytes (and the NUL) without reallocating. */
void asn_sbuf_grow(asn_sbuf *b, size_t extra);
void asn_sbuf_add(asn_sbuf *b, const void *data, size_t n);
void asn_sbuf_adds(asn_sbuf *b, const char *s);
void asn_sbuf_addc(asn_sbuf *b, char c);
void asn_sbuf_addf(asn_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text so far, "" when nothing was added. */
const char *asn_sbuf_str(const asn_sbuf *b);
/* Empties it, keeping the allocation. */
void asn_sbuf_reset(asn_sbuf *b);
/* The text (a new string, "" when nothing was added; *len may be NULL) to
 * free with free(); b is left empty. */
char *asn_sbuf_detach(asn_sbuf *b, size_t *len);
/* Frees the text; b is left empty. */
void asn_sbuf_release(asn_sbuf *b);

#endif
