/* asn/records.h — reading candidate records the way every labelling tool
 * does: fields under asn's names or the research pipeline's
 * (sampler_info, incidence_vector, bradley_terry_rating, ...), the format
 * detected per file, and streams grouped by prompt (a prompt's records
 * need not be contiguous). */
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

/* ------------------------------------------------------------- formats */

/* The two record formats every labelling tool reads: asn's (prompt_id,
 * heuristic {id, name, processors}, system, checks, ...) and the research
 * pipeline's generation records (its source record's fields, prompt text,
 * system_prompt, sampler_info {name, config}, generation, seed,
 * incidence_vector; bradley_terry_rating once rated). Field access
 * (the functions above) takes either; the rules that differ:
 *   - grouping: asn groups by prompt_id (a hash of system and prompt
 *     text); the research pipeline's records have no prompt_id and are
 *     grouped by their prompt text alone, as its scripts group them;
 *   - the heuristic: heuristic.id, else the canonical JSON of sampler_info. */
enum { ASN_REC_ASN = 0, ASN_REC_REFERENCE = 1 };
/* The format of a record: asn's when it has "heuristic" or "prompt_id",
 * else the research pipeline's when it has "sampler_info", else asn's. */
int asn_rec_format(const json_t *rec);
/* A phrase for messages: "asn's records (...)" / "the research pipeline's
 * records (...)". */
const char *asn_rec_format_name(int format);

/* --------------------------------------------------------------- groups */

/* Reads JSONL records grouped by prompt (asn_rec_prompt_key), the groups in
 * the order of each prompt's first record, a group's records in input
 * order. A prompt's records need not be contiguous (two runs' outputs
 * concatenated, a file sorted by heuristic): a first pass indexes every
 * record's place and prompt (memory: a few words per record and one key
 * per prompt, not the records), the second reads each group's records
 * again (stdin is first copied to a temporary file). */
typedef struct asn_group_reader asn_group_reader;

/* files: NULL-terminated list of paths ("-" = stdin), read in order as one
 * stream. */
asn_group_reader *asn_group_open(char *const *files, asn_err *e);
/* Called once per file, at its first record, with the file's format
 * (ASN_REC_*), judged from that record. */
typedef void (*asn_group_file_fn)(const char *path, int format, void *ctx);
void asn_group_on_file(asn_group_reader *g, asn_group_file_fn fn, void *ctx);
/* The format of file i (index in files), -1 before its first record. */
int asn_group_file_format(const asn_group_reader *g, int file);
/* Returns 1 with *group = a new JSON array of the group's records (in input
 * order; asn_group_where gives each one's file and line); 0 at the end; -1
 * on an error ("FILE:LINE: ..."): a malformed line or a record without
 * prompt key; the groups complete before it are returned first (all but
 * the one the bad line interrupts). With skip_invalid, malformed records
 * are counted and skipped (only stream errors stop the reader). */
int asn_group_next(asn_group_reader *g, int skip_invalid, json_t **group, asn_err *e);
/* Where record i of the group last returned came from: its file ("<stdin>"
 * for "-") and line, for messages that name the record. */
const char *asn_group_where(const asn_group_reader *g, size_t i, long *line);
long asn_group_skipped(const asn_group_reader *g); /* records skipped so far */
long asn_group_records(const asn_group_reader *g); /* records returned so far */
void asn_group_close(asn_group_reader *g);

#endif
