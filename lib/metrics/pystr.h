/* metrics/pystr.h — pystr.c's UTF-8 and Python str helpers, shared by
 * ifeval.c, langdetect.c and verify_math.c. Not a public API
 * (asn/verifiers.h has the asn_py_* functions). */
#ifndef ASN_METRICS_PYSTR_H
#define ASN_METRICS_PYSTR_H

#include <stddef.h>
#include <stdint.h>

/* A copy of n bytes of s, NUL-terminated. */
char *asn__xstrndup(const char *s, size_t n);
/* The code point at s (n > 0 bytes left), *len its bytes; a malformed
 * byte decodes as itself. */
uint32_t asn__u8dec(const char *s, size_t n, size_t *len);
/* cp as UTF-8 at out (up to 4 bytes); the bytes written. */
size_t asn__u8enc(uint32_t cp, char *out);
/* Code points in s (Python's len). */
size_t asn__u8count(const char *s);
/* str.isspace() of one code point. */
int asn__py_space(uint32_t c);
/* Case mapping and tests of one code point (C.UTF-8). */
uint32_t asn__cp_lower(uint32_t c);
uint32_t asn__cp_upper(uint32_t c);
int asn__cp_isupper(uint32_t c);
int asn__cp_islower(uint32_t c);
int asn__cp_isalpha(uint32_t c);
/* [*b, *e): the bytes of s (n) without leading and trailing white space. */
void asn__strip_span(const char *s, size_t n, size_t *b, size_t *e);
/* s.split(): f(token, len, arg) for each token between white-space runs. */
void asn__py_split_ws(const char *s, void (*f)(const char *, size_t, void *), void *arg);
int asn__starts_with(const char *s, const char *p);
int asn__ends_with(const char *s, const char *p);

#endif
