/* asn/report.h — the run report: what an asn index holds, summarized per
 * heuristic (leaderboard), as a self-contained HTML page with hand-written
 * SVG charts and as plain text; and the small SVG plotting helper the charts
 * are drawn with (axes with nice ticks, markers, polylines, legends), which
 * any tool that draws a chart can use.
 *
 * Everything here writes to a FILE the caller owns and never prints
 * elsewhere. Output is a pure function of the database's contents: the same
 * records give the same bytes. */
#ifndef ASN_REPORT_H
#define ASN_REPORT_H

#include <stdio.h>

#include "asn/core.h"

/* ============================================================ the report */

/* A mean over the candidates that carry a value (n = how many did). */
typedef struct asn_report_mean {
    double sum;
    long n;
} asn_report_mean;

/* 1 and *out = the mean when any candidate had a value, else 0 (inline:
 * the analysis, the SVG plots and the loader all read means, and none of
 * them depends on another for it). */
static inline int asn_report_mean_get(const asn_report_mean *m, double *out)
{
    if (m->n <= 0)
        return 0;
    *out = m->sum / (double)m->n;
    return 1;
}

/* One heuristic: its candidates' annotations averaged. */
typedef struct asn_report_heuristic {
    char *key;         /* heuristic.id (else its name) */
    char *name;        /* heuristic.name (or sampler_info.name) */
    char *family;      /* "temp only", "official", "learned", or the other processors' names joined by "+" */
    double temperature;
    int has_temperature;
    int learned;       /* a processor named "learned" is in the pipeline */
    long candidates, kept;
    asn_report_mean final_score, quality, entropy, self_bleu, tokens, ngram, verifiable;
    asn_report_mean nucleus; /* tokens kept per step (gen-candidates --nucleus) */
    double points, games; /* Swiss tournament totals: win rate = points / games */
} asn_report_heuristic;

/* A value seen in the records and how many candidates carried it
 * (models, judges, templates, ...). */
typedef struct asn_report_count {
    char *value;
    char *detail; /* second column (a digest), or NULL */
    long n;
} asn_report_count;

typedef struct asn_report_counts {
    asn_report_count *v;
    int n;
} asn_report_counts;

typedef struct asn_report {
    asn_report_heuristic *h; /* in leaderboard order (best first) */
    int nh;
    int rank_key;            /* the leaderboard's order: 0 mean final score, 1 mean quality, 2 name */
    const char *rank_by;     /* the same in words */
    /* dataset */
    long prompts, prompt_records, candidates, kept, pairs;
    long with_quality, with_diversity, with_ngram, with_verifiable, with_score, with_nucleus;
    asn_report_counts finish; /* finish reason -> candidates */
    long min_per_prompt, max_per_prompt;
    asn_report_mean tokens, margin;
    /* provenance */
    asn_report_counts models, judges, templates, max_new_tokens, weights, generators;
    long *seeds; /* distinct seeds, ascending */
    int nseeds;
    struct asn_report_analysis *analysis; /* a learned sampler's analysis, or NULL (asn_report_free frees it) */
} asn_report;

/* Reads every candidate, pair and prompt record of an asn index (the SQLite
 * database `index` writes; it must exist, and is only read). NULL with e set
 * when the file is not an asn index. A database without candidates is not
 * an error: the report then says there is nothing to show. */
asn_report *asn_report_load(const char *db_path, asn_err *e);
void asn_report_free(asn_report *r);

/* A learned sampler against its targets: what `analyze-sampler --json`
 * wrote (its steps and summary), and optionally the SVG plots of its
 * --plot-dir (the first 8 by name), for the report's section on it. NULL
 * with e set ("FILE:LINE: ...") when the file is not that output. */
typedef struct asn_report_analysis asn_report_analysis;
asn_report_analysis *asn_report_analysis_load(const char *jsonl, const char *plot_dir, asn_err *e);
void asn_report_analysis_free(asn_report_analysis *a);
/* The section: summary table, mean KL per step (a chart), the plots; and
 * its lines in the text summary. */
void asn_report_analysis_html(FILE *f, const asn_report_analysis *a);
void asn_report_analysis_text(FILE *f, const asn_report_analysis *a);

/* The position (1-based) of the first learned heuristic in the leaderboard,
 * 0 if there is none. */
int asn_report_learned_rank(const asn_report *r);

/* The HTML page: inline CSS and SVG, no script, no external resource.
 * `title` names the run (for instance the database's file name). Returns 0,
 * or -1 with e set when writing failed. */
int asn_report_write_html(const asn_report *r, const char *title, FILE *f, asn_err *e);
/* The same content as plain text (tables in fixed-width columns). */
int asn_report_write_text(const asn_report *r, const char *title, FILE *f, asn_err *e);
/* A few lines for a terminal: counts, the best heuristic, where the learned
 * sampler landed. */
int asn_report_write_brief(const asn_report *r, FILE *f, asn_err *e);

/* ================================================= a training history */

/* A learned sampler's training history: train-sampler's log (--log), one
 * JSON line per log step with at least "step" (an integer >= 0), "loss"
 * and "kl" (numbers; the other fields are not read). A row whose step is
 * not after the previous one's starts again from that step: the rows it
 * replaces were written before a --resume from an earlier checkpoint, and
 * the resumed run's rows are the ones that count. */
typedef struct asn_history_row {
    long step;
    double loss, kl;
} asn_history_row;

typedef struct asn_history {
    asn_history_row *rows; /* in step order, steps strictly increasing */
    int n;
} asn_history;

/* Reads a log. NULL with e set ("FILE:LINE: ...") when a line is not JSON,
 * lacks a field or has one of the wrong type, or ("FILE: ...") when the log
 * has no line. */
asn_history *asn_history_load(const char *jsonl, asn_err *e);
void asn_history_free(asn_history *h);
/* The chart: loss and KL against the optimizer step, one polyline each
 * (class "series loss" and "series kl", a point per row), on a log10 axis
 * (decades) when every value is positive and they span a factor of 10 or
 * more, else on a linear one; axis labels and a legend. The same rows give
 * the same bytes. Returns 0, or -1 with e set when writing failed. */
int asn_history_svg(const asn_history *h, FILE *f, asn_err *e);

/* ==================================================== the plotting helper */

/* Nice tick values for an axis (after Heckbert, "Nice numbers for graph
 * labels", Graphics Gems, 1990): a step of 1, 2 or 5 x 10^k near
 * (hi - lo) / (target - 1), first and last tick the multiples of it around
 * [lo, hi]. A degenerate range is widened around its value. */
typedef struct asn_ticks {
    double lo, hi, step; /* first and last tick, spacing */
    int decimals;        /* digits after the point the labels need */
} asn_ticks;
asn_ticks asn_nice_ticks(double lo, double hi, int target);

typedef enum asn_marker {
    ASN_MARK_CIRCLE,
    ASN_MARK_SQUARE,
    ASN_MARK_TRIANGLE,
    ASN_MARK_DIAMOND,
    ASN_MARK_TRIANGLE_DOWN,
    ASN_MARK_PLUS,
    ASN_MARK_CROSS,
    ASN_MARK_HEXAGON,
    ASN_MARK_STAR, /* kept for what must stand out (a learned sampler) */
    ASN_MARK_COUNT
} asn_marker;

/* A sequential colour for t in [0, 1] (blue for cold, through to red for
 * hot: temperatures read at a glance); "#rrggbb" into out[8]. */
void asn_color_scale(double t, char out[8]);
/* The i-th colour of a categorical palette (Tableau 10), cycling. */
const char *asn_color_category(int i);

/* A chart: a plot area inside margins, data coordinates mapped linearly,
 * the legend in the right margin. Calls write SVG elements to f as they
 * come: begin, then marks, then legend entries, then end. */
typedef struct asn_plot {
    FILE *f;
    int width, height;
    int left, right, top, bottom; /* margins in pixels */
    asn_ticks x, y;
    int legend_y;                 /* next free legend row */
    int gradients;                /* colour-bar gradients defined so far */
    char id[64];
} asn_plot;

/* Writes the <svg> element, grid, axes, ticks and axis labels. The axes
 * cover the nice ticks around [xlo, xhi] x [ylo, yhi]. id (a word) becomes
 * the svg's id; desc is its accessible description. */
void asn_plot_begin(asn_plot *p, FILE *f, const char *id, const char *desc, int width, int height,
                    double xlo, double xhi, const char *xlabel, double ylo, double yhi, const char *ylabel);
/* The same with a log10 value axis: data y is log10 of the value, and the
 * axis spans the decades dec_lo .. dec_hi (a grid line and a tick 10^k at
 * each, labelled with superscripts). */
void asn_plot_begin_logy(asn_plot *p, FILE *f, const char *id, const char *desc, int width, int height,
                         double xlo, double xhi, const char *xlabel, int dec_lo, int dec_hi, const char *ylabel);
/* Pixel coordinates of a data point. */
double asn_plot_px(const asn_plot *p, double x);
double asn_plot_py(const asn_plot *p, double y);
/* A marker centred on (x, y) (data coordinates), radius r pixels. cls is
 * the element's class; title (may be NULL) shows on hover. */
void asn_plot_marker(asn_plot *p, double x, double y, asn_marker m, double r, const char *fill,
                     const char *stroke, const char *cls, const char *title);
/* A line through n points (data coordinates); dash may be NULL (solid). */
void asn_plot_polyline(asn_plot *p, int n, const double *xs, const double *ys, const char *color,
                       double width, const char *dash, const char *cls);
/* A horizontal line across the plot area at y, with a label at its right end. */
void asn_plot_hline(asn_plot *p, double y, const char *color, const char *dash, const char *label);
/* Text at a data point, offset (dx, dy) pixels; anchor is "start",
 * "middle" or "end" (SVG text-anchor). Drawn with a white halo so that it
 * stays readable over grid lines and marks. */
void asn_plot_text(asn_plot *p, double x, double y, double dx, double dy, const char *anchor, const char *text,
                   const char *cls);
/* Legend entries, stacked in the right margin. */
void asn_plot_legend_title(asn_plot *p, const char *text);
void asn_plot_legend_marker(asn_plot *p, asn_marker m, const char *fill, const char *stroke,
                            const char *line_color, const char *text);
/* A vertical colour bar for asn_color_scale over [lo, hi]. Labelled at the
 * nmarks values of marks (the values that occur, when they are few), else
 * (marks NULL) at nice ticks. */
void asn_plot_legend_colorbar(asn_plot *p, double lo, double hi, int height, const double *marks, int nmarks);
void asn_plot_end(asn_plot *p);

/* Bar charts of categories against a log10 value axis (a distribution's
 * most probable tokens). Data x is the category index (category i spans
 * [i - 0.5, i + 0.5]); data y is log10 of the value, and the axis spans the
 * decades dec_lo .. dec_hi (ticks 10^k, labelled with superscripts). The n
 * labels are written under the axis, rotated, as given (escaped for XML;
 * the caller makes them short and readable). title (may be NULL) is centred
 * above the plot area, one line per '\n'. The legend is the right margin,
 * as for asn_plot_begin; asn_plot_bar draws the bars. */
void asn_plot_begin_logbars(asn_plot *p, FILE *f, const char *id, const char *desc, const char *title, int width,
                            int height, int n, const char *const *labels, int dec_lo, int dec_hi,
                            const char *ylabel);
/* A rectangle between data x0 .. x1 and y0 .. y1 (any order), clipped to
 * the plot area (a bar below the axis has height 0 but is still written, so
 * every bar has its element). cls and title (hover text) may be NULL. */
void asn_plot_bar(asn_plot *p, double x0, double x1, double y0, double y1, const char *fill, const char *cls,
                  const char *title);

/* Writes s with &, <, >, " and ' escaped (text and attribute values alike). */
void asn_xml_escape(FILE *f, const char *s);

#endif
