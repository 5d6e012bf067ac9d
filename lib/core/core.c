/* core.c — error messages, allocation that cannot fail and whole-file
 * reading (SHA-256 is sha256.c, the RNG rng.c). */
#include "asn/core.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---------------------------------------------------------------- errors */

int asn_err_set(asn_err *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int asn_err_prefix(asn_err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    char head[512], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    size_t h = strlen(head);
    if (h > sizeof e->msg - 3)
        h = sizeof e->msg - 3;
    memcpy(e->msg, head, h);
    memcpy(e->msg + h, ": ", 2);
    size_t room = sizeof e->msg - h - 3, o = strlen(old);
    memcpy(e->msg + h + 2, old, o < room ? o : room);
    e->msg[h + 2 + (o < room ? o : room)] = 0;
    return -1;
}

/* ------------------------------------------------------------ allocation */

double asn_mem_available(void)
{
    double avail = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        double kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
                avail = kb * 1024;
        fclose(f);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        double used = 0, pages;
        FILE *s = fopen("/proc/self/statm", "r");
        if (s && fscanf(s, "%lf", &pages) == 1)
            used = pages * (double)sysconf(_SC_PAGESIZE);
        if (s)
            fclose(s);
        double left = (double)rl.rlim_cur - used;
        if (left < 0)
            left = 0;
        if (avail < 0 || left < avail)
            avail = left;
    }
    return avail;
}

static _Thread_local const char *alloc_what;

const char *asn_alloc_context(const char *what)
{
    const char *old = alloc_what;
    alloc_what = what;
    return old;
}

/* A clear message and a failure exit (1), not a crash: the program's name,
 * the size, and what was being allocated when the caller said. */
static void oom(size_t n)
{
    char size[64];
    if (n >= (size_t)1 << 30)
        snprintf(size, sizeof size, "%.1f GiB", (double)n / (1 << 30));
    else if (n >= (size_t)1 << 20)
        snprintf(size, sizeof size, "%.1f MiB", (double)n / (1 << 20));
    else
        snprintf(size, sizeof size, "%zu bytes", n);
    fprintf(stderr, "%s: out of memory allocating %s%s%s (free memory, or raise ulimit -v)\n",
            program_invocation_short_name, size, alloc_what ? " for " : "", alloc_what ? alloc_what : "");
    exit(1);
}

void *asn_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *asn_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *asn_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *asn_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(asn_xmalloc(n), s, n);
}

void asn_grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    *p = asn_xrealloc(*p, c * size);
    *cap = c;
}

/* ----------------------------------------------------------------- files */

int asn_read_file(const char *path, char **data, size_t *len, asn_err *e)
{
    *data = NULL;
    *len = 0;
    int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return asn_err_set(e, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0, k;
    do {
        asn_grow((void **)&buf, &cap, n + 65537, 1);
        n += k = fread(buf + n, 1, cap - n - 1, f);
    } while (k > 0);
    int err = ferror(f) ? errno : 0;
    if (!is_stdin)
        fclose(f);
    if (err) {
        free(buf);
        return asn_err_set(e, "%s: read error: %s", path, strerror(err));
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}
