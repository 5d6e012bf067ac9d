/* asn/json.h — JSON values (jansson) in and out: JSONL streams that report
 * the line of a bad record, a writer whose numbers print the way Python
 * prints them, the canonical form that heuristic ids are hashed from, and
 * helpers that read typed fields with errors naming the field. */
#ifndef ASN_JSON_H
#define ASN_JSON_H

#include <jansson.h>
#include <stdio.h>

#include "asn/core.h"

/* ------------------------------------------------------------- numbers */

/* Shortest decimal that round-trips the double, laid out as Python's repr
 * (and json.dumps): "0.1", "1.0", "1e-05", "1.5e+16". buf holds 32 bytes. */
void asn_fmt_double(char *buf, double d);
/* Shortest decimal that round-trips the float32 (strtof), same layout. */
void asn_fmt_float(char *buf, float f);
/* A JSON real that prints as the float's shortest round-trip decimal and
 * reads back (strtof) as the same float. -inf, +inf and NaN become null. */
json_t *asn_json_f32(float f);

/* A JSON string of n bytes of text that may not be valid UTF-8 (model
 * output can end inside a character): each maximal invalid subsequence
 * becomes U+FFFD, as Python's bytes.decode("utf-8", "replace") does. */
json_t *asn_json_text(const char *s, size_t n);

/* --------------------------------------------------------------- output */

enum {
    ASN_JSON_SORT_KEYS = 1, /* canonical form: keys sorted by UTF-8 bytes */
};

/* Compact JSON (no spaces), object keys in insertion order unless sorted,
 * numbers as asn_fmt_double, non-ASCII kept as UTF-8. Caller frees. */
char *asn_json_dumps(const json_t *v, int flags);
/* Writes v and a newline to f: one JSONL record. Returns -1 on I/O error. */
int asn_jsonl_write(FILE *f, const json_t *v);

/* First `nhex` hex digits of SHA-256 of the canonical JSON of v (sorted
 * keys, compact, Python number layout). out holds nhex + 1 bytes. */
void asn_json_digest(const json_t *v, int nhex, char *out);

/* ---------------------------------------------------------------- input */

/* A JSONL stream: one JSON object per line; blank lines are skipped. */
typedef struct asn_jsonl asn_jsonl;

/* path "-" reads stdin. NULL (with e set) if the file cannot be opened. */
asn_jsonl *asn_jsonl_open(const char *path, asn_err *e);
/* Reads the next record. Returns 1 with *rec (a new reference), 0 at end of
 * input, -1 with e = "PATH:LINE: what is wrong" for a malformed line or a
 * line that is not an object: the stream may go on after it (skip-invalid);
 * -2 when the stream itself failed (read error): stop. A UTF-8 byte-order
 * mark at the start of the file is skipped. */
int asn_jsonl_next(asn_jsonl *r, json_t **rec, asn_err *e);
/* From now on (the whole process), an integer literal beyond 64 bits in a
 * record (jansson's json_int_t cannot hold it) no longer makes the line
 * invalid: it is read as the object {ASN_JSON_BIG_INTEGER: "its digits"},
 * for the program to refuse where it meets one (constrain: a schema's
 * bound of 2^64 - 1 refuses that schema, not the run). */
#define ASN_JSON_BIG_INTEGER "$asn_big_integer"
void asn_jsonl_keep_big_integers(int on);
const char *asn_jsonl_path(const asn_jsonl *r); /* "<stdin>" for "-" */
long asn_jsonl_lineno(const asn_jsonl *r);      /* line of the last record read */
void asn_jsonl_close(asn_jsonl *r);
/* A reader over an open stream (not closed by asn_jsonl_close), named
 * `name` in messages. */
asn_jsonl *asn_jsonl_over(FILE *f, const char *name);
/* Where the last record's line lies in the stream: its byte offset, and in
 * *len its length (line end included). */
long long asn_jsonl_offset(const asn_jsonl *r, size_t *len);
/* A record's line (as asn_jsonl_offset locates it) parsed again, as
 * asn_jsonl_next parses it; NULL if it is not JSON. */
json_t *asn_jsonl_parse_line(const char *text, size_t len);

/* ---------------------------------------------------- typed field access */

/* Each reads field `key` of object `obj`. Absent (or null, when nullable)
 * leaves *out unchanged and returns 0 when optional; otherwise the error is
 * 'field "key" must be ...'. Returns 0 or -1. */
int asn_get_string(const json_t *obj, const char *key, int required, const char **out, asn_err *e);
int asn_get_int(const json_t *obj, const char *key, int required, long long *out, asn_err *e);
int asn_get_number(const json_t *obj, const char *key, int required, double *out, asn_err *e);

/* A JSON number (integer or real) as double; -1 if v is not a number. */
int asn_json_number(const json_t *v, double *out);
/* Short name of a value's type for messages ("string", "array", ...). */
const char *asn_json_type_name(const json_t *v);

#endif
