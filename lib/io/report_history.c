/* report_history.c — a learned sampler's training history: train-sampler's
 * log read into rows (step, loss, KL), and the SVG chart of them drawn with
 * the plotting helper of report_svg.c. */
#include "asn/report.h"
#include "asn/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The fields of a log line the chart reads: each required. */
static int read_row(const json_t *rec, asn_history_row *row, asn_err *e)
{
    long long step;
    if (asn_get_int(rec, "step", 1, &step, e) || asn_get_number(rec, "loss", 1, &row->loss, e) ||
        asn_get_number(rec, "kl", 1, &row->kl, e))
        return -1;
    if (step < 0 || step > 1000000000LL)
        return asn_err_set(e, "field \"step\" must be an integer from 0 to 1000000000, not %lld", step);
    if (!isfinite(row->loss) || !isfinite(row->kl))
        return asn_err_set(e, "field \"%s\" must be a finite number", isfinite(row->loss) ? "kl" : "loss");
    row->step = (long)step;
    return 0;
}

asn_history *asn_history_load(const char *jsonl, asn_err *e)
{
    asn_jsonl *in = asn_jsonl_open(jsonl, e);
    if (!in)
        return NULL;
    asn_history *h = asn_xcalloc(1, sizeof *h);
    int cap = 0, r;
    json_t *rec;
    while ((r = asn_jsonl_next(in, &rec, e)) > 0) {
        asn_history_row row;
        asn_err fe;
        if (read_row(rec, &row, &fe)) {
            r = asn_err_set(e, "%s:%ld: %s", asn_jsonl_path(in), asn_jsonl_lineno(in), fe.msg);
        } else {
            /* a step not after the last: a resumed run's rows replace
             * those logged from that step on before it */
            while (h->n > 0 && h->rows[h->n - 1].step >= row.step)
                h->n--;
            if (h->n == cap) {
                cap = cap ? 2 * cap : 64;
                h->rows = asn_xrealloc(h->rows, (size_t)cap * sizeof *h->rows);
            }
            h->rows[h->n++] = row;
        }
        json_decref(rec);
        if (r < 0)
            break;
    }
    asn_jsonl_close(in);
    if (!r && !h->n)
        r = asn_err_set(e, "%s: no log line: not a training log (train-sampler --log)", jsonl);
    if (r < 0) {
        asn_history_free(h);
        return NULL;
    }
    return h;
}

void asn_history_free(asn_history *h)
{
    if (!h)
        return;
    free(h->rows);
    free(h);
}

/* The series of the chart: which field, its name and colour. */
typedef struct history_series {
    const char *name, *cls, *color;
    double (*value)(const asn_history_row *);
} history_series;

static double row_loss(const asn_history_row *r) { return r->loss; }
static double row_kl(const asn_history_row *r) { return r->kl; }

static const history_series series[] = {
    {"loss (KL + gamma penalty)", "series loss", "#4e79a7", row_loss},
    {"KL(target || sampler)", "series kl", "#e15759", row_kl},
};
enum { NSERIES = sizeof series / sizeof series[0] };

int asn_history_svg(const asn_history *h, FILE *f, asn_err *e)
{
    int n = h->n;
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < NSERIES; s++)
        for (int i = 0; i < n; i++) {
            double v = series[s].value(&h->rows[i]);
            lo = v < lo ? v : lo, hi = v > hi ? v : hi;
        }
    /* a log axis when the values are positive and span a decade or more */
    int logy = lo > 0 && hi >= 10 * lo;
    double *xs = asn_xmalloc((size_t)n * sizeof *xs), *ys = asn_xmalloc((size_t)n * sizeof *ys);
    for (int i = 0; i < n; i++)
        xs[i] = (double)h->rows[i].step;
    asn_plot p;
    const char *desc = "Training history: loss and KL per log step against the optimizer step";
    if (logy)
        asn_plot_begin_logy(&p, f, "history", desc, 760, 380, xs[0], xs[n - 1], "optimizer step",
                            (int)floor(log10(lo)), (int)ceil(log10(hi)), "loss, KL (nats, log scale)");
    else
        asn_plot_begin(&p, f, "history", desc, 760, 380, xs[0], xs[n - 1], "optimizer step", lo, hi,
                       "loss, KL (nats)");
    for (int s = 0; s < NSERIES; s++) {
        for (int i = 0; i < n; i++) {
            double v = series[s].value(&h->rows[i]);
            ys[i] = logy ? log10(v) : v;
        }
        asn_plot_polyline(&p, n, xs, ys, series[s].color, 1.8, NULL, series[s].cls);
    }
    asn_plot_legend_title(&p, "train-sampler log");
    for (int s = 0; s < NSERIES; s++)
        asn_plot_legend_marker(&p, ASN_MARK_CIRCLE, series[s].color, series[s].color, series[s].color,
                               series[s].name);
    char line[64];
    snprintf(line, sizeof line, "%d log step%s, steps %ld to %ld", n, ASN_PLURAL(n), h->rows[0].step,
             h->rows[n - 1].step);
    fprintf(f, "<text class=\"legend-note\" x=\"%d\" y=\"%d\" fill=\"#555555\" font-size=\"11\">%s</text>\n",
            p.width - p.right + 18, p.legend_y + 16, line);
    asn_plot_end(&p);
    free(xs), free(ys);
    if (fflush(f) || ferror(f))
        return asn_err_set(e, "write error");
    return 0;
}
