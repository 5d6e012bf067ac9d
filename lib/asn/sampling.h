/* asn/sampling.h — logits processors, heuristics (named pipelines of
 * processors), and the deterministic token draw.
 *
 * A row is V float32 logits; -inf means the token is removed. Processors
 * follow shared semantics documented in docs/sampling.md: the HuggingFace
 * logits processors (temperature, top_k, top_p, min_p, typical, epsilon,
 * eta, repetition_penalty, no_repeat_ngram, min_new_tokens), OpenAI-style
 * presence/frequency penalties, greedy, and llama.cpp's samplers
 * (llama_temp, llama_top_k, llama_top_p, llama_min_p, llama_typical,
 * top_n_sigma, xtc, penalties, dry, mirostat_v2), the json constraint,
 * `learned`: a trained sampler network (asn/sampler_net.h) that replaces the
 * row by its log-probabilities, and the structured-output constraints
 * json_schema, grammar, regex and choice (asn/grammar.h), which mask the
 * raw row before every other processor of the heuristic. */
#ifndef ASN_SAMPLING_H
#define ASN_SAMPLING_H

#include <jansson.h>
#include <stdint.h>

#include "asn/core.h"

typedef enum asn_proc_kind {
    ASN_PROC_TEMPERATURE,
    ASN_PROC_TOP_K,
    ASN_PROC_TOP_P,
    ASN_PROC_MIN_P,
    ASN_PROC_TYPICAL,
    ASN_PROC_EPSILON,
    ASN_PROC_ETA,
    ASN_PROC_REPETITION_PENALTY,
    ASN_PROC_PRESENCE_PENALTY,
    ASN_PROC_FREQUENCY_PENALTY,
    ASN_PROC_NO_REPEAT_NGRAM,
    ASN_PROC_MIN_NEW_TOKENS,
    ASN_PROC_GREEDY,
    ASN_PROC_LLAMA_TEMP,
    ASN_PROC_LLAMA_TOP_K,
    ASN_PROC_LLAMA_TOP_P,
    ASN_PROC_LLAMA_MIN_P,
    ASN_PROC_LLAMA_TYPICAL,
    ASN_PROC_TOP_N_SIGMA,
    ASN_PROC_XTC,
    ASN_PROC_PENALTIES,
    ASN_PROC_DRY,
    ASN_PROC_MIROSTAT_V2,
    ASN_PROC_MIROSTAT_V2_TRUNCATE,
    ASN_PROC_JSON,
    ASN_PROC_LEARNED, /* also spelled adaptive_sampler, the reference's name */
    ASN_PROC_JSON_SCHEMA,
    ASN_PROC_GRAMMAR,
    ASN_PROC_REGEX,
    ASN_PROC_CHOICE,
    ASN_PROC_COUNT
} asn_proc_kind;

/* One configured processor: its row of the processor table (name,
 * parameters, functions; lib/sampling/proc.h) and its parameters, parsed
 * and validated into the named struct the row declares. */
typedef struct asn_proc {
    asn_proc_kind kind;
    const struct asn_proc_iface *iface;
    void *params; /* the row's parameter struct (NULL when it has none) */
} asn_proc;

/* A heuristic: a named pipeline applied left to right. */
typedef struct asn_heuristic {
    char *name;
    double weight;
    char id[13];       /* first 12 hex of SHA-256 of canonical {name, processors} (asn_heuristic_id) */
    json_t *processors; /* normalized list [{name, params}] (params always present) */
    int n;
    asn_proc *procs;
} asn_heuristic;

/* Name of a processor kind as written in YAML / JSON. */
const char *asn_proc_name(asn_proc_kind k);
/* The parameters of p as parsed: every parameter of its row with a value
 * (defaults filled in, integers truncated where the row says so), as a new
 * JSON object. String parameters and the structured constraints' are not
 * kept (their processors read them when built) and are left out. */
json_t *asn_proc_params_json(const asn_proc *p);
/* The JSON Schema of a processor {name, params}, made from the processor
 * table: names, parameters with types, ranges, defaults and descriptions,
 * and the processors a heuristics grid may sweep (schemas/processor.schema.json
 * is its output, written by process-logits --schema). */
json_t *asn_proc_schema(void);

/* Builds a heuristic from a name and a JSON processor list
 * ([{name, params}], the reference format). Errors name the processor (by
 * position and name) and the parameter key; the caller prefixes the file
 * and pipeline. A learned processor's sampler file is loaded and checked
 * here (once per process and file, shared while any heuristic holds it;
 * thread-safe), and OpenBLAS is set to one thread. Returns 0 or -1. */
int asn_heuristic_init(asn_heuristic *h, const char *name, const json_t *processors, asn_err *e);
/* Frees h; the last heuristic holding a sampler file frees the sampler. */
void asn_heuristic_clear(asn_heuristic *h);
/* The heuristic as JSON {name, id, processors} (new reference). */
json_t *asn_heuristic_json(const asn_heuristic *h);
/* A processor list as asn_heuristic_init normalizes it ([{name, params}],
 * params {} when absent), without checking names or parameters (new
 * reference; processors must be an array). */
json_t *asn_processors_normalized(const json_t *processors);
/* The heuristic id asn_heuristic_init gives (name, processors): the first
 * 12 hex digits of SHA-256 of canonical {name, normalized processors}.
 * asn_heuristic_init first puts "sha256:" and the file's digest in place of
 * a learned processor's sampler path: the id names the sampler's bytes. */
void asn_heuristic_id(const char *name, const json_t *processors, char id[13]);
/* The id asn_heuristic_init gives a heuristic written as a record holds it
 * (name, processors with sampler paths as written), without building it:
 * each learned processor's sampler file is read now for its digest. -1
 * when one cannot be read (the error names the processor and the file). */
int asn_heuristic_id_of(const char *name, const json_t *processors, char id[13], asn_err *e);
/* The parameter of processor proc_name naming a sampler file ("path" of
 * learned, "sampler_checkpoint_path" of adaptive_sampler); NULL for the
 * other processors. */
const char *asn_learned_path_param(const char *proc_name);
/* What such a parameter becomes in the processors a heuristic id hashes:
 * the string "sha256:" and the file's digest (new reference). */
json_t *asn_learned_id_value(const char *sha256);

/* A heuristics file: `sampling_pipelines: [{name, weight, processors}]`, or
 * a bare single pipeline {name, weight, processors}. */
typedef struct asn_heuristics {
    int n;
    asn_heuristic *h;
} asn_heuristics;

/* Loads a heuristics YAML (or JSON) file. Errors read
 * "PATH:LINE:COL: pipeline "NAME": processor 2 (top_p): parameter "top_p": ...". */
asn_heuristics *asn_heuristics_load(const char *path, asn_err *e);
/* The same from text in memory; `name` stands for the path in errors. */
asn_heuristics *asn_heuristics_parse(const char *name, const char *text, size_t len, asn_err *e);
void asn_heuristics_free(asn_heuristics *hs);
/* Index of the heuristic with this name, or -1. */
int asn_heuristics_find(const asn_heuristics *hs, const char *name);

/* ---------------------------------------------------------- application */

/* What a processor may know about the sequence being generated. */
typedef struct asn_seq_ctx {
    const int32_t *ids; /* token history, oldest first: prompt then generated */
    int n_ids;
    int n_prompt;       /* the first n_prompt ids are the prompt */
    const int32_t *eos; /* end-of-generation ids (min_new_tokens without eos_token_id) */
    int n_eos;
    asn_rng_key key;    /* xtc's randomness: stream ASN_STREAM_XTC at `step` */
    uint64_t step;
    const struct asn_vocab *vocab; /* token texts, for the json constraint (may be NULL) */
} asn_seq_ctx;

/* For the json constraint: 1 if the generated tokens (ids[n_prompt..])
 * form a complete JSON value (an object with object_root), so that the end
 * of generation may come. Needs ctx->vocab. */
int asn_json_complete(const asn_seq_ctx *ctx, int object_root);
/* The json processor of a heuristic, or NULL. */
const asn_proc *asn_heuristic_json_proc(const asn_heuristic *h);
/* 1 if h holds a constraint (json, json_schema, grammar, regex, choice)
 * and every one of them is complete after the generated tokens (or, for a
 * schema's final check, at a dead end: complete, failing the check, and no
 * token may follow): the end of generation is allowed then even before
 * min_new_tokens. */
int asn_heuristic_may_end(const asn_heuristic *h, const asn_seq_ctx *ctx);
/* 1 if h holds a constraint (json, json_schema, grammar, regex, choice). */
int asn_heuristic_constrained(const asn_heuristic *h);
/* 1 when the text (len bytes) is a complete sentence of constraint
 * processor p (json_schema, grammar, regex, choice) and, for a schema
 * compiled with a final check, a value the full validator accepts: what
 * verify and the candidate records call valid. */
int asn_constraint_proc_valid(const asn_proc *p, const char *text, size_t len);
/* The sampler network a learned (or adaptive_sampler) processor holds,
 * shared by every processor naming the same file; NULL for other kinds. */
const struct asn_sampler *asn_learned_sampler(const asn_proc *p);
/* 1 for json_schema, grammar, regex and choice. */
int asn_proc_is_constraint(asn_proc_kind k);
/* The GBNF text a constraint processor's params stand for (new string),
 * compiled once to check it. Errors name the parameter: "parameter
 * \"schema\": /properties/age: unsupported keyword \"format\"". A schema
 * the grammar only relaxes (asn_schema_to_gbnf_final) sets *check (a new
 * reference; NULL otherwise; check itself may be NULL only for kinds other
 * than json_schema): the finished text must then also pass
 * asn_schema_check_text against it. */
int asn_constraint_proc_gbnf(asn_proc_kind kind, const json_t *params, char **gbnf, json_t **check, asn_err *e);

/* Per-sequence state of stateful processors (mirostat_v2's mu). Start a
 * sequence with asn_seq_state_init; asn_pipeline_accept updates it. */
typedef struct asn_seq_state {
    int has_mu;
    float mu;
} asn_seq_state;

static inline void asn_seq_state_init(asn_seq_state *s) { s->has_mu = 0, s->mu = 0; }

/* Scratch memory for one thread; grows with V (and holds a learned
 * processor's working memory, one per sampler configuration). */
typedef struct asn_workspace asn_workspace;
asn_workspace *asn_workspace_new(void);
void asn_workspace_free(asn_workspace *ws);

/* Applies h to row[0..V-1] in place. The row must hold at least one finite
 * value and no NaN or +inf (an error names the token otherwise). ctx may be
 * NULL when no processor needs history; state may be NULL for stateless
 * pipelines. */
int asn_pipeline_apply(const asn_heuristic *h, float *row, int V, const asn_seq_ctx *ctx,
                       asn_seq_state *state, asn_workspace *ws, asn_err *e);

/* Applies one processor. */
int asn_proc_apply(const asn_proc *p, float *row, int V, const asn_seq_ctx *ctx,
                   asn_seq_state *state, asn_workspace *ws, asn_err *e);

/* Draws a token from softmax(row) by inverse CDF in token-id order: the
 * first id whose cumulative probability (double sum of expf(x - max)) exceeds
 * u times the total. u in [0, 1). Deterministic: same row and u, same id.
 * Returns -1 when every token is -inf. */
int asn_sample_row(const float *row, int V, double u);

/* After drawing `token` from the processed row: updates stateful processors
 * (mirostat_v2: mu -= eta * (surprise - tau)). */
void asn_pipeline_accept(const asn_heuristic *h, const float *row, int V, int token,
                         asn_seq_state *state);

#endif
