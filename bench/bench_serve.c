/* bench_serve.c — a load test of serve on loopback, bounded in count and
 * time: requests/s, generated tokens/s and p50/p99 latency with 1, 8 and 64
 * clients in flight (libcurl multi), every request asking for exactly
 * NEW_TOKENS tokens; gen-candidates --model on the same work (the same
 * prompts, heuristic, token counts) beside it; and one seeded request sent
 * alone, then again 8 times among the 64 clients' requests, must return
 * the same tokens each time.
 *
 * usage: bench_serve [BIN_DIR [MODEL.gguf [NEW_TOKENS [THREADS]]]]
 *        (defaults: bin, examples/models/demo-base.gguf, 32, 1) */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *PROMPTS[] = {
    "And it came to pass in those days, that the king", "Blessed are they that",
    "In the beginning of the reign of", "And the LORD spake unto Moses, saying,",
    "Now these are the generations of", "And he said unto them,", "Hear, O Israel:",
    "The word of the LORD came unto me, saying,",
};
enum { N_PROMPTS = sizeof PROMPTS / sizeof *PROMPTS };

typedef struct xfer {
    CURL *h;
    char *buf;
    size_t len, cap;
    double t0;
    int probe;
    struct curl_slist *hdr;
} xfer;

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
    xfer *x = ctx;
    size_t k = size * n;
    if (x->len + k + 1 > x->cap) {
        x->cap = (x->len + k + 1) * 2;
        x->buf = realloc(x->buf, x->cap);
    }
    memcpy(x->buf + x->len, p, k);
    x->len += k;
    x->buf[x->len] = 0;
    return k;
}

static char *body_of(int i, int n_new, int probe)
{
    char *b = malloc(1024);
    snprintf(b, 1024,
             "{\"prompt\":\"%s\",\"max_tokens\":%d,\"min_tokens\":%d,\"seed\":%d,\"return_token_ids\":true,"
             "\"asn_prompt_id\":\"p%d\",\"asn_heuristic\":{\"name\":\"t0.8\",\"processors\":[{\"name\":\"temperature\","
             "\"params\":{\"temperature\":0.8}}]}}",
             PROMPTS[probe ? 0 : i % N_PROMPTS], n_new, n_new, probe ? 12345 : i / N_PROMPTS, probe ? 0 : i % N_PROMPTS);
    return b;
}

static xfer *start(CURLM *m, const char *url, const char *body, int probe)
{
    xfer *x = calloc(1, sizeof *x);
    x->h = curl_easy_init();
    x->probe = probe;
    x->hdr = curl_slist_append(NULL, "Content-Type: application/json");
    x->hdr = curl_slist_append(x->hdr, "Expect:");
    curl_easy_setopt(x->h, CURLOPT_URL, url);
    curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdr);
    curl_easy_setopt(x->h, CURLOPT_COPYPOSTFIELDS, body);
    curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
    curl_easy_setopt(x->h, CURLOPT_TIMEOUT, 120L);
    x->t0 = now();
    curl_multi_add_handle(m, x->h);
    return x;
}

/* The token_ids array of a response, as text (new), or NULL. */
static char *ids_of(const char *body)
{
    const char *p = body ? strstr(body, "\"token_ids\":[") : NULL;
    const char *q = p ? strchr(p, ']') : NULL;
    if (!q)
        return NULL;
    return strndup(p, (size_t)(q - p + 1));
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One level: n requests, c in flight, probes extra ones among them. */
static int level(const char *url, int c, int n, int n_new, int probes, const char *want, double limit_s,
                 double *rps, double *tps, double *p50, double *p99, int *same)
{
    CURLM *m = curl_multi_init();
    double *lat = calloc((size_t)(n + probes + 1), sizeof *lat), t0 = now();
    int sent = 0, inflight = 0, probes_sent = 0, bad = 0, nlat = 0;
    *same = 1;
    while (inflight > 0 || (sent < n && now() - t0 < limit_s)) {
        while (inflight < c && sent < n && now() - t0 < limit_s) {
            int probe = probes_sent < probes && sent >= (probes_sent + 1) * n / (probes + 1);
            char *b = body_of(sent, n_new, probe);
            start(m, url, b, probe);
            free(b);
            inflight++;
            if (probe)
                probes_sent++;
            else
                sent++;
        }
        int running;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            xfer *x;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            long code = 0;
            curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
            char *ids = ids_of(x->buf);
            if (msg->data.result != CURLE_OK || code != 200 || !ids) {
                bad++;
            } else if (x->probe) {
                *same &= !strcmp(ids, want);
            } else {
                lat[nlat++] = now() - x->t0;
            }
            free(ids);
            curl_multi_remove_handle(m, x->h);
            curl_easy_cleanup(x->h);
            curl_slist_free_all(x->hdr);
            free(x->buf);
            free(x);
            inflight--;
        }
        curl_multi_poll(m, NULL, 0, 20, NULL);
    }
    double dt = now() - t0;
    qsort(lat, (size_t)nlat, sizeof *lat, cmp_d);
    *rps = nlat / dt;
    *tps = (double)nlat * n_new / dt;
    *p50 = nlat ? lat[(nlat - 1) / 2] : 0;
    *p99 = nlat ? lat[(int)((nlat - 1) * 0.99 + 0.5)] : 0;
    free(lat);
    curl_multi_cleanup(m);
    *same &= probes_sent == probes || !probes;
    return bad ? -1 : nlat;
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : "bin";
    const char *model = argc > 2 ? argv[2] : "examples/models/demo-base.gguf";
    int n_new = argc > 3 ? atoi(argv[3]) : 32;
    const char *threads = argc > 4 ? argv[4] : "1";
    char dir[512], path[700], pfile[700], cmd[4096];
    const char *tmpdir = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/bench_serve.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir))
        return perror("mkdtemp"), 1;
    snprintf(pfile, sizeof pfile, "%s/port", dir);
    snprintf(path, sizeof path, "%s/serve", bin);
    pid_t sp = fork();
    if (sp == 0) {
        freopen("/dev/null", "w", stderr);
        execl(path, path, "-m", model, "--port", "0", "--port-file", pfile, "-t", threads, "--batch", "64", "--queue",
              "256", (char *)NULL);
        _exit(127);
    }
    int port = 0;
    for (int i = 0; i < 400 && !port; i++) {
        FILE *f = fopen(pfile, "r");
        if (!f || fscanf(f, "%d", &port) != 1)
            port = 0;
        if (f)
            fclose(f);
        if (!port)
            usleep(50000);
    }
    if (!port) {
        fprintf(stderr, "bench_serve: serve did not start\n");
        kill(sp, SIGKILL);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/completions", port);

    /* the probe alone */
    CURLM *m = curl_multi_init();
    char *pb = body_of(0, n_new, 1);
    xfer *x = start(m, url, pb, 1);
    free(pb);
    for (int running = 1; running;) {
        curl_multi_perform(m, &running);
        if (running)
            curl_multi_poll(m, NULL, 0, 20, NULL);
    }
    char *want = ids_of(x->buf);
    curl_multi_remove_handle(m, x->h);
    curl_easy_cleanup(x->h);
    curl_slist_free_all(x->hdr);
    free(x->buf);
    free(x);
    curl_multi_cleanup(m);
    if (!want) {
        fprintf(stderr, "bench_serve: the probe request failed\n");
        kill(sp, SIGKILL);
        return 1;
    }

    printf("bench_serve: serve -t %s --batch 64, %s, %d new tokens per request (min_tokens = max_tokens)\n", threads,
           model, n_new);
    printf("  %-8s %8s %10s %10s %9s %9s\n", "clients", "requests", "requests/s", "tokens/s", "p50 ms", "p99 ms");
    static const int C[3] = {1, 8, 64}, N[3] = {8, 48, 256};
    int all_same = 1, rc = 0;
    double tps64 = 0;
    for (int k = 0; k < 3; k++) {
        double rps, tps, p50, p99;
        int same, probes = C[k] == 64 ? 8 : 0;
        int got = level(url, C[k], N[k], n_new, probes, want, 20.0, &rps, &tps, &p50, &p99, &same);
        if (got < 0)
            rc = 1;
        all_same &= same;
        tps64 = tps;
        printf("  %-8d %8d %10.1f %10.0f %9.1f %9.1f%s\n", C[k], got < 0 ? 0 : got, rps, tps, p50 * 1e3, p99 * 1e3,
               got < 0 ? "  (failed requests)" : "");
    }
    printf("  the seeded probe request under load (8 times among 64 clients): %s\n",
           all_same ? "identical tokens" : "DIFFERENT tokens");
    kill(sp, SIGTERM);
    waitpid(sp, NULL, 0);

    /* gen-candidates --model on the same work as the 64-client level */
    char pp[700], hp[700];
    snprintf(pp, sizeof pp, "%s/p.jsonl", dir);
    snprintf(hp, sizeof hp, "%s/h.yaml", dir);
    FILE *f = fopen(pp, "w");
    for (int i = 0; i < N_PROMPTS; i++)
        fprintf(f, "{\"id\":\"p%d\",\"prompt\":\"%s\"}\n", i, PROMPTS[i]);
    fclose(f);
    f = fopen(hp, "w");
    fprintf(f, "sampling_pipelines:\n  - name: t0.8\n    processors:\n      - {name: temperature, params: {temperature: 0.8}}\n");
    fclose(f);
    int seeds = 256 / N_PROMPTS;
    snprintf(cmd, sizeof cmd, "'%s/gen-candidates' -m '%s' -H '%s' --seeds 0-%d -n %d --min-new-tokens %d -t %s -b 64 '%s' > /dev/null 2>&1",
             bin, model, hp, seeds - 1, n_new, n_new, threads, pp);
    double t0 = now();
    int gst = system(cmd);
    double dt = now() - t0;
    printf("  gen-candidates --model, the same work (%d candidates; wall time, model load included): %.0f tokens/s%s;\n"
           "  serve at 64 clients: %.0f%% of it\n",
           N_PROMPTS * seeds, (double)N_PROMPTS * seeds * n_new / dt, gst ? " (FAILED)" : "",
           100.0 * tps64 / ((double)N_PROMPTS * seeds * n_new / dt));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) {
    }
    free(want);
    return rc || !all_same || gst;
}
