/* workspace.c — the per-thread scratch memory of the processors: rows of V
 * floats, sort keys, per-token marks and counts (sampling_internal.h). */
#include "sampling_internal.h"

#include <stdlib.h>
#include <string.h>

asn_workspace *asn_workspace_new(void) { return asn_xcalloc(1, sizeof(asn_workspace)); }

void asn_workspace_free(asn_workspace *ws)
{
    if (!ws)
        return;
    free(ws->e);
    free(ws->p);
    free(ws->f);
    free(ws->keys);
    free(ws->stamp);
    free(ws->count);
    free(ws->ord);
    asn_learned_ws_free(ws->learned);
    free(ws);
}

void asn_ws_reserve(asn_workspace *ws, int V)
{
    if (V <= ws->cap)
        return;
    size_t n = (size_t)V;
    ws->e = asn_xrealloc(ws->e, n * sizeof *ws->e);
    ws->p = asn_xrealloc(ws->p, n * sizeof *ws->p);
    ws->f = asn_xrealloc(ws->f, n * sizeof *ws->f);
    ws->keys = asn_xrealloc(ws->keys, n * sizeof *ws->keys);
    ws->ord = asn_xrealloc(ws->ord, n * sizeof *ws->ord);
    free(ws->stamp);
    ws->stamp = asn_xcalloc(n, sizeof *ws->stamp);
    ws->cur = 0;
    free(ws->count);
    ws->count = asn_xcalloc(n, sizeof *ws->count);
    ws->cap = V;
}

uint32_t asn_ws_new_mark(asn_workspace *ws)
{
    if (++ws->cur == 0) { /* wrapped: clear old marks */
        memset(ws->stamp, 0, (size_t)ws->cap * sizeof *ws->stamp);
        ws->cur = 1;
    }
    return ws->cur;
}
