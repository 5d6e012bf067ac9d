/* asn/http.h — a small HTTP/1.1 server over GNU libmicrohttpd (Debian's
 * libmicrohttpd-dev): one thread polls every connection, request bodies
 * collected up to a limit (413 beyond it), one handler for every request,
 * answers whole, streamed (server-sent events) or later. Nothing the server
 * calls may block: an answer that waits on another thread says so
 * (ASN_HTTP_LATER, or a later callback), and that thread calls
 * asn_http_wake when there is news.
 *
 * libmicrohttpd does the parsing of request lines, headers, chunked bodies
 * and keep-alive: a hand-written parser is exactly where a server gets
 * attacked, and this library has been fuzzed and audited for years. */
#ifndef ASN_HTTP_H
#define ASN_HTTP_H

#include <stddef.h>
#include <sys/types.h>

#include "asn/core.h"

typedef struct asn_http_conn asn_http_conn;

/* A streamed answer's read: nothing yet, ask again after asn_http_wake. */
#define ASN_HTTP_LATER (-2)

typedef struct asn_http_request {
    const char *method, *path;  /* "POST", "/v1/completions" */
    const char *authorization;  /* the header, or NULL */
    const char *body;           /* NUL-terminated (the NUL not counted) */
    size_t len;
    asn_http_conn *conn;        /* the request, for asn_http_wake */
} asn_http_request;

typedef struct asn_http_response {
    int status;
    const char *content_type;   /* default "application/json" */
    char *body;                 /* whole answer (taken over, freed with free) */
    size_t len;
    int retry_after;            /* > 0: a Retry-After header (seconds) */
    /* or a streamed answer: read fills buf and returns bytes (> 0), 0 at
     * the end, -1 to cut the connection, ASN_HTTP_LATER for nothing yet
     * (it never blocks). done is called once the stream ends or the client
     * goes away; no asn_http_wake of the request after it. */
    ssize_t (*read)(void *ctx, char *buf, size_t max);
    void (*done)(void *ctx);
    void *ctx;
    /* or an answer not ready yet: later(ctx, out) is called after each
     * asn_http_wake of the request until it returns 1, having filled out
     * (whole or streamed) and let go of ctx; 0: not yet. If the request
     * ends first (the server stops), done(ctx) is called instead. */
    int (*later)(void *ctx, struct asn_http_response *out);
} asn_http_response;

typedef void (*asn_http_handler)(void *ctx, const asn_http_request *rq, asn_http_response *out);

typedef struct asn_http_settings {
    const char *host;       /* address to bind (default "127.0.0.1") */
    int port;               /* 0: any free port (asn_http_port says which) */
    size_t max_body;        /* larger bodies get 413 */
    int max_connections;
    int timeout_s;          /* idle connections closed after this */
} asn_http_settings;

typedef struct asn_http_server asn_http_server;

asn_http_server *asn_http_start(const asn_http_settings *s, asn_http_handler h, void *ctx, asn_err *e);
int asn_http_port(const asn_http_server *srv);
/* Resumes every waiting request (its later or read is asked once more and
 * must then answer), then stops. */
void asn_http_stop(asn_http_server *srv);

/* News for a request whose answer is later or streamed: its later or read
 * is asked again soon, on the server's thread. Safe from any thread, until
 * later returned 1 or done was called. */
void asn_http_wake(asn_http_conn *conn);

/* A JSON answer: status and a body (taken over). */
void asn_http_json(asn_http_response *out, int status, char *body);

#endif
