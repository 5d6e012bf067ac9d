/* client.c — many requests in flight over several servers (libcurl multi):
 * rotation, timeouts, retries with backoff, servers that stop answering
 * left out for a while, then tried again. */
#include "asn/client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "asn/tool.h"
#include "asn/sbuf.h"

typedef struct server {
    char *url;
    double down_until, backoff;
    int limit, inflight; /* most requests in flight here (0: no limit of its own) */
} server;

struct asn_client {
    asn_client_settings s;
    server *sv;
    char *auth;
    CURLM *m;
    long sent, retried;
    int rr;
};

typedef struct xfer {
    CURL *h;
    int req, srv;
    asn_sbuf body; /* the answer so far */
    struct curl_slist *hdr;
} xfer;

typedef struct retry {
    int req;
    double at;
} retry;

/* libcurl's global start, once per process (curl_global_init is not
 * thread-safe; clients may be made from several threads). */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_started;
static void curl_start(void) { curl_started = curl_global_init(CURL_GLOBAL_DEFAULT); }

asn_client *asn_client_new(const asn_client_settings *s, asn_err *e)
{
    if (s->n_urls < 1)
        return asn_err_set(e, "no server"), NULL;
    pthread_once(&curl_once, curl_start);
    if (curl_started)
        return asn_err_set(e, "libcurl cannot start"), NULL;
    asn_client *c = asn_xcalloc(1, sizeof *c);
    c->s = *s;
    if (c->s.max_inflight < 1)
        c->s.max_inflight = 1;
    c->sv = asn_xcalloc((size_t)s->n_urls, sizeof *c->sv);
    for (int i = 0; i < s->n_urls; i++) {
        size_t l = strlen(s->urls[i]);
        while (l && s->urls[i][l - 1] == '/')
            l--;
        c->sv[i].url = asn_xmalloc(l + 1);
        memcpy(c->sv[i].url, s->urls[i], l);
        c->sv[i].url[l] = 0;
        if (strncmp(c->sv[i].url, "http://", 7) && strncmp(c->sv[i].url, "https://", 8)) {
            asn_err_set(e, "server \"%s\": not an http:// or https:// URL", s->urls[i]);
            c->s.n_urls = i + 1;
            asn_client_free(c);
            return NULL;
        }
        c->sv[i].backoff = 0.25;
    }
    if (s->api_key) {
        size_t n = strlen(s->api_key) + 32;
        c->auth = asn_xmalloc(n);
        snprintf(c->auth, n, "Authorization: Bearer %s", s->api_key);
    }
    c->m = curl_multi_init();
    curl_multi_setopt(c->m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)c->s.max_inflight);
    return c;
}

void asn_client_free(asn_client *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->s.n_urls; i++)
        free(c->sv[i].url);
    free(c->sv);
    free(c->auth);
    if (c->m)
        curl_multi_cleanup(c->m);
    free(c);
}

void asn_client_counts(const asn_client *c, long *sent, long *retried)
{
    *sent = c->sent;
    *retried = c->retried;
}

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
    xfer *x = ctx;
    size_t k = size * n;
    asn_sbuf_add(&x->body, p, k);
    return k;
}

static xfer *start(asn_client *c, int srv, const char *path, const char *body, int req)
{
    xfer *x = asn_xcalloc(1, sizeof *x);
    x->h = curl_easy_init();
    x->req = req;
    x->srv = srv;
    char url[2048];
    snprintf(url, sizeof url, "%s%s", c->sv[srv].url, path);
    x->hdr = curl_slist_append(NULL, body ? "Content-Type: application/json" : "Accept: application/json");
    if (c->auth)
        x->hdr = curl_slist_append(x->hdr, c->auth);
    x->hdr = curl_slist_append(x->hdr, "Expect:");
    curl_easy_setopt(x->h, CURLOPT_URL, url);
    curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdr);
    if (body) {
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, (long)(c->s.timeout_s * 1000));
    curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
    c->sent++;
    return x;
}

static void xfer_free(xfer *x)
{
    curl_easy_cleanup(x->h);
    curl_slist_free_all(x->hdr);
    asn_sbuf_release(&x->body);
    free(x);
}

/* The server's error message, or the start of its body. */
static void describe(const xfer *x, long code, CURLcode rc, char *out, size_t cap)
{
    if (rc != CURLE_OK) {
        snprintf(out, cap, "%s", curl_easy_strerror(rc));
        return;
    }
    json_t *o = x->body.buf ? json_loads(x->body.buf, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
    if (!msg)
        msg = json_string_value(json_object_get(o, "error"));
    snprintf(out, cap, "HTTP %ld: %.300s", code, msg ? msg : asn_sbuf_str(&x->body));
    json_decref(o);
}

static int pick_server(asn_client *c, double now, int avoid)
{
    int n = c->s.n_urls, best = -1;
    for (int k = 0; k < n; k++) {
        int i = (c->rr + k) % n;
        if (c->sv[i].down_until > now || (c->sv[i].limit > 0 && c->sv[i].inflight >= c->sv[i].limit))
            continue;
        if (i == avoid && n > 1 && best < 0) {
            best = -2 - i; /* only if nothing else is up */
            continue;
        }
        c->rr = (i + 1) % n;
        return i;
    }
    return best <= -2 ? -2 - best : -1;
}

/* New transfers started per pass of the loop below. */
enum { RAMP = 8 };

int asn_client_post_all(asn_client *c, const char *path, char *const *bodies, int n, asn_client_done done,
                        void *ctx, asn_err *e)
{
    int *tries = asn_xcalloc((size_t)(n ? n : 1), sizeof *tries), *last_srv = asn_xmalloc((size_t)(n ? n : 1) * sizeof *last_srv);
    int *fifo = asn_xmalloc((size_t)(n ? n : 1) * sizeof *fifo);
    size_t f_head = 0, f_n = 0, r_n = 0, r_cap = 0;
    retry *rt = NULL;
    for (int i = 0; i < n; i++) {
        fifo[f_n++] = i;
        last_srv[i] = -1;
    }
    int ndone = 0, inflight = 0, rc = -1;
    xfer **live = asn_xcalloc((size_t)c->s.max_inflight, sizeof *live); /* in flight, by slot */
    while (ndone < n) {
        double now = asn_now();
        for (size_t k = 0; k < r_n;) { /* due retries join the queue */
            if (rt[k].at <= now) {
                if (f_head > 0 && f_head == f_n)
                    f_head = f_n = 0;
                if (f_n == (size_t)n) { /* compact */
                    memmove(fifo, fifo + f_head, (f_n - f_head) * sizeof *fifo);
                    f_n -= f_head;
                    f_head = 0;
                }
                fifo[f_n++] = rt[k].req;
                rt[k] = rt[--r_n];
            } else {
                k++;
            }
        }
        /* a few requests at a time between transfers: each new connection costs
         * its set-up, and the first requests go out before the last connect */
        int added = 0;
        for (; added < RAMP && inflight < c->s.max_inflight && f_head < f_n; added++) {
            int req = fifo[f_head];
            int srv = pick_server(c, now, last_srv[req]);
            if (srv < 0)
                break;
            f_head++;
            last_srv[req] = srv;
            xfer *x = start(c, srv, path, bodies[req], req);
            for (int k = 0; k < c->s.max_inflight; k++)
                if (!live[k]) {
                    live[k] = x;
                    break;
                }
            curl_multi_add_handle(c->m, x->h);
            inflight++;
            c->sv[srv].inflight++;
        }
        int running;
        curl_multi_perform(c->m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(c->m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            xfer *x;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            CURLcode res = msg->data.result;
            long code = 0;
            curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
            curl_multi_remove_handle(c->m, x->h);
            inflight--;
            c->sv[x->srv].inflight--;
            for (int k = 0; k < c->s.max_inflight; k++)
                if (live[k] == x)
                    live[k] = NULL;
            server *sv = &c->sv[x->srv];
            now = asn_now();
            if (res == CURLE_OK && code / 100 == 2) {
                sv->backoff = 0.25;
                if (done(ctx, x->req, asn_sbuf_str(&x->body), x->body.len, e)) {
                    xfer_free(x);
                    goto out;
                }
                ndone++;
                xfer_free(x);
                continue;
            }
            char why[512];
            describe(x, code, res, why, sizeof why);
            if (res == CURLE_COULDNT_CONNECT || res == CURLE_GOT_NOTHING || res == CURLE_RECV_ERROR ||
                res == CURLE_SEND_ERROR || res == CURLE_OPERATION_TIMEDOUT) {
                if (sv->down_until <= now) { /* out of rotation for a while */
                    sv->down_until = now + sv->backoff;
                    sv->backoff = sv->backoff * 2 < 30 ? sv->backoff * 2 : 30;
                }
            }
            int transient = res != CURLE_OK || code == 429 || code >= 500;
            if (!transient) {
                asn_err_set(e, "%s%s: %s", sv->url, path, why);
                xfer_free(x);
                goto out;
            }
            if (++tries[x->req] > c->s.retries) {
                asn_err_set(e, "%s%s: request %d failed %d times, last: %s", sv->url, path, x->req,
                            tries[x->req], why);
                xfer_free(x);
                goto out;
            }
            c->retried++;
            curl_off_t ra = 0;
            double delay = 0.1 * (1 << (tries[x->req] < 7 ? tries[x->req] - 1 : 6));
            if (curl_easy_getinfo(x->h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
                delay = ra < 30 ? (double)ra : 30;
            asn_grow((void **)&rt, &r_cap, r_n + 1, sizeof *rt);
            rt[r_n++] = (retry){x->req, now + delay};
            xfer_free(x);
        }
        if (ndone == n)
            break;
        int wait_ms = added == RAMP ? 0 : 50; /* more to start: no waiting */
        if (!inflight) { /* nothing to wait on: sleep until a retry or a server is due */
            double next = 1e30;
            for (size_t k = 0; k < r_n; k++)
                next = rt[k].at < next ? rt[k].at : next;
            if (f_head < f_n)
                for (int i = 0; i < c->s.n_urls; i++)
                    next = c->sv[i].down_until < next ? c->sv[i].down_until : next;
            double d = next - asn_now();
            wait_ms = d <= 0 ? 0 : d > 1 ? 1000 : (int)(d * 1000) + 1;
        }
        curl_multi_poll(c->m, NULL, 0, wait_ms, NULL);
    }
    rc = 0;
out:
    for (int i = 0; i < c->s.n_urls; i++)
        c->sv[i].inflight = 0;
    for (int k = 0; k < c->s.max_inflight; k++) /* what is still in flight is dropped */
        if (live[k]) {
            curl_multi_remove_handle(c->m, live[k]->h);
            xfer_free(live[k]);
        }
    free(live);
    free(tries);
    free(last_srv);
    free(fifo);
    free(rt);
    return rc;
}

void asn_client_set_limit(asn_client *c, int srv, int limit)
{
    if (srv >= 0 && srv < c->s.n_urls)
        c->sv[srv].limit = limit > 0 ? limit : 0;
}

int asn_client_n_servers(const asn_client *c)
{
    return c->s.n_urls;
}

const char *asn_client_url(const asn_client *c, int srv)
{
    return srv >= 0 && srv < c->s.n_urls ? c->sv[srv].url : "";
}

/* GET path from server srv (-1: the first that answers, in turn). */
static int get(asn_client *c, int srv, const char *path, char **body, size_t *len, long *status, asn_err *e)
{
    char why[512] = "no server";
    int at = srv < 0 ? 0 : srv;
    *status = 0;
    for (int tries = 0; tries < 3 + c->s.retries; tries++) {
        at = srv < 0 ? tries % c->s.n_urls : srv;
        xfer *x = start(c, at, path, NULL, 0);
        c->sent--; /* counts generation requests only */
        CURLcode res = curl_easy_perform(x->h);
        long code = 0;
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
        if (res == CURLE_OK && code == 200) {
            *body = asn_sbuf_detach(&x->body, len);
            xfer_free(x);
            *status = 200;
            return 0;
        }
        describe(x, code, res, why, sizeof why);
        xfer_free(x);
        if (res == CURLE_OK && code / 100 == 4 && code != 429) {
            *status = code;
            break;
        }
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
    }
    return asn_err_set(e, "%s%s: %s", c->sv[at].url, path, why);
}

int asn_client_get(asn_client *c, const char *path, char **body, size_t *len, asn_err *e)
{
    long status;
    return get(c, -1, path, body, len, &status, e);
}

int asn_client_get_at(asn_client *c, int srv, const char *path, char **body, size_t *len, long *status, asn_err *e)
{
    return get(c, srv, path, body, len, status, e);
}
