/* asn/shard.h — splitting a dataset into shards by prompt, and putting the
 * shards' outputs back together. A prompt's shard is a function of its id
 * alone (the first 8 bytes of SHA-256 of the id, big-endian, modulo N), so
 * gen-candidates --shard and every labelling tool's --shard agree, and a
 * shard holds a scattered subset of the prompts, in input order. */
#ifndef ASN_SHARD_H
#define ASN_SHARD_H

#include <stddef.h>
#include <stdio.h>

#include "asn/core.h"

typedef struct asn_shard {
    int k, n; /* shard k of n (1 <= k <= n); n = 0: everything */
} asn_shard;

/* "K/N" with 1 <= K <= N. -1 with e set otherwise. */
int asn_shard_parse(const char *spec, asn_shard *s, asn_err *e);
/* Whether the prompt with this id (asn_rec_prompt_key) is in shard s. */
int asn_shard_has(const asn_shard *s, const char *prompt_id);

/* Writes the records of shard files paths[0..n_paths) to out prompt by
 * prompt in the order of ids[0..n_ids) (the unsharded order), every line
 * copied unchanged. A prompt no shard has is left out (a tool discarded
 * it); a record whose prompt is not in ids, not where the order expects it,
 * or in two shards, a line cut short and a record without a prompt id are
 * errors naming file and line. 0, or -1 with e set. */
int asn_shard_merge(char *const *ids, size_t n_ids, char *const *paths, int n_paths, FILE *out, asn_err *e);

/* The prompt ids of JSONL files (NULL-terminated, "-" = stdin) in order of
 * first appearance, as a new NULL-terminated array of new strings (free
 * with asn_shard_ids_free); *n gets the count. NULL with e set on an error. */
char **asn_shard_ids(char *const *files, size_t *n, asn_err *e);
void asn_shard_ids_free(char **ids);

#endif
