/* http_server.c — asn/http.h over libmicrohttpd: bodies collected within a
 * limit, one handler call per request, whole or streamed answers. */
#include "asn/http.h"
#include "asn/sbuf.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct asn_http_server {
    struct MHD_Daemon *d;
    asn_http_handler h;
    void *ctx;
    size_t max_body;
    int port;
};

typedef struct conn {
    asn_sbuf body; /* the request's body so far */
    int too_big;
} conn;

typedef struct streamed {
    asn_http_response r;
} streamed;

void asn_http_json(asn_http_response *out, int status, char *body)
{
    out->status = status;
    out->content_type = "application/json";
    out->body = body;
    out->len = strlen(body);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    streamed *s = cls;
    (void)pos;
    ssize_t k = s->r.read(s->r.ctx, buf, max);
    return k > 0 ? k : k == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls)
{
    streamed *s = cls;
    if (s->r.done)
        s->r.done(s->r.ctx);
    free(s);
}

static enum MHD_Result queue(struct MHD_Connection *c, asn_http_response *r)
{
    struct MHD_Response *resp;
    if (r->read) {
        streamed *s = asn_xmalloc(sizeof *s);
        s->r = *r;
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, s, stream_free);
        if (!resp) {
            stream_free(s);
            return MHD_NO;
        }
    } else {
        resp = MHD_create_response_from_buffer(r->len, r->body ? r->body : (char *)"", MHD_RESPMEM_MUST_FREE);
        if (!r->body)
            r->body = NULL;
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
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    asn_http_server *srv = cls;
    (void)version;
    conn *k = *con_cls;
    if (!k) {
        *con_cls = asn_xcalloc(1, sizeof(conn));
        return MHD_YES;
    }
    if (*upload_size) {
        if (k->body.len + *upload_size > srv->max_body)
            k->too_big = 1;
        else
            asn_sbuf_add(&k->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    asn_http_response r = {0};
    if (k->too_big) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "{\"error\":{\"message\":\"the body is larger than the limit of %zu bytes\","
                 "\"type\":\"invalid_request_error\",\"param\":null,\"code\":413}}",
                 srv->max_body);
        asn_http_json(&r, 413, asn_xstrdup(msg));
        return queue(c, &r);
    }
    asn_sbuf_grow(&k->body, 0);
    asn_http_request rq = {method, url, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
                           k->body.buf, k->body.len};
    srv->h(srv->ctx, &rq, &r);
    return queue(c, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    conn *k = *con_cls;
    (void)cls, (void)c, (void)t;
    if (k) {
        asn_sbuf_release(&k->body);
        free(k);
    }
    *con_cls = NULL;
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
    srv->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
                              on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)(s->max_connections > 0 ? s->max_connections : 64),
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(s->timeout_s > 0 ? s->timeout_s : 60),
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
    if (!srv->d) {
        asn_err_set(e, "cannot listen on %s:%d (address in use?)", host, s->port);
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
    MHD_stop_daemon(srv->d);
    free(srv);
}
