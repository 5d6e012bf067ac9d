/* bench_client.c — the client never holds a GPU back: gen-candidates
 * --server against a stub server on loopback that answers every request at
 * once (a forked process here, an epoll loop on another core), the client
 * pinned to one core. Prints generated tokens/s and requests/s of the whole
 * run (prompt tokens made, bodies written, responses parsed and checked,
 * texts made, records written) against the goals of 100k tokens/s and 1000
 * requests/s.
 *
 * usage: bench_client [BIN_DIR [TOKENIZER.gguf [PROMPTS [NEW_TOKENS]]]]
 *        (defaults: bin, examples/models/demo-base.gguf, 2000, 128) */
#include "asn/gguf.h"
#include "asn/vocab.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set); /* best effort */
}

/* ------------------------------------------------------------- the stub */

typedef struct conn {
    char *buf;
    size_t len, cap;
} conn;

/* Answers each complete request in c (keep-alive); returns -1 to close. */
static int serve_conn(int fd, conn *c, const char *models, size_t models_len, const char *gen, size_t gen_len)
{
    for (;;) {
        char *end = c->len ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
        if (!end)
            return 0;
        size_t head = (size_t)(end - c->buf) + 4, body = 0;
        char *cl = memmem(c->buf, head, "Content-Length:", 15);
        if (!cl)
            cl = memmem(c->buf, head, "content-length:", 15);
        if (cl)
            body = strtoul(cl + 15, NULL, 10);
        if (c->len < head + body)
            return 0;
        int get = !memcmp(c->buf, "GET ", 4);
        const char *msg = get ? models : gen;
        size_t ml = get ? models_len : gen_len;
        char hdr[160];
        int hl = snprintf(hdr, sizeof hdr, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", ml);
        if (write(fd, hdr, (size_t)hl) != hl)
            return -1;
        for (size_t off = 0; off < ml;) {
            ssize_t k = write(fd, msg + off, ml - off);
            if (k < 0 && errno == EAGAIN)
                continue;
            if (k <= 0)
                return -1;
            off += (size_t)k;
        }
        memmove(c->buf, c->buf + head + body, c->len - head - body);
        c->len -= head + body;
    }
}

static void stub(int lfd, const char *gen, const char *models)
{
    size_t gen_len = strlen(gen), models_len = strlen(models);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    conn *cs = calloc(65536, sizeof *cs);
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd) {
                int c;
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    int one = 1;
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
                }
                continue;
            }
            conn *c = &cs[fd & 65535];
            int bad = 0;
            for (;;) {
                if (c->cap < c->len + 65536) {
                    c->cap = c->len + 65536;
                    c->buf = realloc(c->buf, c->cap);
                }
                ssize_t k = read(fd, c->buf + c->len, c->cap - c->len);
                if (k > 0) {
                    c->len += (size_t)k;
                    continue;
                }
                bad = k == 0 || errno != EAGAIN;
                break;
            }
            if (!bad)
                bad = serve_conn(fd, c, models, models_len, gen, gen_len) < 0;
            if (bad) {
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
                c->len = 0;
            }
        }
    }
}

/* ------------------------------------------------------------- the run */

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : "bin";
    const char *model = argc > 2 ? argv[2] : "examples/models/demo-base.gguf";
    int n_prompts = argc > 3 ? atoi(argv[3]) : 2000, n_new = argc > 4 ? atoi(argv[4]) : 128, n_heur = 5;
    asn_err e;
    asn_gguf *g = asn_gguf_open(model, &e);
    asn_vocab *v = g ? asn_vocab_load(g, &e) : NULL;
    if (!v) {
        fprintf(stderr, "bench_client: %s\n", e.msg);
        return 1;
    }
    /* the answer: n_new ordinary tokens (a generation cut by its length) */
    const char *text = " And the king said unto them, Go ye and see the land which the LORD hath given";
    int32_t *ids;
    size_t nt;
    if (asn_tokenize(v, text, strlen(text), 0, 0, &ids, &nt, &e) || nt < 4) {
        fprintf(stderr, "bench_client: %s\n", e.msg);
        return 1;
    }
    size_t cap = (size_t)n_new * 12 + 256, len = 0;
    char *gen = malloc(cap);
    len += (size_t)snprintf(gen + len, cap - len, "{\"id\":\"cmpl-b\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
                                                  "\"text\":\"\",\"finish_reason\":\"length\",\"token_ids\":[");
    for (int i = 0; i < n_new; i++)
        len += (size_t)snprintf(gen + len, cap - len, i ? ",%d" : "%d", ids[(size_t)i % nt]);
    snprintf(gen + len, cap - len, "]}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":%d}}", n_new);
    const char *models = "{\"object\":\"list\",\"data\":[{\"id\":\"bench\",\"object\":\"model\",\"asn\":{\"sha256\":"
                         "\"0000000000000000000000000000000000000000000000000000000000000000\"}}]}";
    free(ids);
    asn_vocab_free(v);
    asn_gguf_close(g);

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 1024) || getsockname(lfd, (struct sockaddr *)&a, &al)) {
        perror("bench_client: listen");
        return 1;
    }
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    pid_t sp = fork();
    if (sp == 0) {
        pin(ncpu > 1 ? 1 : 0);
        stub(lfd, gen, models);
        _exit(0);
    }
    close(lfd);

    char dir[512], path[700], url[64], hpath[700], ppath[700];
    const char *tmpdir = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/bench_client.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(ppath, sizeof ppath, "%s/prompts.jsonl", dir);
    FILE *f = fopen(ppath, "w");
    for (int i = 0; i < n_prompts; i++)
        fprintf(f, "{\"id\":\"p%d\",\"prompt\":\"In the %d-th year of the reign of the king, it came to pass that\"}\n", i, i);
    fclose(f);
    snprintf(hpath, sizeof hpath, "%s/h.yaml", dir);
    f = fopen(hpath, "w");
    fprintf(f, "sampling_pipelines:\n");
    for (int i = 0; i < n_heur; i++)
        fprintf(f, "  - name: t%d\n    processors:\n      - {name: temperature, params: {temperature: %g}}\n      - {name: top_p, params: {top_p: 0.9}}\n",
                i, 0.5 + 0.25 * i);
    fclose(f);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    snprintf(path, sizeof path, "%s/gen-candidates", bin);
    char out[700], nn[16];
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    snprintf(nn, sizeof nn, "%d", n_new);
    double t0 = now();
    pid_t cp = fork();
    if (cp == 0) {
        pin(0);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execl(path, path, "--server", url, "--tokenizer", model, "-H", hpath, "--seeds", "0", "-n", nn,
              "--min-new-tokens", "0", "--max-inflight", "64", "-o", out, ppath, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(cp, &st, 0);
    double dt = now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    kill(sp, SIGKILL);
    waitpid(sp, NULL, 0);
    double cpu = (double)ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec + 1e-6 * ru.ru_stime.tv_usec;
    struct stat sb;
    long reqs = (long)n_prompts * n_heur, toks = reqs * n_new;
    long lines = 0;
    if ((f = fopen(out, "r"))) {
        for (int ch; (ch = getc(f)) != EOF;)
            lines += ch == '\n';
        fclose(f);
    }
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && !stat(out, &sb) && lines == reqs;
    printf("bench_client: gen-candidates --server, stub server answering at once, client on one core\n");
    printf("  %ld requests x %d tokens in %.3f s (client CPU %.3f s)%s\n", reqs, n_new, dt, cpu,
           ok ? "" : "  [the run FAILED]");
    printf("  requests/s  %10.0f   (goal >= 1000)  %s\n", reqs / dt, reqs / dt >= 1000 ? "ok" : "below");
    printf("  tokens/s    %10.0f   (goal >= 100000) %s\n", toks / dt, toks / dt >= 100000 ? "ok" : "below");
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    if (system(path)) {
    }
    free(gen);
    return ok ? 0 : 1;
}
