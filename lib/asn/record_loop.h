/* asn/record_loop.h — the loops of the record-labelling programs: every
 * JSONL record (or every prompt's group of records) of the input files
 * through one callback to stdout, with file:line errors, --skip-invalid,
 * --shard and --merge. Built on the records layer (asn/records.h,
 * asn/shard.h) and the programs' front end (asn/tool.h); like asn/tool.h it
 * is for programs: errors end the process. */
#ifndef ASN_RECORD_LOOP_H
#define ASN_RECORD_LOOP_H

#include "asn/core.h"
#include "asn/tool.h"

/* The loop of a record-annotating tool: reads every JSONL record of files
 * (NULL-terminated; NULL or empty = stdin), calls fn on it, and writes it to
 * stdout when fn returns 0. When fn fails, or a line is not a JSON object,
 * the error gets the file:line prefix and ends the program, or with
 * skip_invalid is a warning and the record is dropped (read errors always
 * end it). Returns the number of records skipped, after a summary warning. */
struct json_t;
typedef int (*asn_record_fn)(struct json_t *rec, void *ctx, const char *path, long line, asn_err *e);
long asn_map_records(char **files, int skip_invalid, int show_progress, asn_record_fn fn, void *ctx);

/* For asn_group_on_file: a file of the research pipeline's records gets
 * one line on stderr, "tool: FILE: reading the research pipeline's
 * records (...)"; asn's own records are read silently. asn_map_groups
 * sets it. */
void asn_note_record_format(const char *path, int format, void *ctx);

/* The loop of a tool that labels records a prompt at a time: reads the
 * JSONL records of files (as asn_map_records) grouped by prompt
 * (asn_group_next of asn/records.h), calls fn on each group and writes the
 * group's records to stdout when fn returns 0. fn gets the records as a JSON
 * array in input order and changes them in place (not the array: a record
 * it finds invalid it hands to asn_group_map_invalid). When fn fails, or the
 * stream has an error, the error ends the program. With skip_invalid,
 * malformed lines are left out. Returns the number of records left out,
 * without a summary warning: the tool writes its own closing lines, then
 * asn_warn_skipped. */
typedef struct asn_group_map asn_group_map;
typedef int (*asn_group_fn)(struct json_t *recs, asn_group_map *m, void *ctx, asn_err *e);
long asn_map_groups(char **files, int skip_invalid, int show_progress, asn_group_fn fn, void *ctx);
/* Where record i of the group came from: its file ("<stdin>" for "-") and
 * line. */
const char *asn_group_map_where(const asn_group_map *m, size_t i, long *line);
/* Record i of the group is invalid, why says why. Without skip_invalid: e
 * gets "FILE:LINE: why" and the return is -1, for fn to return; with it:
 * the same as a warning, the record is left out of the output and the
 * return is 0. */
int asn_group_map_invalid(asn_group_map *m, size_t i, const asn_err *why, asn_err *e);

/* --shard K/N and --merge FILE of a labelling tool (asn/shard.h), given
 * the options' values and the tool's input files (NULL or empty = stdin),
 * right after asn_tool_parse. With merge files: writes their records to
 * stdout in the order of the prompts of the input files (the unsharded
 * input of the shards) and returns 1: the tool is done. Otherwise
 * asn_map_records and asn_map_groups keep only the records of the prompts
 * of shard K (all without --shard), and it returns 0. Errors end the
 * program. */
int asn_tool_shards(const char *shard, const asn_strlist *merge, char **files);
/* The --help paragraph of those two options. */
#define ASN_SHARD_HELP                                                              \
    "\nShards: --shard K/N labels only the prompts of shard K of N, the prompts\n"  \
    "gen-candidates --shard K/N generates (a prompt's shard is a hash of its id).\n" \
    "--merge OUT (once per shard's output, any order) with the unsharded input as\n" \
    "FILE writes the shards' records in the order of the input's prompts, lines\n"  \
    "unchanged: what one unsharded run writes.\n"

/* The closing warning "skipped N invalid record(s)"; nothing when n is 0. */
void asn_warn_skipped(long n);

#endif
