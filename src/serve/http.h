/* http.h - the server's HTTP side on libmicrohttpd (http.c): routes, API key, body
 * limits, streaming (SSE), receive deadlines, draining. Part of the server front end;
 * it logs only to the stream it is given. */
#ifndef LLMGEN_SERVE_HTTP_H
#define LLMGEN_SERVE_HTTP_H

#include <stddef.h>
#include <stdio.h>

#include "llmgen.h"
#include "cli/request.h"
#include "slots.h"

typedef struct {
    const char *host;          /* address to bind ("127.0.0.1", "::1", "0.0.0.0") */
    int port;                  /* 0: any free port (serve_http_port tells) */
    const char *api_key;       /* NULL: none asked */
    size_t max_body;           /* bytes of a request body */
    int timeout_s;             /* a request must arrive whole (headers and body) within this; idle connections too */
    int max_connections;
    int keepalive_ms;          /* an SSE comment when a stream has been quiet this long (a long prefill) */
    FILE *log;                 /* one line per event worth a line (start, errors); never NULL */
} serve_http_options;

typedef struct serve_http serve_http;

/* Listen (every route answers 503 until serve_http_ready). 0, or -1 with err (ERR_LEN bytes). */
int serve_http_start(const serve_http_options *o, serve_http **out, char *err);
int serve_http_port(const serve_http *H);
/* The model is loaded: serve it (name: what /v1/models lists; base: the defaults of a request). */
void serve_http_ready(serve_http *H, llmgen_model *m, serve_slots *S, const char *name, const request *base);
/* Stop accepting connections; requests on open ones get 503 (draining). */
void serve_http_drain(serve_http *H);
/* Drop connections whose request has not arrived whole within the timeout (slowloris). Call often. */
void serve_http_tick(serve_http *H);
/* Requests being answered, streams still sending included (a drain waits for them). */
int serve_http_busy(serve_http *H);
/* Stop the daemon (closes every connection) and free. NULL is fine. */
void serve_http_stop(serve_http *H);

#endif
