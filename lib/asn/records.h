/* asn/records.h — reading candidate records the way every labelling tool
 * does: fields under asn's names or the reference project's
 * (sampler_info, incidence_vector, bradley_terry_rating, ...), and streams
 * grouped by prompt (records of one prompt are contiguous in every stream
 * asn writes; a stream where they are not is an error that says so). */
#ifndef ASN_RECORDS_H
#define ASN_RECORDS_H

#include <jansson.h>

#include "asn/core.h"
#include "asn/json.h"

/* The prompt a record belongs to: "prompt_id", else the prompt text itself
 * ("prompt"; the reference's records have no prompt id and it groups by
 * prompt text). NULL if the record has neither. */
const char *asn_rec_prompt_key(const json_t *rec);

/* The heuristic's identity: "heuristic"."id", else the canonical JSON of
 * the reference's "sampler_info" (name + config). Written to buf (cap >=
 * 4096 recommended); returns buf, or NULL if neither field is there. */
const char *asn_rec_heuristic_key(const json_t *rec, char *buf, size_t cap);
/* The heuristic's display name: "heuristic"."name", else
 * "sampler_info"."name"; NULL if absent. */
const char *asn_rec_heuristic_name(const json_t *rec);

/* "seed" as an integer >= 0 (also accepted: an integral real, or a string
 * of digits as some reference files have). 0 or -1 with e set. */
int asn_rec_seed(const json_t *rec, long long *seed, asn_err *e);

/* The generated text ("generation"); NULL if absent or not a string. */
const char *asn_rec_generation(const json_t *rec);

/* The record's checks {diversity, verifiable, factual}: from "checks", else
 * the reference's "incidence_vector" (check_diversity,
 * check_ifeval_or_math_or_gsm8k, check_factual); missing = 0. */
typedef struct asn_checks {
    int diversity, verifiable, factual;
} asn_checks;
asn_checks asn_rec_checks(const json_t *rec);

/* --------------------------------------------------------------- groups */

/* Reads JSONL records grouped by prompt: each call returns the next run of
 * consecutive records with the same asn_rec_prompt_key. */
typedef struct asn_group_reader asn_group_reader;

/* files: NULL-terminated list of paths ("-" = stdin), read in order as one
 * stream. */
asn_group_reader *asn_group_open(char *const *files, asn_err *e);
/* Returns 1 with *group = a new JSON array of the group's records (in input
 * order; asn_group_where gives each one's file and line); 0 at the end; -1 on an error ("FILE:LINE: ..."): a malformed line, a record
 * without prompt key, or a prompt whose records are not contiguous. With
 * skip_invalid, malformed records are counted and skipped (only stream
 * errors and non-contiguous prompts stop the reader). */
int asn_group_next(asn_group_reader *g, int skip_invalid, json_t **group, asn_err *e);
/* Where record i of the group last returned came from: its file ("<stdin>"
 * for "-") and line, for messages that name the record. */
const char *asn_group_where(const asn_group_reader *g, size_t i, long *line);
long asn_group_skipped(const asn_group_reader *g); /* records skipped so far */
long asn_group_records(const asn_group_reader *g); /* records returned so far */
void asn_group_close(asn_group_reader *g);

#endif
