/* report_analysis.c — the report's section on a learned sampler against its
 * targets: reads what `analyze-sampler --json` wrote (one object per step,
 * then {"summary": ...}) and, optionally, the SVG plots of its --plot-dir,
 * and writes the section (summary table, mean KL per step as a chart, the
 * plots inline) for the page and the text summary. */
#include "asn/report.h"
#include "asn/json.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PLOTS = 8, STEP_W = 1060, STEP_H = 360 };

struct asn_report_analysis {
    char *source;                  /* the JSONL file, as given */
    long records, steps;           /* from the summary */
    double kl_raw, kl_learned, mass_raw, mass_learned, ratio; /* NAN when absent */
    int learned;                   /* the analysis had a sampler */
    asn_report_mean *step_raw, *step_lrn; /* mean KL by step index */
    int nsteps;
    char *plot_names[MAX_PLOTS], *plots[MAX_PLOTS];
    int nplots;
};

static double num_or_nan(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The first MAX_PLOTS *.svg files of dir, by name (record-1-step-0.svg, ...). */
static int load_plots(asn_report_analysis *a, const char *dir, asn_err *e)
{
    DIR *d = opendir(dir);
    if (!d)
        return asn_err_set(e, "%s: cannot read the plots' folder", dir);
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".svg")) {
            names = asn_xrealloc(names, (n + 1) * sizeof *names);
            names[n++] = asn_xstrdup(de->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_name);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!rc && a->nplots < MAX_PLOTS) {
            size_t pl = strlen(dir) + strlen(names[i]) + 2, len;
            char *path = asn_xmalloc(pl);
            snprintf(path, pl, "%s/%s", dir, names[i]);
            char *text = NULL;
            int bad = asn_read_file(path, &text, &len, e);
            free(path);
            if (bad) {
                rc = -1;
            } else if (strncmp(text, "<svg", 4)) { /* only plots as analyze-sampler writes them: one svg element */
                free(text);
                rc = asn_err_set(e, "%s/%s: not an SVG plot of analyze-sampler", dir, names[i]);
            } else {
                a->plot_names[a->nplots] = names[i], names[i] = NULL;
                a->plots[a->nplots++] = text;
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

asn_report_analysis *asn_report_analysis_load(const char *jsonl, const char *plot_dir, asn_err *e)
{
    asn_jsonl *in = asn_jsonl_open(jsonl, e);
    if (!in)
        return NULL;
    asn_report_analysis *a = asn_xcalloc(1, sizeof *a);
    a->source = asn_xstrdup(jsonl);
    a->kl_raw = a->kl_learned = a->mass_raw = a->mass_learned = a->ratio = NAN;
    json_t *rec;
    int r, summary = 0;
    while ((r = asn_jsonl_next(in, &rec, e)) > 0) {
        const json_t *s = json_object_get(rec, "summary"), *step = json_object_get(rec, "step");
        if (json_is_object(s)) {
            summary = 1;
            a->records = (long)json_integer_value(json_object_get(s, "records"));
            a->steps = (long)json_integer_value(json_object_get(s, "steps"));
            a->kl_raw = num_or_nan(s, "kl_raw"), a->mass_raw = num_or_nan(s, "mass_raw");
            a->learned = json_object_get(s, "kl_learned") != NULL;
            a->kl_learned = num_or_nan(s, "kl_learned"), a->mass_learned = num_or_nan(s, "mass_learned");
            a->ratio = num_or_nan(s, "kl_ratio");
        } else if (json_is_integer(step) && json_integer_value(step) >= 0 && json_integer_value(step) < 100000) {
            int k = (int)json_integer_value(step);
            if (k >= a->nsteps) {
                a->step_raw = asn_xrealloc(a->step_raw, (size_t)(k + 1) * sizeof *a->step_raw);
                a->step_lrn = asn_xrealloc(a->step_lrn, (size_t)(k + 1) * sizeof *a->step_lrn);
                memset(a->step_raw + a->nsteps, 0, (size_t)(k + 1 - a->nsteps) * sizeof *a->step_raw);
                memset(a->step_lrn + a->nsteps, 0, (size_t)(k + 1 - a->nsteps) * sizeof *a->step_lrn);
                a->nsteps = k + 1;
            }
            double v = num_or_nan(rec, "kl_raw");
            if (isfinite(v))
                a->step_raw[k].sum += v, a->step_raw[k].n++;
            v = num_or_nan(rec, "kl_learned");
            if (isfinite(v))
                a->step_lrn[k].sum += v, a->step_lrn[k].n++;
        } else {
            asn_err_set(e, "%s:%ld: neither a step (\"step\") nor the summary (\"summary\") of analyze-sampler --json",
                        asn_jsonl_path(in), asn_jsonl_lineno(in));
            r = -1;
        }
        json_decref(rec);
        if (r < 0)
            break;
    }
    asn_jsonl_close(in);
    if (!r && !summary)
        r = asn_err_set(e, "%s: no summary line: not the whole output of analyze-sampler --json", jsonl);
    if (!r && plot_dir)
        r = load_plots(a, plot_dir, e);
    if (r < 0) {
        asn_report_analysis_free(a);
        return NULL;
    }
    return a;
}

void asn_report_analysis_free(asn_report_analysis *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->nplots; i++)
        free(a->plot_names[i]), free(a->plots[i]);
    free(a->step_raw), free(a->step_lrn), free(a->source);
    free(a);
}

static const char *fmt(char *buf, double v, int decimals)
{
    if (!isfinite(v))
        return "n/a";
    snprintf(buf, 48, "%.*f", decimals, v);
    return buf;
}

void asn_report_analysis_html(FILE *f, const asn_report_analysis *a)
{
    char b[48];
    fprintf(f, "<h2 id=\"sampler-analysis\">Learned sampler against its targets</h2>\n<p class=\"note\">From ");
    asn_xml_escape(f, a->source);
    fprintf(f, " (analyze-sampler --json): at each step of %ld generation%s, the heuristic's distribution is the "
               "target; KL(target || raw) is how far the base model's own distribution is from it, KL(target || "
               "learned) how far the learned sampler's is (in nats; lower is closer, 0 is the target itself). The "
               "truncated mass is the probability a distribution gives the tokens the target removed.</p>\n",
            a->records, ASN_PLURAL(a->records));
    fprintf(f, "<table id=\"analysis-table\">\n<tr><th>measure</th><th class=\"n\">raw model</th>"
               "<th class=\"n\">learned sampler</th></tr>\n");
    fprintf(f, "<tr><td>mean KL(target || \xc2\xb7), nats \xe2\x86\x93</td><td class=\"n\">%s</td>", fmt(b, a->kl_raw, 4));
    fprintf(f, "<td class=\"n\">%s</td></tr>\n", a->learned ? fmt(b, a->kl_learned, 4) : "n/a");
    fprintf(f, "<tr><td>mean truncated mass \xe2\x86\x93</td><td class=\"n\">%s</td>", fmt(b, a->mass_raw, 4));
    fprintf(f, "<td class=\"n\">%s</td></tr>\n", a->learned ? fmt(b, a->mass_learned, 4) : "n/a");
    fprintf(f, "<tr><td>steps analyzed</td><td class=\"n\">%ld</td><td></td></tr>\n", a->steps);
    fprintf(f, "</table>\n");
    if (a->learned)
        fprintf(f, "<p class=\"callout\" id=\"kl-ratio\">KL ratio raw / learned: <b>%s</b> (above 1: the sampler is "
                   "closer to the targets than the raw model).</p>\n", fmt(b, a->ratio, 3));
    /* the chart: mean KL by step */
    double lo = INFINITY, hi = -INFINITY, v;
    int n = 0;
    for (int k = 0; k < a->nsteps; k++) {
        if (asn_report_mean_get(&a->step_raw[k], &v))
            lo = fmin(lo, v), hi = fmax(hi, v), n++;
        if (asn_report_mean_get(&a->step_lrn[k], &v))
            lo = fmin(lo, v), hi = fmax(hi, v);
    }
    if (!n) {
        fprintf(f, "<p class=\"skip\">KL by step: not drawn: the analysis has no step with a finite KL.</p>\n");
    } else {
        asn_plot p;
        asn_plot_begin(&p, f, "kl-steps", "Mean KL from the target to the raw and the learned distribution, by step",
                       STEP_W, STEP_H, 0, a->nsteps > 1 ? a->nsteps - 1 : 1, "step (0: the first generated token)",
                       fmin(lo, 0), hi, "mean KL(target || \xc2\xb7), nats");
        double *xs = asn_xmalloc((size_t)a->nsteps * sizeof *xs), *ys = asn_xmalloc((size_t)a->nsteps * sizeof *ys);
        const struct {
            const asn_report_mean *m;
            const char *color, *name, *cls;
            asn_marker mark;
        } lines[] = {{a->step_raw, "#4e79a7", "raw model", "kl-raw", ASN_MARK_CIRCLE},
                     {a->step_lrn, "#e15759", "learned sampler", "kl-learned", ASN_MARK_STAR}};
        for (size_t li = 0; li < 2; li++) {
            int m = 0;
            for (int k = 0; k < a->nsteps; k++)
                if (asn_report_mean_get(&lines[li].m[k], &ys[m]))
                    xs[m++] = k;
            if (!m)
                continue;
            fprintf(f, "<g class=\"%s\">\n", lines[li].cls);
            if (m > 1)
                asn_plot_polyline(&p, m, xs, ys, lines[li].color, 2, NULL, "curve");
            for (int k = 0; k < m; k++) {
                char title[160];
                snprintf(title, sizeof title, "%s, step %g: mean KL %.4f nats", lines[li].name, xs[k], ys[k]);
                asn_plot_marker(&p, xs[k], ys[k], lines[li].mark, 3.5, lines[li].color, "#ffffff", "pt", title);
            }
            fprintf(f, "</g>\n");
        }
        asn_plot_legend_title(&p, "distribution");
        for (size_t li = 0; li < 2; li++)
            if (li == 0 || a->learned)
                asn_plot_legend_marker(&p, lines[li].mark, lines[li].color, "#ffffff", lines[li].color, lines[li].name);
        asn_plot_end(&p);
        free(xs), free(ys);
    }
    if (a->nplots) {
        fprintf(f, "<h3>The first steps of a generation</h3>\n<p class=\"note\">The most probable tokens of each "
                   "step, their raw, target and learned probabilities (analyze-sampler --plot-dir).</p>\n"
                   "<div class=\"plots\">\n");
        for (int i = 0; i < a->nplots; i++) {
            fprintf(f, "<figure class=\"plot\" data-file=\"");
            asn_xml_escape(f, a->plot_names[i]);
            fprintf(f, "\">%s</figure>\n", a->plots[i]);
        }
        fprintf(f, "</div>\n");
    }
}

void asn_report_analysis_text(FILE *f, const asn_report_analysis *a)
{
    char b[48];
    fprintf(f, "\nLearned sampler against its targets (%s)\n", a->source);
    fprintf(f, "  %-34s%ld record%s, %ld step%s\n", "analyzed", a->records, ASN_PLURAL(a->records), a->steps,
            ASN_PLURAL(a->steps));
    fprintf(f, "  %-34s%s\n", "mean KL(target || raw), nats", fmt(b, a->kl_raw, 4));
    if (a->learned)
        fprintf(f, "  %-34s%s\n", "mean KL(target || learned), nats", fmt(b, a->kl_learned, 4));
    fprintf(f, "  %-34s%s\n", "mean truncated mass, raw", fmt(b, a->mass_raw, 4));
    if (a->learned) {
        fprintf(f, "  %-34s%s\n", "mean truncated mass, learned", fmt(b, a->mass_learned, 4));
        fprintf(f, "  %-34s%s (above 1: closer than the raw model)\n", "KL ratio raw / learned", fmt(b, a->ratio, 3));
    }
}
