/* grammar_internal.h — what the files of lib/grammar share: the compiled
 * byte grammar, the stack walker (stacks as linked nodes in an arena), and
 * a small hash map keyed by word strings. */
#ifndef ASN_GRAMMAR_INTERNAL_H
#define ASN_GRAMMAR_INTERNAL_H

#include <stdint.h>

#include "asn/grammar.h"
#include "asn/sbuf.h"

/* Element kinds of the flattened grammar. */
enum { E_END = 0, E_BYTES = 1, E_REF = 2 };

typedef struct gelem {
    uint32_t type : 2;
    uint32_t arg : 30; /* E_BYTES: byte-set index; E_REF: rule id */
} gelem;

struct asn_grammar {
    gelem *el;        /* every alternative of every rule, each ended by E_END */
    int n_el;
    int n_rules;
    int *alt_off;     /* rule r's alternatives are alt_start[alt_off[r] .. alt_off[r+1]) */
    int *alt_start;   /* position of an alternative's first element */
    uint64_t (*sets)[4]; /* 256-bit byte sets */
    int n_sets;
    int root;
};

static inline int gbyte_in(const asn_grammar *g, uint32_t pos, unsigned char b)
{
    return (int)((g->sets[g->el[pos].arg][b >> 6] >> (b & 63)) & 1);
}

/* Set entries that are not stack nodes. */
enum {
    ST_COMPLETE = -2, /* the empty stack: the sentence is complete */
    ST_BOTTOM = -3,   /* a truncated stack popped past its known part */
    ST_ROOT = -1,     /* parent of a bottom node */
};

typedef struct snode {
    uint32_t pos;
    int32_t parent; /* node index, ST_ROOT or ST_BOTTOM */
} snode;

/* Stacks are nodes in an arena; a set of stacks is a segment of `sets`
 * (node ids, ST_COMPLETE or ST_BOTTOM). Both grow and are cut back to
 * marks, so a walk allocates nothing once warm. A node of the same
 * (pos, parent) as a live one is that one (`seen`, a direct-mapped table
 * of node ids + 1), so that equal stacks are one and a set stays small
 * where a grammar is ambiguous (("."? [a-z]+)* reads "abc" three ways). */
enum { GW_SEEN = 1 << 12 };
typedef struct gwalker {
    const asn_grammar *g;
    snode *nodes;
    int n_nodes, cap_nodes;
    int32_t *sets;
    int n_sets, cap_sets;
    int32_t *seen;
} gwalker;

void gw_init(gwalker *w, const asn_grammar *g);
void gw_free(gwalker *w);
/* Appends the stacks of s (a canonical state) as a new set; returns its start. */
int gw_load(gwalker *w, const asn_gstate *s);
/* Appends one stack given bottom..top positions; parent of the bottom is
 * `below` (ST_ROOT or ST_BOTTOM). Returns the entry (node id or ST_COMPLETE). */
int32_t gw_push_stack(gwalker *w, const uint32_t *pos, int n, int32_t below);
/* Appends entry to the set starting at `start` unless present. */
void gw_add(gwalker *w, int start, int32_t entry);
/* Appends the set of stacks reached from set [start, start+n) by byte b. */
void gw_advance(gwalker *w, int start, int n, unsigned char b);
/* Expands position pos over parent into the set starting at `start`. */
void gw_expand(gwalker *w, int start, uint32_t pos, int32_t parent);
/* Writes set [start, start+n) as a canonical state (s's words replaced). */
void gw_store(gwalker *w, int start, int n, asn_gstate *s);

/* ------------------------------------------------------------ schemas */

/* asn_schema_to_gbnf, and with wide set, a number with bounds also
 * takes the exponent forms of the signs they allow (*approx, when not
 * NULL, is set to 1 when that made the grammar a superset: the value then
 * needs the final check). schema.c. */
char *gs_to_gbnf(const json_t *schema, asn_ws_rule ws, int wide, int *approx, asn_err *e);

/* ------------------------------------------------------------ validator */

/* 1 when string v is of format fmt, 0 when not, -1 when not judged. */
typedef int (*gv_format_fn)(const char *fmt, const json_t *v);
/* v against schema (whose $refs resolve in root): 1 valid, 0 invalid, -1
 * not judged (why gets the keyword it cannot evaluate; formats are not
 * judged when fmt is NULL). validate.c. */
int gv_valid(const json_t *root, const json_t *schema, const json_t *v, gv_format_fn fmt, char *why, size_t cap);
/* 0 when the validator judges every keyword of the schema root (and
 * every reference resolves), else -1 with why = "POINTER: reason". */
int gv_check(const json_t *root, gv_format_fn fmt, char *why, size_t cap);
/* 1 when the regex (PCRE2) matches somewhere in s, 0 when not, -1 when it
 * does not compile. */
int gv_search(const char *pattern, const char *s);
/* The draft root's $schema names: 3, 4, 6, 7, 2019 (2019-09), 2020
 * (2020-12), 0 when none or another. */
int gv_draft(const json_t *root);
/* 1 when keyword k is not one of that draft's (const, if under draft 4;
 * dependencies under 2019-09), 0 when it is or draft is 0. */
int gv_foreign(int draft, const char *k);
/* A copy of root without the keywords foreign to its draft (new
 * reference), or NULL when it has none. */
json_t *gv_for_draft(const json_t *root);
/* JSON values equal as JSON Schema compares them (numbers by value). */
int gv_equal(const json_t *a, const json_t *b);
/* The keywords whose value is one subschema, a list of them, or a map of
 * names to them (NULL-ended), and whether k is in such a list. */
extern const char *const GV_ONE_SCHEMA[], *const GV_SCHEMA_LISTS[], *const GV_SCHEMA_MAPS[];
int gv_listed(const char *const *l, const char *k);
/* The value a local $ref ("#", "#/a/b~1c/0") names in root (RFC 6901
 * escapes); NULL when it names none, *syntax set when ref is not of that
 * form (syntax may be NULL). */
const json_t *gv_pointer(const json_t *root, const char *ref, int *syntax);

/* ----------------------------------------------------------- automata */

/* A nondeterministic automaton over code points (Thompson's construction):
 * a state has at most one character edge (a class: sorted disjoint ranges
 * as pairs, to `to`) and any number of empty edges. */
typedef struct gnfa_state {
    uint32_t *r;
    int nr, to;
    int *eps;
    int neps;
} gnfa_state;

typedef struct gnfa {
    gnfa_state *s;
    int n, cap;
    int start, accept;
} gnfa;

/* The texts that contain a match of the regex (regex.c's dialect, searched
 * for as JSON Schema's pattern is), read as GNFA_BOT, the text, GNFA_EOT:
 * ^ and $ (anywhere in the pattern) match those two symbols, beyond the
 * code points. regex.c. Returns 0, or -1 with e set. */
enum { GNFA_BOT = 0x110000, GNFA_EOT = 0x110001 };
int gnfa_regex(const char *pattern, gnfa *a, struct asn_err *e);
void gnfa_free(gnfa *a);

/* A deterministic automaton over code points: state 0 is the start; each
 * state's transitions are sorted disjoint ranges (a missing code point
 * leads to the dead state). dfa.c. */
typedef struct gdfa_tr {
    uint32_t lo, hi;
    int to;
} gdfa_tr;

typedef struct gdfa {
    int n;
    unsigned char *acc;
    gdfa_tr **tr;
    int *ntr;
} gdfa;

enum { GDFA_AND, GDFA_OR, GDFA_ANDNOT };

/* The regex's automaton (as gnfa_regex reads it); NULL with e set. */
gdfa *gdfa_regex(const char *pattern, struct asn_err *e);
/* Exactly the listed strings (UTF-8). */
gdfa *gdfa_names(const char *const *names, int n);
/* Every string. */
gdfa *gdfa_any(void);
/* a and b, a or b, a and not b; NULL (e set) when too large. */
gdfa *gdfa_product(const gdfa *a, const gdfa *b, int op, struct asn_err *e);
int gdfa_empty(const gdfa *d);
void gdfa_free(gdfa *d);
/* The contents of a JSON string in d's language, of lo to hi code points
 * (hi < 0: no bound), then the closing quote, as GBNF rules appended to
 * rules; the first is named `name`, the others name followed by "q..."
 * (states) or "c..." (classes).
 * Returns 0, or -1 with e set when the rules would be too many. */
int gdfa_gbnf(const gdfa *d, long long lo, long long hi, const char *name, asn_sbuf *rules, struct asn_err *e);

/* ------------------------------------------------------------- word map */

typedef struct wmap_ent {
    uint64_t h;
    uint32_t *key;
    int n;
    void *val;
} wmap_ent;

typedef struct wmap {
    wmap_ent *t;
    int cap, used;
    void (*free_val)(void *);
} wmap;

uint64_t wmap_hash(const uint32_t *key, int n);
void *wmap_get(const wmap *m, const uint32_t *key, int n, uint64_t h);
/* Inserts a copy of the key; returns the value now stored (val, or the one
 * already there, in which case val is freed). */
void *wmap_put(wmap *m, const uint32_t *key, int n, uint64_t h, void *val);
void wmap_clear(wmap *m);

#endif
