/* asn/grammar.h — constrained decoding: grammars over bytes, the matcher
 * state (a set of pushdown stacks), and the per-token mask over a
 * vocabulary.
 *
 * Every constraint is a context-free grammar in llama.cpp's GBNF syntax
 * (docs/sampling.md, "Constraints"). JSON Schema, regular expressions and
 * choice lists are translated to GBNF text first (asn_schema_to_gbnf,
 * asn_regex_to_gbnf, asn_choice_to_gbnf), so one engine serves all four.
 * The grammar is compiled to bytes: a character class over code points
 * becomes alternatives of UTF-8 byte sequences, so a token's piece (bytes,
 * possibly part of a character) is matched byte by byte and only valid
 * UTF-8 is ever produced.
 *
 * The mask (asn_constraint_mask) walks a byte trie of the vocabulary's
 * pieces against the top three entries of each stack and caches the result
 * per such suffix (tokens allowed whatever lies below, and the trie nodes
 * where the walk leaves the suffix, walked by the rest of the stack when
 * a mask is asked for), and caches whole
 * masks per state. Results never depend on the cache: the mask is the set
 * of tokens whose bytes the state accepts (asn_constraint_mask_brute tries
 * every token, for tests and benchmarks). Compiled grammars and constraints
 * are immutable apart from their caches, which are locked: one constraint
 * may serve many threads. */
#ifndef ASN_GRAMMAR_H
#define ASN_GRAMMAR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "asn/core.h"
#include "asn/vocab.h"

/* ------------------------------------------------------------ grammars */

typedef struct asn_grammar asn_grammar;

/* Parses GBNF text (llama.cpp's syntax: `name ::= alternatives`, "literals",
 * [classes], ranges, [^negated], `.`, groups, * + ? {m} {m,} {m,n}, # comments;
 * the start rule is `root`). Errors read "LINE:COL: message". Left-recursive
 * rules are refused (as llama.cpp does). */
asn_grammar *asn_gbnf_parse(const char *text, size_t len, asn_err *e);
void asn_grammar_free(asn_grammar *g); /* NULL-safe */
int asn_grammar_n_rules(const asn_grammar *g);

/* ------------------------------------------------------------ converters */

/* Whitespace the JSON Schema grammar allows between tokens. */
typedef enum asn_ws_rule {
    ASN_WS_COMPACT = 0, /* none: the compact form json.dumps(separators=(",", ":")) writes */
    ASN_WS_ANY = 1,     /* up to ASN_WS_MAX spaces, tabs or newlines around every token */
} asn_ws_rule;
enum { ASN_WS_MAX = 20 };

/* A JSON Schema as GBNF (new string, caller frees). Errors name the JSON
 * pointer of the offending keyword: "/properties/age: unsupported keyword
 * \"format\"". The keywords understood are listed in docs/sampling.md. */
char *asn_schema_to_gbnf(const json_t *schema, asn_ws_rule ws, asn_err *e);

/* The same, for schemas with keywords the grammar cannot express but the
 * validator can judge (oneOf whose branches may overlap, not, if/then/else,
 * uniqueItems, dependentSchemas, multipleOf, fractional bounds, enum of
 * objects, ...): when the schema itself does not compile, the grammar is
 * made from a relaxed schema that accepts a superset (those keywords
 * dropped or widened, one kind at a time, as the errors name them) and
 * *final is set to 1: the text is then valid only when it also passes
 * asn_schema_check_text. *final is 0 when the grammar is exact. Refused
 * (the error names keyword and pointer) when the relaxed schema does not
 * compile either, or when the validator cannot judge some keyword. */
char *asn_schema_to_gbnf_final(const json_t *schema, asn_ws_rule ws, int *final, asn_err *e);

/* The final check: 1 when text (len bytes) is one JSON value (whitespace
 * around it allowed) valid under the schema, else 0 (why, when not NULL,
 * gets the reason). What cannot be judged for this value (an integer
 * beyond 64 bits, a recursion past 64 levels) counts as invalid. */
int asn_schema_check_text(const json_t *schema, const char *text, size_t len, char *why, size_t cap);

/* A regular expression (the subset in docs/sampling.md; the whole text
 * must match it) as GBNF. Errors read "offset N: message". */
char *asn_regex_to_gbnf(const char *pattern, asn_err *e);

/* The text is exactly one of the n strings (n >= 1; any bytes but NUL). */
char *asn_choice_to_gbnf(const char *const *options, int n, asn_err *e);

/* ---------------------------------------------------------- matcher state */

/* A state: the set of stacks after some bytes, canonical (stacks sorted,
 * duplicates removed), so equal states compare equal word for word. */
typedef struct asn_gstate {
    uint32_t *w; /* [n_stacks, len_1, pos..., len_2, pos..., ...] */
    int n;
} asn_gstate;

/* The state before any byte. */
void asn_gstate_start(const asn_grammar *g, asn_gstate *s);
void asn_gstate_clear(asn_gstate *s);
void asn_gstate_copy(asn_gstate *dst, const asn_gstate *src);
/* Consumes n bytes: 0, or -1 when the grammar cannot accept them (s is then
 * unchanged). */
int asn_gstate_advance(const asn_grammar *g, asn_gstate *s, const char *bytes, size_t n);
/* 1 when the bytes consumed so far form a complete sentence. */
int asn_gstate_complete(const asn_gstate *s);
/* 1 when some byte may still follow. */
int asn_gstate_can_continue(const asn_gstate *s);
/* 1 when the state accepts nothing at all (never returned by advance). */
static inline int asn_gstate_dead(const asn_gstate *s) { return !s->n || !s->w[0]; }

/* ----------------------------------------------------------- constraints */

typedef struct asn_constraint asn_constraint;

/* A constraint over a vocabulary: takes ownership of g. v must outlive it.
 * Constraints over one vocabulary share its byte trie while any of them
 * lives (the first builds it). */
asn_constraint *asn_constraint_new(asn_grammar *g, const asn_vocab *v);
/* The same over other's vocabulary, sharing its byte trie (building the
 * trie of a 128k vocabulary takes about 0.1 s). */
asn_constraint *asn_constraint_new_like(asn_grammar *g, const asn_constraint *other);
void asn_constraint_free(asn_constraint *c);
const asn_grammar *asn_constraint_grammar(const asn_constraint *c);
const asn_vocab *asn_constraint_vocab(const asn_constraint *c);

/* The tokens allowed in state s, as a bit set (bit t of word t / 64) of
 * ceil(V / 64) words: a token whose piece is non-empty and whose bytes the
 * state accepts; an end-of-generation token exactly when the state is
 * complete; nothing else (no control token, no empty piece). */
void asn_constraint_mask(asn_constraint *c, const asn_gstate *s, uint64_t *bits);
/* The same by trying every token in turn (the reference). */
void asn_constraint_mask_brute(const asn_constraint *c, const asn_gstate *s, uint64_t *bits);

/* Drops the cached masks of whole states, and with `suffixes` those of
 * stack tops too (benchmarks time each level; memory). */
void asn_constraint_drop_caches(asn_constraint *c, int suffixes);

/* Consumes a token: 0, or -1 if it is not allowed (s unchanged). An
 * end-of-generation token is allowed when the state is complete and leaves
 * it as it is. */
int asn_constraint_accept(const asn_constraint *c, asn_gstate *s, int32_t token);

/* The state after a sequence of tokens, through a cache of the states of
 * recent sequences (a generation asks for each prefix in turn, so this is
 * one token's work per step). -1 if some token is not allowed; *refused
 * (may be NULL) gets its index. s must be cleared by the caller. */
int asn_constraint_state_after(asn_constraint *c, const int32_t *ids, int n, asn_gstate *s,
                               int *refused);

#endif
