/* asn/tool.h — what every asn program shares: one option parser (so every
 * tool has the same --help and --version look), error and warning output
 * prefixed by the program name, exit codes, and the stderr progress bar.
 *
 * Unlike the rest of the library, the asn_fatal/asn_usage functions here end
 * the process: they are for programs, not for library code. */
#ifndef ASN_TOOL_H
#define ASN_TOOL_H

#include <stdio.h>

#include "asn/core.h"

enum {
    ASN_EXIT_OK = 0,
    ASN_EXIT_FAIL = 1,  /* runtime failure: bad input, I/O error */
    ASN_EXIT_USAGE = 2, /* bad command line */
};

typedef enum {
    ASN_OPT_FLAG,   /* int*, set to 1 */
    ASN_OPT_INT,    /* long* */
    ASN_OPT_DOUBLE, /* double* */
    ASN_OPT_STRING, /* const char** */
    ASN_OPT_LIST,   /* asn_strlist*: every occurrence is appended */
} asn_opt_type;

typedef struct asn_strlist {
    const char **v;
    int n;
} asn_strlist;

/* An option's name may carry older spellings, still accepted but not shown
 * in --help, after '|': "skip-bad|skip-invalid" (--skip-invalid), and a
 * single letter there is an older short name ("steps|n": -n). */
typedef struct asn_option {
    const char *name;  /* long name without "--" (then "|old-name"s) */
    char shortname;    /* 0 if none */
    asn_opt_type type;
    void *ptr;         /* where the value goes; its initial value is the default */
    const char *arg;   /* argument name shown in --help ("N", "FILE") */
    const char *help;  /* one line */
} asn_option;

/* The options every tool that has the concept spells the same way (the
 * flag vocabulary; tests/cli/flags.sh checks every --help against it):
 *   -m, --model FILE      the model that generates (or is scored)
 *   -H, --heuristics FILE the heuristics (sampling pipelines) YAML
 *   -s, --seed(s) N       the seed (or seeds, "0-7")
 *   -o, --output FILE     where the main output goes
 *   -t, --threads N       threads (0: all cores)
 *   -n, --max-tokens N    tokens (or records) to make
 *   --skip-bad            warn about malformed input lines, leave them out and
 *                         count them in the summary, instead of stopping */
#define ASN_OPT_SKIP_BAD(ptr)                                                                  \
    {"skip-bad|skip-invalid", 0, ASN_OPT_FLAG, (ptr), NULL,                                                 \
     "warn about malformed records, leave them out (counted in the summary) and go on"}

typedef struct asn_tool {
    const char *name;     /* program name, used as the message prefix */
    const char *synopsis; /* e.g. "[OPTIONS] [FILE...]" */
    const char *summary;  /* one sentence: what the tool does */
    const char *details;  /* optional paragraphs after the options (fields read and written) */
    const asn_option *options; /* terminated by an entry with name == NULL */
} asn_tool;

/* The sentence closing every --help (a tool whose status says more, as
 * verify's, says so in its details). */
#define ASN_EXIT_HELP                                                                    \
    "Exit status: 0 success; 1 bad input (the message names FILE:LINE and the\n"          \
    "field or column) or a runtime error; 2 a bad command line.\n"

/* Parses argv against t->options (GNU style: --name=value, --name value,
 * -x value, flags, "--" ends options; options and operands may mix). Handles
 * --help and --version (print, exit 0) and bad usage (message, exit 2).
 * Operands are moved to the front of argv[1..]; returns their count. */
int asn_tool_parse(const asn_tool *t, int argc, char **argv);

/* Writes the --help text to f. */
void asn_tool_help(const asn_tool *t, FILE *f);

/* "tool: message" on stderr, then exit(ASN_EXIT_FAIL). stdout is flushed
 * first, so records already written are not lost. */
void asn_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* "tool: message" and a hint to --help, then exit(ASN_EXIT_USAGE). */
void asn_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* "tool: warning: message". */
void asn_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The current program name (set by asn_tool_parse). */
const char *asn_progname(void);

/* Opens FILE for reading/writing with "-" meaning stdin/stdout; fatal on
 * error. An output file is written under a temporary name beside it
 * (FILE.tmpPID), which asn_close_out renames to FILE once everything is
 * written and synced: a reader of FILE sees the previous version or the
 * whole new one, never a part, whatever kills the program (kill -9, a full
 * disk). The temporary file of an output not closed is removed at exit.
 * stdout cannot be renamed: a killed run's partial stdout is the caller's
 * to discard (pipelines/ write to a temporary name and rename). */
FILE *asn_open_in(const char *path);
FILE *asn_open_out(const char *path);
/* Flushes, syncs and closes an output stream and puts it in place; fatal
 * ("FILE: write error: No space left on device") if anything failed to
 * write, leaving FILE as it was. */
void asn_close_out(FILE *f, const char *path);
/* Ends the program after a failed write to f ("-" or NULL: stdout), err
 * the errno: "stdout (/dev/full): write error: No space left on device". */
void asn_write_failed(FILE *f, const char *path, int err) __attribute__((noreturn));
/* The name to show for an output: path, or for stdout "stdout (FILE)" when
 * it is redirected to a file (buf holds the text). */
const char *asn_out_name(FILE *f, const char *path, char *buf, size_t n);
/* fsync of the folder holding path (after a rename into it); 0 or -1. */
int asn_fsync_dir(const char *path);
/* fsync of a file written by other code (a GGUF writer); 0 or -1. */
int asn_fsync_path(const char *path);

/* The whole of a file ("-" = stdin) in a new buffer with a NUL after the
 * last byte; *len gets the byte count. Fatal on a read error. */
char *asn_read_all(const char *path, size_t *len);

/* Seconds on the monotonic clock (for rates and elapsed times). */
double asn_now(void);

/* OUTPUT without a ".gguf" suffix, then suffix (a new string): where a
 * trainer puts the checkpoint and log of OUTPUT. */
char *asn_derived_path(const char *output, const char *suffix);

/* Long runs that stop cleanly: after asn_catch_stop, SIGINT and SIGTERM only
 * set a flag, which asn_stop_requested returns (the signal, or 0); a second
 * signal ends the program at once. asn_map_records and asn_map_groups catch
 * them and stop after the record (group) being written. */
void asn_catch_stop(void);
int asn_stop_requested(void);
/* At a record boundary: when a stop was asked for, flushes stdout and ends
 * the program (status 1) with "stopped by SIGTERM after DONE WHAT (the
 * output ends with the last whole one)" and the hint of asn_stop_hint. */
void asn_stop_point(long done, const char *what);
/* Text appended to that message (e.g. "; --resume continues"). */
void asn_stop_hint(const char *hint);

/* ---------------------------------------------------------- progress bar */

/* A progress line on stderr with count, rate and ETA. It shows only when
 * stderr is a terminal, or when forced (--progress); never in pipes. */
typedef struct asn_progress asn_progress;
asn_progress *asn_progress_new(const char *label, long total, int force);
void asn_progress_add(asn_progress *p, long n);
/* Requests and tokens so far: the line adds their rates (requests/s,
 * tokens/s since the start) from the next drawing on. NULL-safe. */
void asn_progress_rates(asn_progress *p, long requests, long tokens);
void asn_progress_done(asn_progress *p); /* final line; frees p; NULL-safe */

#endif
