/* proc.h — the processor interface: one row per processor, with named
 * fields, as llama.cpp's llama_sampler_i. A row says the processor's name,
 * its parameters (each a key, a type, a range, and where the value goes in
 * the processor's own parameter struct), and its functions. A family file
 * (proc_hf.c, proc_llama.c, ...) declares its parameter structs, its
 * functions and its rows; pipeline.c lists the families and does the rest:
 * parsing and validation by the parameter specs, the order of application,
 * the overflow checks, the draw. */
#ifndef ASN_SAMPLING_PROC_H
#define ASN_SAMPLING_PROC_H

#include <stddef.h>

#include "sampling_internal.h"

/* Parameter types. A value goes at `off` in the parameter struct as: */
typedef enum asn_ptype {
    ASN_P_REAL,      /* double: a JSON number */
    ASN_P_INT,       /* long: a JSON integer */
    ASN_P_INT_TRUNC, /* long: a JSON number, truncated (HF's int()) */
    ASN_P_BOOL,      /* int: true or false */
    ASN_P_IDS,       /* asn_ids: a token id or a list of them */
    ASN_P_BREAKERS,  /* asn_breakers: a list of token-id lists */
    ASN_P_STR,       /* nothing: a non-empty string, read by the row's init */
    ASN_P_ANY,       /* nothing: checked by the row's init */
} asn_ptype;

/* Range flags: the bound is checked when the flag is set. */
enum { ASN_LO_INCL = 1, ASN_LO_EXCL = 2, ASN_HI_INCL = 4, ASN_HI_EXCL = 8 };

typedef struct asn_ids {
    int32_t *v;
    int n;
} asn_ids;

typedef struct asn_breakers { /* sequences flattened into ids, len[i] each */
    int32_t *ids;
    int n_ids;
    int32_t *len;
    int n;
} asn_breakers;

typedef struct asn_param {
    const char *key;
    asn_ptype type;
    size_t off;     /* where the value goes in the parameter struct */
    size_t has_off; /* an int set to 1 when the key is given (0: none; no
                     * struct holds such a flag first) */
    int required;
    double def;     /* the value when optional and absent (REAL, INT) */
    int bounds;     /* ASN_LO_* | ASN_HI_* */
    double lo, hi;
    const char *doc; /* its description in schemas/processor.schema.json */
    /* ASN_P_ANY: the value's JSON Schema (a JSON text), as the row's init
     * checks it; the other types give theirs (proc_schema.c). */
    const char *schema;
} asn_param;

/* Row flags. */
enum {
    ASN_PF_MASK_FIRST = 1, /* masks the raw row before every other processor */
    ASN_PF_OVERFLOW = 2,   /* may push a finite logit to +inf: the row is checked after it */
    ASN_PF_LAST = 4,       /* must be the last processor of a heuristic */
};

typedef struct asn_proc_iface {
    const char *name;   /* as written in heuristics files */
    asn_proc_kind kind; /* several rows may share one (aliases) */
    const char *doc;    /* what it does, for the schema (proc_schema.c) */
    /* What the parameter specs cannot say, as JSON Schema keywords (a JSON
     * text) added to the parameters' schema: "oneOf" of required keys. A
     * row with one needs its params, as one with a required parameter. */
    const char *params_rule;
    size_t size;        /* of the parameter struct; 0 when it has none */
    asn_param params[8]; /* ends at the first without a key */
    unsigned flags;     /* ASN_PF_* */
    /* After the parameters were parsed into p->params: loads what the
     * processor needs (a sampler file, a grammar). NULL: nothing. */
    int (*init)(asn_proc *p, const json_t *params, asn_err *e);
    /* Frees what init made (not p->params). NULL: nothing. */
    void (*release)(asn_proc *p);
    /* Processes row[0..V-1] in place; ws holds V entries. */
    int (*apply)(const asn_proc *p, float *row, int V, const asn_seq_ctx *ctx, asn_seq_state *st,
                 asn_workspace *ws, asn_err *e);
    /* After a token was drawn from the processed row (stateful processors).
     * NULL: nothing. */
    void (*accept)(const asn_proc *p, const float *row, int V, int token, asn_seq_state *st);
    /* Constraints: 1 when the generated text is a complete sentence (the
     * end of generation may come). NULL: not a constraint. */
    int (*complete)(const asn_proc *p, const asn_seq_ctx *ctx);
} asn_proc_iface;

/* Parameter specs, by type: key, the struct and its field, then whether it
 * is required, the default, the range flags and bounds; last the
 * description (and for ASN_ANY the value's JSON Schema). */
#define ASN_REAL(k, T, f, req, d, b, lo, hi, doc) {k, ASN_P_REAL, offsetof(T, f), 0, req, d, b, lo, hi, doc, NULL}
#define ASN_INT(k, T, f, req, d, b, lo, hi, doc) {k, ASN_P_INT, offsetof(T, f), 0, req, d, b, lo, hi, doc, NULL}
#define ASN_BOOL(k, T, f, doc) {k, ASN_P_BOOL, offsetof(T, f), 0, 0, 0, 0, 0, 0, doc, NULL}
#define ASN_STR(k, req, doc) {k, ASN_P_STR, 0, 0, req, 0, 0, 0, 0, doc, NULL}
#define ASN_ANY(k, schema, doc) {k, ASN_P_ANY, 0, 0, 0, 0, 0, 0, 0, doc, schema}

/* The families: rows ending with one whose name is NULL. */
extern const asn_proc_iface asn_procs_hf[];         /* proc_hf.c */
extern const asn_proc_iface asn_procs_llama[];      /* proc_llama.c */
extern const asn_proc_iface asn_procs_json[];       /* proc_json.c */
extern const asn_proc_iface asn_procs_learned[];    /* proc_learned.c */
extern const asn_proc_iface asn_procs_constraint[]; /* proc_constraint.c */

/* The i-th row of the table, the families in order (pipeline.c); NULL past
 * the last. */
const asn_proc_iface *asn_proc_row_at(int i);

#endif
