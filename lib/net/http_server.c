/* http_server.c — asn/http.h over libmicrohttpd: bodies collected within a
 * limit, one handler call per request, answers whole, streamed or later.
 *
 * One thread polls every connection (epoll where there is one), and no
 * connection has a thread of its own. A request that waits for its answer
 * (the engine's tokens) suspends its connection; asn_http_wake, from the
 * thread that has the answer, resumes it, and the polling thread asks again.
 * With a thread per connection, each finished request woke a thread of its
 * own beside the engine's: on two cores serve then spent about 13% more CPU
 * than gen-candidates --model on the same work, all of it scheduling. A
 * handler and a reader therefore never block: they answer now, or say
 * "later" and are called again after a wake. */
#include "asn/http.h"
#include "asn/sbuf.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct asn_http_server {
    struct MHD_Daemon *d;
    asn_http_handler h;
    void *ctx;
    size_t max_body;
    int port;
    pthread_mutex_t mu;     /* every request's suspended and woken, the list */
    asn_http_conn *live;    /* requests not yet completed */
    int stopping;           /* no more suspending: every wait ends */
};

/* One request on a connection (libmicrohttpd's per-request pointer). */
struct asn_http_conn {
    asn_http_server *srv;
    struct MHD_Connection *c;
    asn_sbuf body;          /* the request's body so far */
    int too_big;
    int handled;            /* the handler ran */
    asn_http_response r;    /* a later answer (r.later) or a streamed one (r.read) */
    int owes_done;          /* r.done(r.ctx) is still to be called */
    int suspended, woken;   /* srv->mu */
    int refs;               /* the request, and a streamed answer's reader */
    asn_http_conn *prev, *next;
};

void asn_http_json(asn_http_response *out, int status, char *body)
{
    out->status = status;
    out->content_type = "application/json";
    out->body = body;
    out->len = strlen(body);
}

void asn_http_wake(asn_http_conn *k)
{
    asn_http_server *srv = k->srv;
    pthread_mutex_lock(&srv->mu);
    if (k->suspended) {
        k->suspended = 0;
        MHD_resume_connection(k->c);
    } else {
        k->woken = 1;
    }
    pthread_mutex_unlock(&srv->mu);
}

/* Before asking the handler again: wakes from now on count. */
static void clear_woken(asn_http_conn *k)
{
    pthread_mutex_lock(&k->srv->mu);
    k->woken = 0;
    pthread_mutex_unlock(&k->srv->mu);
}

/* After "later": 1 if the connection is suspended until a wake, 0 if a wake
 * (or the server's stop) came meanwhile and the answer is to be asked for
 * again. Called from the request or reader callback, as libmicrohttpd
 * requires of MHD_suspend_connection. */
static int suspend(asn_http_conn *k)
{
    asn_http_server *srv = k->srv;
    pthread_mutex_lock(&srv->mu);
    int wait = !k->woken && !srv->stopping;
    if (wait) {
        k->suspended = 1;
        MHD_suspend_connection(k->c);
    }
    pthread_mutex_unlock(&srv->mu);
    return wait;
}

/* The answer's owner lets go of its ctx (once). */
static void release(asn_http_conn *k)
{
    if (k->owes_done) {
        k->owes_done = 0;
        if (k->r.done)
            k->r.done(k->r.ctx);
    }
}

static void conn_unref(asn_http_conn *k)
{
    if (--k->refs)
        return;
    asn_sbuf_release(&k->body);
    free(k);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    asn_http_conn *k = cls;
    (void)pos;
    for (;;) {
        clear_woken(k);
        ssize_t n = k->r.read(k->r.ctx, buf, max);
        if (n > 0)
            return n;
        if (n == 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (n != ASN_HTTP_LATER)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (suspend(k))
            return 0; /* asked again after the wake */
    }
}

static void stream_free(void *cls)
{
    asn_http_conn *k = cls;
    release(k);
    conn_unref(k);
}

static enum MHD_Result queue(asn_http_conn *k, asn_http_response *r)
{
    struct MHD_Response *resp;
    if (r->read) {
        k->r = *r;
        k->owes_done = 1;
        k->refs++;
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, k, stream_free);
        if (!resp) {
            stream_free(k);
            return MHD_NO;
        }
    } else {
        resp = MHD_create_response_from_buffer(r->len, r->body ? r->body : (char *)"", MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(r->body);
            return MHD_NO;
        }
    }
    MHD_add_response_header(resp, "Content-Type", r->content_type ? r->content_type : "application/json");
    if (r->read)
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
    if (r->retry_after > 0) {
        char ra[24];
        snprintf(ra, sizeof ra, "%d", r->retry_after);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    enum MHD_Result rc = MHD_queue_response(k->c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* The handler's answer, or its later one: queued, or the connection
 * suspended until a wake. */
static enum MHD_Result answer(asn_http_conn *k, asn_http_response *r)
{
    while (r->later) {
        k->r = *r;
        k->owes_done = 1;
        if (suspend(k))
            return MHD_YES; /* on_request again after the wake */
        clear_woken(k);
        asn_http_response next = {0};
        if (!k->r.later(k->r.ctx, &next))
            continue; /* still later: k->r as it was */
        k->owes_done = 0; /* later's ctx is the owner's again */
        *r = next;
    }
    return queue(k, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    asn_http_server *srv = cls;
    (void)version;
    asn_http_conn *k = *con_cls;
    if (!k) {
        k = asn_xcalloc(1, sizeof *k);
        k->srv = srv, k->c = c, k->refs = 1;
        pthread_mutex_lock(&srv->mu);
        k->next = srv->live;
        if (srv->live)
            srv->live->prev = k;
        srv->live = k;
        pthread_mutex_unlock(&srv->mu);
        *con_cls = k;
        return MHD_YES;
    }
    if (k->handled) { /* resumed: is the later answer ready? */
        clear_woken(k);
        asn_http_response r = {0};
        if (!k->r.later(k->r.ctx, &r))
            r = k->r;
        else
            k->owes_done = 0;
        return answer(k, &r);
    }
    if (*upload_size) {
        if (k->body.len + *upload_size > srv->max_body)
            k->too_big = 1;
        else
            asn_sbuf_add(&k->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    k->handled = 1;
    asn_http_response r = {0};
    if (k->too_big) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "{\"error\":{\"message\":\"the body is larger than the limit of %zu bytes\","
                 "\"type\":\"invalid_request_error\",\"param\":null,\"code\":413}}",
                 srv->max_body);
        asn_http_json(&r, 413, asn_xstrdup(msg));
        return queue(k, &r);
    }
    asn_sbuf_grow(&k->body, 0);
    asn_http_request rq = {method, url, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
                           k->body.buf, k->body.len, k};
    srv->h(srv->ctx, &rq, &r);
    return answer(k, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    asn_http_server *srv = cls;
    asn_http_conn *k = *con_cls;
    (void)c, (void)t;
    *con_cls = NULL;
    if (!k)
        return;
    pthread_mutex_lock(&srv->mu);
    if (k->prev)
        k->prev->next = k->next;
    else
        srv->live = k->next;
    if (k->next)
        k->next->prev = k->prev;
    pthread_mutex_unlock(&srv->mu);
    release(k); /* before k goes: the owner wakes it no more */
    conn_unref(k);
}

asn_http_server *asn_http_start(const asn_http_settings *s, asn_http_handler h, void *ctx, asn_err *e)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)s->port);
    const char *host = s->host ? s->host : "127.0.0.1";
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        asn_err_set(e, "--host: \"%s\" is not an IPv4 address", host);
        return NULL;
    }
    if (s->port < 0 || s->port > 65535) {
        asn_err_set(e, "--port: %d is not a port", s->port);
        return NULL;
    }
    asn_http_server *srv = asn_xcalloc(1, sizeof *srv);
    srv->h = h;
    srv->ctx = ctx;
    srv->max_body = s->max_body;
    pthread_mutex_init(&srv->mu, NULL);
    srv->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_request, srv,
                              MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
                              (unsigned)(s->max_connections > 0 ? s->max_connections : 64),
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(s->timeout_s > 0 ? s->timeout_s : 60),
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
    if (!srv->d) {
        asn_err_set(e, "cannot listen on %s:%d (address in use?)", host, s->port);
        pthread_mutex_destroy(&srv->mu);
        free(srv);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : s->port;
    return srv;
}

int asn_http_port(const asn_http_server *srv)
{
    return srv->port;
}

void asn_http_stop(asn_http_server *srv)
{
    if (!srv)
        return;
    /* libmicrohttpd stops only with no connection suspended: each is
     * resumed, and its handler or reader asked once more (the owner
     * answers that it is stopping) */
    pthread_mutex_lock(&srv->mu);
    srv->stopping = 1;
    for (asn_http_conn *k = srv->live; k; k = k->next)
        if (k->suspended) {
            k->suspended = 0;
            MHD_resume_connection(k->c);
        }
    pthread_mutex_unlock(&srv->mu);
    MHD_stop_daemon(srv->d);
    pthread_mutex_destroy(&srv->mu);
    free(srv);
}
