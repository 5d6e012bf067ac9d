/* grammar/schema_internal.h — what the JSON Schema converter's files
 * share: schema.c (subschemas to rules), schema_norm.c (the rewriting of
 * each subschema into the forms schema.c converts) and schema_ptr.c (the
 * keyword lists, JSON pointers, errors and $ref resolution both use).
 * Not a public API. */
#ifndef ASN_GRAMMAR_SCHEMA_INTERNAL_H
#define ASN_GRAMMAR_SCHEMA_INTERNAL_H

#include "asn/json.h"
#include "asn/sbuf.h"
#include "grammar_internal.h"

/* 2^8 = 256 member-set rules at most per object. */
enum { MAX_ANY_ORDER = 8 };
typedef struct named {
    char *key;
    char name[24];
} named;

typedef struct conv {
    const json_t *root;
    int ws;
    asn_sbuf rules;
    int n_rules;
    named *refs, *bodies;
    int n_refs, n_bodies;
    unsigned used; /* primitive rules emitted */
    int depth;     /* subschemas being converted (nesting) */
    int old_ref;   /* $schema is draft 3 to 7: keywords beside $ref are ignored */
    int wide_exp;  /* bounded numbers also take exponent forms of the right sign (a superset) */
    int approx;    /* set when the grammar accepts more than the schema (wide_exp used) */
    asn_err *e;
} conv;

/* Set by gs_normalize (never read from a schema): anyOf / oneOf whose
 * branches only list required names, as a list of those lists; object_body
 * makes them conditions on the set of names present. */
#define REQ_ANY "\x01required_any"
#define REQ_ONE "\x01required_one"

/* schema_ptr.c: the keywords schema.c converts, and the annotations
 * both ignore. */
extern const char *const GS_ANNOTATIONS[], *const GS_KNOWN[];

/* Sets c's error to "PTR: " and fmt with arg (one %s); returns -1. */
int gs_serr(conv *c, const char *ptr, const char *fmt, const char *arg);
/* out = ptr + "/" + key (escaped as a JSON pointer), or + "/" + i. */
void gs_ptr_child(char *out, size_t cap, const char *ptr, const char *key);
void gs_ptr_index(char *out, size_t cap, const char *ptr, size_t i);
/* *out = the subschema a local $ref names; -1 with the error set if none. */
int gs_resolve_ref(conv *c, const char *ref, const char *ptr, const json_t **out);
/* s rewritten into the keywords schema.c converts (a new reference; see
 * schema_norm.c), or NULL with the error set; depth: the merges on the
 * way. */
json_t *gs_normalize(conv *c, const json_t *s, const char *ptr, int depth);

#endif
