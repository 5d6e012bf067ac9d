/* tool.c — the shared front end of every asn program: option parsing,
 * --help/--version, messages and exit codes, stream opening, the progress
 * bar. The loops of the record-labelling tools are in lib/io/record_loop.c. */
#include "asn/tool.h"
#include "asn/core.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *progname = "asn";

const char *asn_progname(void) { return progname; }

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
    fflush(stdout);
    fprintf(stderr, "%s: %s", progname, kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void drop_temps(void);

void asn_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
    drop_temps();
    exit(ASN_EXIT_FAIL);
}

void asn_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try '%s --help' for more information.\n", progname);
    exit(ASN_EXIT_USAGE);
}

void asn_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

/* --------------------------------------------------------------- --help */

static void default_text(const asn_option *o, char *buf, size_t n)
{
    buf[0] = 0;
    switch (o->type) {
    case ASN_OPT_FLAG:
        break;
    case ASN_OPT_INT:
        snprintf(buf, n, "%ld", *(long *)o->ptr);
        break;
    case ASN_OPT_DOUBLE:
        snprintf(buf, n, "%g", *(double *)o->ptr);
        break;
    case ASN_OPT_STRING:
        if (*(const char **)o->ptr)
            snprintf(buf, n, "%s", *(const char **)o->ptr);
        break;
    case ASN_OPT_LIST:
        break;
    }
}

void asn_tool_help(const asn_tool *t, FILE *f)
{
    fprintf(f, "Usage: %s %s\n%s\n\nOptions:\n", t->name, t->synopsis, t->summary);
    for (const asn_option *o = t->options; o && o->name; o++) {
        char left[96], def[256];
        int nl = (int)strcspn(o->name, "|"); /* older spellings are not shown */
        int n = snprintf(left, sizeof left, "  %s%c%s--%.*s%s%s", o->shortname ? "-" : "",
                         o->shortname ? o->shortname : ' ', o->shortname ? ", " : "  ", nl, o->name,
                         o->type == ASN_OPT_FLAG ? "" : " ", o->type == ASN_OPT_FLAG ? "" : o->arg);
        if (!o->shortname) /* keep columns aligned: drop the blank short slot */
            n = snprintf(left, sizeof left, "      --%.*s%s%s", nl, o->name,
                         o->type == ASN_OPT_FLAG ? "" : " ", o->type == ASN_OPT_FLAG ? "" : o->arg);
        default_text(o, def, sizeof def);
        fprintf(f, "%s%*s%s", left, n < 30 ? 30 - n : 1, "", o->help);
        if (def[0])
            fprintf(f, " (default: %s)", def);
        if (o->type == ASN_OPT_LIST)
            fprintf(f, " (repeatable)");
        fputc('\n', f);
    }
    fprintf(f, "  -h, --help                  show this help and exit\n"
               "      --version               show the version and exit\n");
    if (t->details)
        fprintf(f, "\n%s", t->details);
    fprintf(f, "\n%s", ASN_EXIT_HELP);
}

/* Whether the option named names ("long|older|x") is spelled name (len
 * bytes, a long name) or, with len 1 and is_short, the letter name[0]. */
static int spelled(const asn_option *o, const char *name, size_t len, int is_short)
{
    if (is_short && o->shortname == name[0])
        return 1;
    for (const char *p = o->name; *p;) {
        size_t n = strcspn(p, "|");
        int first = p == o->name;
        if (is_short ? !first && n == 1 && p[0] == name[0] : (first || n > 1) && n == len && !strncmp(p, name, len))
            return 1;
        p += n + (p[n] == '|');
    }
    return 0;
}

/* The option's current long name ("--skip-bad" of "skip-bad|skip-invalid"). */
static int long_len(const asn_option *o) { return (int)strcspn(o->name, "|"); }

/* --------------------------------------------------------------- parsing */

static void set_value(const asn_option *o, const char *v, const char *spelled)
{
    char *end;
    switch (o->type) {
    case ASN_OPT_FLAG:
        *(int *)o->ptr = 1;
        return;
    case ASN_OPT_INT: {
        errno = 0;
        long x = strtol(v, &end, 10);
        if (errno || end == v || *end)
            asn_usage_error("option %s: '%s' is not an integer", spelled, v);
        *(long *)o->ptr = x;
        return;
    }
    case ASN_OPT_DOUBLE: {
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x))
            asn_usage_error("option %s: '%s' is not a number", spelled, v);
        *(double *)o->ptr = x;
        return;
    }
    case ASN_OPT_STRING:
        *(const char **)o->ptr = v;
        return;
    case ASN_OPT_LIST: {
        asn_strlist *l = o->ptr;
        l->v = asn_xrealloc(l->v, (size_t)(l->n + 1) * sizeof *l->v);
        l->v[l->n++] = v;
        return;
    }
    }
}

/* At exit, after the atexit handlers: stdio flushed, then the process
 * ends without running the libraries' destructors. OpenBLAS joins its
 * worker threads in one, which never returns when a worker is stuck
 * retrying an allocation (under ulimit -v): a finished or failed program
 * would hang instead of exiting. */
static void end_now(int status, void *arg)
{
    (void)arg;
    fflush(NULL);
    _exit(status);
}

int asn_tool_parse(const asn_tool *t, int argc, char **argv)
{
    progname = t->name;
    static int registered;
    if (!registered) {
        on_exit(end_now, NULL);
        registered = 1;
    }
    int nops = 0;
    char **ops = asn_xcalloc((size_t)argc + 1, sizeof *ops);
    int only_operands = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (only_operands || a[0] != '-' || a[1] == 0) {
            ops[nops++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_operands = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            asn_tool_help(t, stdout);
            exit(ASN_EXIT_OK);
        }
        if (!strcmp(a, "--version")) {
            printf("%s (asn) %s\n", t->name, ASN_VERSION);
            exit(ASN_EXIT_OK);
        }
        const asn_option *o = NULL;
        const char *val = NULL;
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            for (const asn_option *p = t->options; p && p->name; p++)
                if (spelled(p, name, len, 0))
                    o = p;
            if (!o)
                asn_usage_error("unknown option '%.*s'", (int)len + 2, a);
            if (eq) {
                if (o->type == ASN_OPT_FLAG)
                    asn_usage_error("option '--%.*s' takes no value", long_len(o), o->name);
                val = eq + 1;
            }
        } else {
            for (const asn_option *p = t->options; p && p->name; p++)
                if (spelled(p, a + 1, 1, 1))
                    o = p;
            if (!o)
                asn_usage_error("unknown option '-%c'", a[1]);
            if (a[2]) {
                if (o->type == ASN_OPT_FLAG)
                    asn_usage_error("option '-%c' takes no value", a[1]);
                val = a + 2;
            }
        }
        if (o->type != ASN_OPT_FLAG && !val) {
            if (i + 1 >= argc)
                asn_usage_error("option '%s' needs a value (%s)", a, o->arg);
            val = argv[++i];
        }
        set_value(o, val, a);
    }
    for (int i = 0; i < nops; i++)
        argv[1 + i] = ops[i];
    argv[1 + nops] = NULL;
    free(ops);
    return nops;
}

/* --------------------------------------------------------------- streams */

FILE *asn_open_in(const char *path)
{
    if (!strcmp(path, "-"))
        return stdin;
    FILE *f = fopen(path, "r");
    if (!f)
        asn_fatal("%s: %s", path, strerror(errno));
    return f;
}

/* Files written with asn_open_out: written under a temporary name in the
 * target's folder, renamed over the target by asn_close_out. Those not
 * renamed (the program failed) are removed at exit. */
typedef struct out_file {
    FILE *f;
    char *tmp;
} out_file;
static out_file outs[16];
static int n_outs;

static void drop_temps(void)
{
    for (int i = 0; i < n_outs; i++)
        if (outs[i].tmp) {
            unlink(outs[i].tmp);
            free(outs[i].tmp);
            outs[i].tmp = NULL;
        }
    n_outs = 0;
}

const char *asn_out_name(FILE *f, const char *path, char *buf, size_t n)
{
    if (path && strcmp(path, "-"))
        return path;
    /* stdout: name what it was redirected to, when that is a file */
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fileno(f));
    ssize_t k = readlink(link, target, sizeof target - 1);
    if (k > 0 && target[0] == '/') {
        target[k] = 0;
        snprintf(buf, n, "stdout (%s)", target);
        return buf;
    }
    return "stdout";
}

void asn_write_failed(FILE *f, const char *path, int err)
{
    char buf[4200];
    const char *name = asn_out_name(f, path, buf, sizeof buf);
    asn_fatal("%s: write error: %s", name, strerror(err ? err : EIO));
}

FILE *asn_open_out(const char *path)
{
    if (!strcmp(path, "-"))
        return stdout;
    if ((size_t)n_outs >= sizeof outs / sizeof *outs)
        asn_fatal("%s: too many output files", path);
    static int registered;
    if (!registered) {
        atexit(drop_temps);
        registered = 1;
    }
    size_t n = strlen(path) + 32;
    char *tmp = asn_xmalloc(n);
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int err = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        asn_fatal("%s: %s", path, strerror(err));
    }
    outs[n_outs++] = (out_file){f, tmp};
    return f;
}

int asn_fsync_dir(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = 0;
    else if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd) && errno != EINVAL ? -1 : 0;
    close(fd);
    return rc;
}

int asn_fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd) && errno != EINVAL ? -1 : 0;
    close(fd);
    return rc;
}

void asn_close_out(FILE *f, const char *path)
{
    errno = 0;
    int bad = fflush(f) != 0 || ferror(f);
    int err = errno;
    out_file *o = NULL;
    for (int i = 0; i < n_outs; i++)
        if (outs[i].f == f && outs[i].tmp)
            o = &outs[i];
    if (!o) { /* stdout (or a stream not opened by asn_open_out) */
        if (f != stdout && fclose(f) != 0 && !bad)
            bad = 1, err = errno;
        if (bad)
            asn_write_failed(f, path, err);
        return;
    }
    /* the data on disk before the name: a crash leaves the old file or the
     * new one, never a part */
    if (!bad && fsync(fileno(f)) != 0 && errno != EINVAL)
        bad = 1, err = errno;
    if (fclose(f) != 0 && !bad)
        bad = 1, err = errno;
    o->f = NULL;
    if (!bad && rename(o->tmp, path) != 0)
        bad = 1, err = errno;
    if (bad) {
        unlink(o->tmp);
        asn_fatal("%s: write error: %s", path, strerror(err ? err : EIO));
    }
    free(o->tmp);
    o->tmp = NULL;
    asn_fsync_dir(path);
}

char *asn_read_all(const char *path, size_t *len)
{
    char *buf;
    asn_err e;
    if (asn_read_file(path, &buf, len, &e))
        asn_fatal("%s", e.msg);
    return buf;
}

/* ---------------------------------------------------------- progress bar */

struct asn_progress {
    char label[64];
    long total, done;
    long requests, tokens; /* asn_progress_rates: -1 until set */
    double t0, last;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

asn_progress *asn_progress_new(const char *label, long total, int force)
{
    if (!force && !isatty(2))
        return NULL;
    asn_progress *p = asn_xcalloc(1, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label);
    p->total = total;
    p->requests = p->tokens = -1;
    p->t0 = p->last = now();
    return p;
}

static void progress_draw(asn_progress *p, double t)
{
    double el = t - p->t0, rate = el > 0 ? (double)p->done / el : 0;
    fprintf(stderr, "\r%s: %ld", p->label, p->done);
    if (p->total > 0) {
        double frac = (double)p->done / (double)p->total;
        int w = 24, fill = (int)(frac * w + 0.5);
        fprintf(stderr, "/%ld [%.*s%*s] %3.0f%%", p->total, fill,
                "########################", w - fill, "", 100 * frac);
        if (rate > 0)
            fprintf(stderr, " ETA %.0fs", (double)(p->total - p->done) / rate);
    }
    fprintf(stderr, " %.1f/s", rate);
    if (p->requests >= 0 && el > 0)
        fprintf(stderr, " %.0f requests/s %.0f tokens/s", (double)p->requests / el, (double)p->tokens / el);
    fprintf(stderr, "  ");
}

void asn_progress_rates(asn_progress *p, long requests, long tokens)
{
    if (!p)
        return;
    p->requests = requests;
    p->tokens = tokens;
}

void asn_progress_add(asn_progress *p, long n)
{
    if (!p)
        return;
    p->done += n;
    double t = now();
    if (t - p->last >= 0.2) {
        p->last = t;
        progress_draw(p, t);
    }
}

void asn_progress_done(asn_progress *p)
{
    if (!p)
        return;
    progress_draw(p, now());
    fputc('\n', stderr);
    free(p);
}

/* ----------------------------------------------------------- long runs */

double asn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *asn_derived_path(const char *output, const char *suffix)
{
    size_t n = strlen(output);
    if (n > 5 && !strcmp(output + n - 5, ".gguf"))
        n -= 5;
    char *s = asn_xmalloc(n + strlen(suffix) + 1);
    memcpy(s, output, n);
    strcpy(s + n, suffix);
    return s;
}

static volatile sig_atomic_t stop_signal;
static const char *stop_hint = "";

void asn_stop_hint(const char *hint) { stop_hint = hint ? hint : ""; }
static void on_stop(int sig) { stop_signal = sig; }

void asn_catch_stop(void)
{
    /* SA_RESETHAND: the first signal asks for a stop, a second one ends the
     * program at once (a tool blocked reading a terminal or a pipe) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int asn_stop_requested(void) { return (int)stop_signal; }

void asn_stop_point(long done, const char *what)
{
    int sig = (int)stop_signal;
    if (!sig)
        return;
    errno = 0;
    if (fflush(stdout) || ferror(stdout))
        asn_write_failed(stdout, "-", errno);
    asn_fatal("stopped by %s after %ld %s (the output ends with the last whole one)%s",
              sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", done, what, stop_hint);
}
