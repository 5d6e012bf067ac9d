/* asn/scores.h — the score fields the labelling tools write on a candidate
 * record, as data: where each is in a record, which tool writes it, its
 * unit, which way is better, and whether filter-topk --weights weighs it.
 * filter-topk reads its --weights keys from this table and report its
 * leaderboard's units and directions, so a new score is one tool and one
 * row here (and, to be weighed, its term in filter-topk's ranking). */
#ifndef ASN_SCORES_H
#define ASN_SCORES_H

typedef struct asn_score_field {
    const char *name;     /* short name; for a weighed score, its --weights key */
    const char *path;     /* where asn writes it: "quality.bt" */
    const char *ref_path; /* the reference system's field, read when path is absent; NULL if none */
    const char *tool;     /* the program that writes it */
    const char *unit;     /* "BT log-odds", "log bits", ... */
    int better;           /* 1: higher is better, -1: lower is, 0: neither */
    int weighed;          /* 1: a term of filter-topk's ranking (a --weights key) */
} asn_score_field;

/* Every known score field, the weighed ones first in the order filter-topk
 * lists them (quality, diversity, verifiable, reward). */
extern const asn_score_field asn_score_fields[];
extern const int asn_n_score_fields;

/* The row named name, or NULL. */
const asn_score_field *asn_score_field_named(const char *name);

#endif
