/* gtext.h — GBNF spelling (into an asn_sbuf) shared by the converters
 * (regex.c, schema.c). */
#ifndef ASN_GTEXT_H
#define ASN_GTEXT_H

#include "asn/sbuf.h"

#include <stddef.h>
#include <stdint.h>

/* One code point as GBNF writes it inside "..." or [...]: printable ASCII
 * letters and digits as they are, everything else escaped. */
void sb_gchar(asn_sbuf *b, uint32_t c);
/* Bytes as a GBNF literal "..." (each byte of a UTF-8 sequence is
 * decoded back to its code point when valid). */
void sb_gliteral(asn_sbuf *b, const char *s, size_t n);
/* A class of code points (sorted disjoint ranges, pairs) as [...]; an empty
 * class is written as a class that matches nothing. */
void sb_gclass(asn_sbuf *b, const uint32_t *r, int n);

/* A class of code points (sorted disjoint ranges, pairs) as the contents
 * of a JSON string write one of them: raw, or escaped where JSON requires. */
void sb_json_class(asn_sbuf *b, const uint32_t *r, int n);

/* A regular expression (regex.c's dialect) as one GBNF expression
 * appended to b, for a whole text (json = 0) or for the contents of a JSON
 * string (json = 1: quotes, backslashes and control characters written as
 * JSON escapes). *anchors (may be NULL) gets 1 for a leading ^ and 2 for a
 * trailing $; with json, a pattern that has them beside a | outside groups
 * is refused (its automaton, dfa.c, can say it). Returns 0, or -1 with e
 * set ("offset N: ..."). */
struct asn_err;
int asn_regex_expr(const char *pattern, int json, asn_sbuf *b, int *anchors, struct asn_err *e);

#endif
