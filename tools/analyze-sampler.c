/* analyze-sampler — a generation step by step: the model's raw
 * distribution, the heuristic's target (the row each token was drawn from)
 * and a learned sampler's distribution, compared with the training loss's
 * measures (KL over the target's kept tokens, truncated mass), as a table,
 * JSON lines and SVG plots of the most probable tokens (the reference
 * project's analyze.py). */
#include "asn/chat.h"
#include "asn/gen.h"
#include "asn/json.h"
#include "asn/model.h"
#include "asn/records.h"
#include "asn/replay.h"
#include "asn/report.h"
#include "asn/sampler_net.h"
#include "asn/tool.h"
#include "asn/vocab.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct analyze_sampler_options {
    const char *model;
    const char *sampler;
    const char *file;
    const char *system;
    const char *template;
    const char *heuristics;
    const char *heuristic;
    const char *candidates;
    const char *id;
    const char *plot_dir;
    long seed;
    long max_new;
    long min_new;
    long threads;
    long ctx;
    long steps;
    long plot_steps;
    long top;
    long json_top;
    int json;
    const char *chat_date;
} analyze_sampler_options;

/* The options, with their defaults (the table below points into it). */
static analyze_sampler_options opts = {
    .max_new = 20,
    .plot_steps = 5,
    .top = 50,
};

static const asn_option options[] = {
    {"model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "the base model GGUF (required)"},
    {"sampler|s", 'S', ASN_OPT_STRING, &opts.sampler, "FILE", "a learned sampler GGUF (train-sampler output); without it, raw vs target only"},
    {"candidates", 0, ASN_OPT_STRING, &opts.candidates, "FILE", "analyze candidate records (gen-candidates, filter-topk; - for stdin) instead of a prompt"},
    {"id", 0, ASN_OPT_STRING, &opts.id, "ID", "with --candidates: only the record with this id (default: every record)"},
    {"file", 'f', ASN_OPT_STRING, &opts.file, "FILE", "read the prompt from FILE (- for stdin)"},
    {"system", 0, ASN_OPT_STRING, &opts.system, "TEXT", "system message"},
    {"chat-template", 0, ASN_OPT_STRING, &opts.template, "NAME", "chat template (chatml, llama3, ..., none); default: the model's, none without one"},
    {"chat-date", 0, ASN_OPT_STRING, &opts.chat_date, "DATE", ASN_CHAT_DATE_HELP},
    {"heuristics", 'H', ASN_OPT_STRING, &opts.heuristics, "FILE", "heuristics YAML (with --heuristic; prompt mode)"},
    {"heuristic", 0, ASN_OPT_STRING, &opts.heuristic, "NAME", "pipeline of --heuristics that generates and gives the target"},
    {"seed", 0, ASN_OPT_INT, &opts.seed, "N", "random seed of the generation"},
    {"max-new-tokens", 'n', ASN_OPT_INT, &opts.max_new, "N", "prompt mode: generate at most N new tokens"},
    {"min-new-tokens", 0, ASN_OPT_INT, &opts.min_new, "N", "prompt mode: no end-of-generation token before N new tokens"},
    {"steps", 0, ASN_OPT_INT, &opts.steps, "N", "analyze the first N steps of each generation (0: all)"},
    {"json", 0, ASN_OPT_FLAG, &opts.json, NULL, "write JSON lines (one per step, then a summary) instead of tables"},
    {"json-top", 0, ASN_OPT_INT, &opts.json_top, "N", "with --json: also the N most probable tokens of each step"},
    {"plot-dir", 0, ASN_OPT_STRING, &opts.plot_dir, "DIR", "write one SVG plot per step into DIR (created if needed)"},
    {"plot-steps", 0, ASN_OPT_INT, &opts.plot_steps, "K", "plot the first K steps of each generation"},
    {"top", 0, ASN_OPT_INT, &opts.top, "N", "tokens per plot"},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads (0: all cores)"},
    {"ctx", 'c', ASN_OPT_INT, &opts.ctx, "N", "context size (0: the model's)"},
    {0},
};

static const asn_tool tool = {
    "analyze-sampler", "-m MODEL [-S SAMPLER] (--candidates FILE | -H FILE --heuristic NAME [PROMPT]) [OPTIONS]",
    "Compare, step by step, the raw, target and learned distributions of a generation.",
    "Prompt mode: the prompt (the PROMPT argument, else --file, else stdin) goes\n"
    "through the chat template (with --system) as in generate, and --heuristic\n"
    "of --heuristics generates a continuation from --seed (--max-new-tokens,\n"
    "default 20), which is then analyzed. Candidates mode: every record of\n"
    "--candidates (or the one with --id) is replayed: prompt, system, heuristic,\n"
    "seed, tokens and settings {chat_template, min_new_tokens} as gen-candidates\n"
    "wrote them; model.sha256 must be the digest of --model.\n"
    "\n"
    "At each step the model's logits are the raw row (the end-of-generation\n"
    "tokens removed before min_new_tokens, as generation removes them before\n"
    "the heuristic sees the row); the heuristic applied to\n"
    "them with the step's history, state and random key is the target, the row\n"
    "the token was drawn from (tokens it removed have probability 0); the\n"
    "sampler applied to the raw row is the learned one. Measures, in double, as\n"
    "train-sampler's loss computes them, over the tokens the target keeps:\n"
    "  kl_raw        KL(target || raw)\n"
    "  kl_learned    KL(target || learned)\n"
    "  mass_raw      the raw probability of the tokens the target removed\n"
    "  mass_learned  the same for the learned distribution\n"
    "Steps count from 0 (the first generated token).\n"
    "\n"
    "Output (stdout): per generation a header (record, heuristic, seed, the\n"
    "generated text) and a table (step, token and id, the four measures; a \"*\"\n"
    "marks a step whose target does not draw the recorded token again with the\n"
    "record's seed: the record was made with another model or settings, which\n"
    "is also a warning), then a summary: the mean of each measure over every\n"
    "analyzed step, the mean nucleus (tokens the target keeps per step) and\n"
    "the ratio mean kl_raw / mean kl_learned (above 1: the\n"
    "sampler is closer to the target than the raw model). With --json, one\n"
    "object per step: record (1-based), id (the record's, when it has one),\n"
    "step, token, piece, drawn (the token is drawn again), kept (tokens the\n"
    "target keeps), p_raw, p_target, p_learned (of the token), kl_raw,\n"
    "mass_raw, kl_learned, mass_learned (the learned fields only with\n"
    "--sampler; null for an infinite KL), top (with --json-top: [{id, piece,\n"
    "raw, target, learned}] probabilities, in the plots' order); then\n"
    "{\"summary\": {records, steps, kl_raw, mass_raw, kept, kl_learned,\n"
    "mass_learned, kl_ratio}}.\n"
    "\n"
    "Plots (--plot-dir): DIR/record-R-step-S.svg for the first --plot-steps\n"
    "steps of each generation: the --top tokens (default 50, as the\n"
    "reference's analyze.py) of highest target probability, then of highest raw\n"
    "probability (so the tokens the target removed follow those it keeps), as\n"
    "bars of their raw, target and learned probabilities on a log axis, token\n"
    "texts as labels (a space as \xe2\x90\xa3, control characters as their\n"
    "symbols, bytes that are not UTF-8 as \\xNN). SVG only: PNG would need an\n"
    "image encoder (convert the SVG files when PNG is wanted).\n"
    "\n"
    "A bad record (malformed line, missing field, unknown processor, another\n"
    "model's digest) ends the run with FILE:LINE and the field; what was\n"
    "written before it stays. The output is a pure function of the inputs and\n"
    "options: the same bytes whatever --threads.\n",
    options,
};

/* Steps replayed at a time: memory is 3 rows of V floats per step. */
enum { CHUNK = 8 };

/* --------------------------------------------------------- token texts */

/* UTF-8 length of the character starting at s (n bytes left), 0 if the
 * bytes there are not a valid UTF-8 character; *cp gets the code point. */
static int utf8_char(const unsigned char *s, size_t n, unsigned *cp)
{
    unsigned c = s[0];
    int len;
    unsigned min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xE0) == 0xC0) {
        len = 2, min = 0x80, c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, min = 0x800, c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, min = 0x10000, c &= 0x07;
    } else {
        return 0;
    }
    if ((size_t)len > n)
        return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

static void put_cp(char **o, unsigned cp)
{
    unsigned char *u = (unsigned char *)*o;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp, *o += 1;
    } else if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | cp >> 6), u[1] = (unsigned char)(0x80 | (cp & 0x3F)), *o += 2;
    } else {
        u[0] = (unsigned char)(0xE0 | cp >> 12), u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F)), *o += 3;
    }
}

/* A token's bytes made readable, in at most max_chars characters (an
 * ellipsis when cut): space as U+2423 (unless keep_space), control characters as their
 * Control Pictures symbols, C1 controls and noncharacters as \uXXXX, bytes
 * that are not UTF-8 as \xNN, nothing as U+2205. out holds 16 * max_chars
 * + 8 bytes; the result is valid UTF-8 and valid XML text. */
static void visible(const char *bytes, size_t n, int max_chars, int keep_space, char *out)
{
    const unsigned char *s = (const unsigned char *)bytes;
    char *o = out;
    int chars = 0;
    if (!n) {
        put_cp(&o, 0x2205);
        *o = 0;
        return;
    }
    for (size_t i = 0; i < n;) {
        if (chars == max_chars) {
            put_cp(&o, 0x2026);
            break;
        }
        unsigned cp;
        int len = utf8_char(s + i, n - i, &cp);
        if (!len) {
            o += sprintf(o, "\\x%02X", s[i]);
            i++;
        } else {
            if (cp == ' ' && !keep_space)
                put_cp(&o, 0x2423);
            else if (cp < 0x20)
                put_cp(&o, 0x2400 + cp);
            else if (cp == 0x7F)
                put_cp(&o, 0x2421);
            else if ((cp >= 0x80 && cp <= 0x9F) || cp == 0xFFFE || cp == 0xFFFF)
                o += sprintf(o, "\\u%04X", cp);
            else {
                memcpy(o, s + i, (size_t)len);
                o += len;
            }
            i += (size_t)len;
        }
        chars++;
    }
    *o = 0;
}

/* Characters (code points) of a UTF-8 string. */
static int n_chars(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* s padded with spaces to `width` characters. */
static void print_padded(FILE *f, const char *s, int width)
{
    fputs(s, f);
    for (int k = n_chars(s); k < width; k++)
        fputc(' ', f);
}

/* ------------------------------------------------------------ the rows */

/* log of the sum of exp over the finite entries, in double (-inf when
 * there is none). */
static double row_lse(const float *x, int V)
{
    float m = -INFINITY;
    for (int i = 0; i < V; i++)
        if (x[i] > m)
            m = x[i];
    if (!(m > -INFINITY))
        return -INFINITY;
    double s = 0;
    for (int i = 0; i < V; i++)
        if (x[i] > -INFINITY)
            s += exp((double)x[i] - m);
    return m + log(s);
}

static double prob(const float *x, double lse, int i) { return x[i] > -INFINITY ? exp((double)x[i] - lse) : 0.0; }

/* KL(target || pred) and pred's mass on the tokens the target removed: the
 * training loss with gamma 0. When pred removed a token the target keeps
 * (the loss refuses it), the KL is infinite and the mass is computed here. */
static int measure(const float *pred, const float *target, int V, double *kl, double *mass, asn_err *e)
{
    asn_sampler_loss l;
    if (!asn_truncated_logits_loss_row(pred, target, V, 0.0f, 1.0f, &l, NULL, e)) {
        *kl = l.kl, *mass = l.penalty;
        return 0;
    }
    double lse = row_lse(pred, V);
    int kept_removed = 0;
    for (int i = 0; i < V; i++) {
        if (isnan(pred[i]) || pred[i] == INFINITY || isnan(target[i]) || target[i] == INFINITY)
            return -1; /* e says which */
        kept_removed |= target[i] > -INFINITY && !(pred[i] > -INFINITY);
    }
    if (!kept_removed || !(lse > -INFINITY))
        return -1;
    double m = 0;
    for (int i = 0; i < V; i++)
        if (!(target[i] > -INFINITY))
            m += prob(pred, lse, i);
    *kl = INFINITY, *mass = m;
    return 0;
}

/* ------------------------------------------------------------ analysis */

typedef struct analyzer {
    asn_model *m;
    const asn_vocab *v;
    asn_pool *pool;
    asn_replayer *rp;
    asn_sampler *s;
    asn_sampler_ws *ws;
    int V;
    float *raw, *tgt, *lrn; /* CHUNK rows each */
    uint8_t drawn[CHUNK];
    int *order;             /* token ids, for the top tokens */
    /* totals */
    long records, steps, not_drawn;
    double sum_kl_raw, sum_kl_lrn, sum_mass_raw, sum_mass_lrn, sum_kept;
    int inf_lrn;            /* some step had an infinite KL(target || learned) */
} analyzer;

/* What the record being analyzed is, for messages, headers and files. */
typedef struct source {
    const char *path; /* the candidates file, or NULL in prompt mode */
    long line;
    const char *id;   /* the record's id (may be NULL) */
} source;

static json_t *jnum(double d) { return isfinite(d) ? json_real(d) : json_null(); }

static const float *cmp_raw, *cmp_tgt;

/* Target probability first (kept tokens before removed ones), then raw,
 * then id: a total order, so the same rows give the same tokens. */
static int by_target_then_raw(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    if (cmp_tgt[a] != cmp_tgt[b])
        return cmp_tgt[a] > cmp_tgt[b] ? -1 : 1;
    if (cmp_raw[a] != cmp_raw[b])
        return cmp_raw[a] > cmp_raw[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The n most probable tokens of a step into an->order[0..n). */
static int top_tokens(analyzer *an, const float *raw, const float *tgt, long want)
{
    int n = want < an->V ? (int)want : an->V;
    for (int i = 0; i < an->V; i++)
        an->order[i] = i;
    cmp_raw = raw, cmp_tgt = tgt;
    qsort(an->order, (size_t)an->V, sizeof *an->order, by_target_then_raw);
    return n;
}

static void fmt_measure(char *buf, double v)
{
    if (isinf(v))
        snprintf(buf, 32, "inf");
    else
        snprintf(buf, 32, "%.6f", v);
}

static void write_plot(analyzer *an, const asn_candidate *c, long record, int step, const float *raw,
                       const float *tgt, const float *lrn, double lse_raw, double lse_tgt, double lse_lrn,
                       const double kl[2], const double mass[2], const char *tok_label)
{
    int n = top_tokens(an, raw, tgt, opts.top);
    enum { LABEL_CHARS = 12 };
    char **labels = asn_xmalloc((size_t)n * sizeof *labels);
    double lo = 0;
    int series = lrn ? 3 : 2;
    for (int k = 0; k < n; k++) {
        int id = an->order[k];
        size_t len;
        const char *piece = asn_vocab_piece(an->v, id, 1, &len);
        labels[k] = asn_xmalloc(16 * LABEL_CHARS + 8);
        visible(piece, len, LABEL_CHARS, 0, labels[k]);
        double ps[3] = {prob(raw, lse_raw, id), prob(tgt, lse_tgt, id), lrn ? prob(lrn, lse_lrn, id) : 0};
        for (int j = 0; j < series; j++)
            if (ps[j] > 0 && log10(ps[j]) < lo)
                lo = log10(ps[j]);
    }
    int dec_lo = (int)floor(lo);
    if (dec_lo > -1)
        dec_lo = -1;
    if (dec_lo < -12)
        dec_lo = -12;

    char path[4096], title[1024], desc[256], id[32], a[32], b[32];
    snprintf(path, sizeof path, "%s/record-%ld-step-%d.svg", opts.plot_dir, record, step);
    FILE *f = asn_open_out(path);
    fmt_measure(a, kl[0]);
    int len = snprintf(title, sizeof title, "Record %ld, step %d: token %s (id %d), heuristic \"%s\"\nKL(target||raw) %s",
                       record, step, tok_label, c->gen[step], c->heuristic.name, a);
    if (lrn) {
        fmt_measure(b, kl[1]);
        len += snprintf(title + len, sizeof title - (size_t)len, ", KL(target||learned) %s", b);
    }
    fmt_measure(a, mass[0]);
    len += snprintf(title + len, sizeof title - (size_t)len, "; truncated mass raw %s", a);
    if (lrn) {
        fmt_measure(b, mass[1]);
        snprintf(title + len, sizeof title - (size_t)len, ", learned %s", b);
    }
    snprintf(desc, sizeof desc, "Raw, target%s probabilities of the %d most probable tokens at step %d",
             lrn ? ", learned" : " and", n, step);
    snprintf(id, sizeof id, "step%d", step);
    int width = 70 + 230 + (n * 24 > 720 ? n * 24 : 720), height = 560; /* room for the title */
    asn_plot p;
    asn_plot_begin_logbars(&p, f, id, desc, title, width, height, n, (const char *const *)labels, dec_lo, 0,
                           "probability");
    static const char *const cls[3] = {"bar raw", "bar target", "bar learned"};
    static const char *const names[3] = {"raw", "target", "learned"};
    const char *colors[3] = {asn_color_category(0), asn_color_category(3), asn_color_category(2)};
    double w = 0.8 / series;
    for (int k = 0; k < n; k++) {
        int tid = an->order[k];
        double ps[3] = {prob(raw, lse_raw, tid), prob(tgt, lse_tgt, tid), lrn ? prob(lrn, lse_lrn, tid) : 0};
        for (int j = 0; j < series; j++) {
            char tip[256], pv[32];
            asn_fmt_double(pv, ps[j]);
            snprintf(tip, sizeof tip, "%s (id %d): %s %s", labels[k], tid, names[j], pv);
            double x0 = k - 0.4 + j * w;
            asn_plot_bar(&p, x0, x0 + w, dec_lo, ps[j] > 0 ? log10(ps[j]) : -INFINITY, colors[j], cls[j], tip);
        }
    }
    asn_plot_legend_marker(&p, ASN_MARK_SQUARE, colors[0], colors[0], NULL, "raw (the model)");
    asn_plot_legend_marker(&p, ASN_MARK_SQUARE, colors[1], colors[1], NULL, "target (the heuristic)");
    if (lrn)
        asn_plot_legend_marker(&p, ASN_MARK_SQUARE, colors[2], colors[2], NULL, "learned (the sampler)");
    asn_plot_end(&p);
    asn_close_out(f, path);
    for (int k = 0; k < n; k++)
        free(labels[k]);
    free(labels);
}

/* One step: its measures, its line of output, its plot. */
static void analyze_step(analyzer *an, const asn_candidate *c, const source *src, int step, const float *raw,
                         const float *tgt, const float *lrn, int drawn)
{
    asn_err e;
    int V = an->V;
    double kl[2] = {0, 0}, mass[2] = {0, 0};
    if (measure(raw, tgt, V, &kl[0], &mass[0], &e))
        goto fail;
    if (lrn && measure(lrn, tgt, V, &kl[1], &mass[1], &e))
        goto fail;
    double lse_raw = row_lse(raw, V), lse_tgt = row_lse(tgt, V), lse_lrn = lrn ? row_lse(lrn, V) : 0;
    int tok = c->gen[step], kept = 0;
    for (int i = 0; i < V; i++)
        kept += tgt[i] > -INFINITY;
    size_t plen;
    const char *piece = asn_vocab_piece(an->v, tok, 1, &plen);
    char label[16 * 24 + 8];
    visible(piece, plen, 24, 0, label);

    an->steps++;
    an->not_drawn += !drawn;
    an->sum_kl_raw += kl[0], an->sum_mass_raw += mass[0];
    an->sum_kl_lrn += kl[1], an->sum_mass_lrn += mass[1];
    an->sum_kept += kept;
    an->inf_lrn |= isinf(kl[1]);

    if (opts.json) {
        json_t *o = json_object();
        json_object_set_new(o, "record", json_integer(an->records));
        if (src->id)
            json_object_set_new(o, "id", json_string(src->id));
        json_object_set_new(o, "step", json_integer(step));
        json_object_set_new(o, "token", json_integer(tok));
        json_object_set_new(o, "piece", asn_json_text(piece ? piece : "", plen));
        json_object_set_new(o, "drawn", json_boolean(drawn));
        json_object_set_new(o, "kept", json_integer(kept));
        json_object_set_new(o, "p_raw", jnum(prob(raw, lse_raw, tok)));
        json_object_set_new(o, "p_target", jnum(prob(tgt, lse_tgt, tok)));
        if (lrn)
            json_object_set_new(o, "p_learned", jnum(prob(lrn, lse_lrn, tok)));
        json_object_set_new(o, "kl_raw", jnum(kl[0]));
        json_object_set_new(o, "mass_raw", jnum(mass[0]));
        if (lrn) {
            json_object_set_new(o, "kl_learned", jnum(kl[1]));
            json_object_set_new(o, "mass_learned", jnum(mass[1]));
        }
        if (opts.json_top > 0) {
            int n = top_tokens(an, raw, tgt, opts.json_top);
            json_t *top = json_array();
            for (int k = 0; k < n; k++) {
                int id = an->order[k];
                size_t len;
                const char *pc = asn_vocab_piece(an->v, id, 1, &len);
                json_t *t = json_pack("{s:i,s:o,s:o,s:o}", "id", id, "piece", asn_json_text(pc ? pc : "", len),
                                      "raw", jnum(prob(raw, lse_raw, id)), "target", jnum(prob(tgt, lse_tgt, id)));
                if (lrn)
                    json_object_set_new(t, "learned", jnum(prob(lrn, lse_lrn, id)));
                json_array_append_new(top, t);
            }
            json_object_set_new(o, "top", top);
        }
        if (asn_jsonl_write(stdout, o))
            asn_write_failed(stdout, "-", errno);
        json_decref(o);
    } else {
        char tcol[16 * 24 + 40], a[32], b[32], cc[32], d[32];
        char short_label[16 * 14 + 8];
        visible(piece, plen, 14, 0, short_label);
        snprintf(tcol, sizeof tcol, "%s (%d)", short_label, tok);
        fmt_measure(a, kl[0]), fmt_measure(b, mass[0]);
        printf("%5d  ", step);
        print_padded(stdout, tcol, 24);
        if (lrn) {
            fmt_measure(cc, kl[1]), fmt_measure(d, mass[1]);
            printf(" %12s %12s %12s %12s%s\n", a, cc, b, d, drawn ? "" : "  *");
        } else {
            printf(" %12s %12s%s\n", a, b, drawn ? "" : "  *");
        }
    }
    if (opts.plot_dir && step < opts.plot_steps)
        write_plot(an, c, an->records, step, raw, tgt, lrn, lse_raw, lse_tgt, lse_lrn, kl, mass, label);
    return;
fail:
    if (src->path)
        asn_fatal("%s:%ld: step %d: %s", src->path, src->line, step, e.msg);
    asn_fatal("step %d: %s", step, e.msg);
}

/* A whole generation. */
static void analyze(analyzer *an, const asn_candidate *c, const source *src)
{
    asn_err e;
    an->records++;
    if (asn_replay_begin(an->rp, c, &e)) { /* also checks the ids against the model's rows */
        if (src->path)
            asn_fatal("%s:%ld: %s", src->path, src->line, e.msg);
        asn_fatal("%s", e.msg);
    }
    int n = opts.steps > 0 && opts.steps < c->n_gen ? (int)opts.steps : c->n_gen;
    if (!opts.json) {
        char *text = NULL;
        size_t len = 0;
        if (asn_detokenize(an->v, c->gen, (size_t)c->n_gen, 1, 0, &text, &len, &e))
            asn_fatal("%s", e.msg);
        char *vis = asn_xmalloc(16 * (len + 1) + 8);
        visible(text, len, (int)len + 1, 1, vis);
        printf("%srecord %ld", an->records > 1 ? "\n" : "", an->records);
        if (src->id)
            printf(" (id %s)", src->id);
        else if (src->path)
            printf(" (line %ld)", src->line);
        printf(": heuristic \"%s\", seed %llu, %d tokens, %d analyzed\n", c->heuristic.name,
               (unsigned long long)c->seed, c->n_gen, n);
        printf("generation: %s\n", vis);
        free(vis);
        free(text);
        if (an->s)
            printf(" step  %-24s %12s %12s %12s %12s\n", "token (id)", "KL(t||raw)", "KL(t||lrn)", "mass raw",
                   "mass lrn");
        else
            printf(" step  %-24s %12s %12s\n", "token (id)", "KL(t||raw)", "mass raw");
    }
    for (int done = 0; done < n;) {
        int want = n - done < CHUNK ? n - done : CHUNK;
        int k = asn_replay_next(an->rp, want, an->raw, an->tgt, an->drawn, &e);
        if (k <= 0) {
            const char *why = k < 0 ? e.msg : "the replay ended early";
            if (src->path)
                asn_fatal("%s:%ld: step %d: %s", src->path, src->line, done, why);
            asn_fatal("step %d: %s", done, why);
        }
        for (int j = 0; j < k; j++) {
            size_t o = (size_t)j * (size_t)an->V;
            float *lrn = NULL;
            if (an->s) {
                lrn = an->lrn + o;
                asn_sampler_ws_set_step(an->ws, done + j);
                if (asn_sampler_forward(an->s, an->ws, an->pool, an->raw + o, an->V, lrn, &e))
                    asn_fatal("%s: step %d: %s", opts.sampler, done + j, e.msg);
            }
            analyze_step(an, c, src, done + j, an->raw + o, an->tgt + o, lrn, an->drawn[j]);
        }
        done += k;
    }
}

static void summary(analyzer *an)
{
    double n = (double)an->steps;
    double kr = an->sum_kl_raw / n, mr = an->sum_mass_raw / n, kl = an->sum_kl_lrn / n, ml = an->sum_mass_lrn / n;
    double ratio = an->s && an->steps && kl > 0 ? kr / kl : NAN;
    if (opts.json) {
        json_t *s = json_object();
        json_object_set_new(s, "records", json_integer(an->records));
        json_object_set_new(s, "steps", json_integer(an->steps));
        json_object_set_new(s, "kl_raw", an->steps ? jnum(kr) : json_null());
        json_object_set_new(s, "mass_raw", an->steps ? jnum(mr) : json_null());
        json_object_set_new(s, "kept", an->steps ? jnum(an->sum_kept / n) : json_null());
        if (an->s) {
            json_object_set_new(s, "kl_learned", an->steps ? jnum(kl) : json_null());
            json_object_set_new(s, "mass_learned", an->steps ? jnum(ml) : json_null());
            json_object_set_new(s, "kl_ratio", jnum(ratio));
        }
        json_t *o = json_pack("{s:o}", "summary", s);
        if (asn_jsonl_write(stdout, o))
            asn_write_failed(stdout, "-", errno);
        json_decref(o);
        return;
    }
    char a[32];
    printf("\nsummary: %ld record%s, %ld step%s analyzed\n", an->records, an->records == 1 ? "" : "s", an->steps,
           an->steps == 1 ? "" : "s");
    if (!an->steps)
        return;
    fmt_measure(a, kr);
    printf("  mean KL(target || raw)       %s\n", a);
    if (an->s) {
        fmt_measure(a, kl);
        printf("  mean KL(target || learned)   %s\n", a);
    }
    fmt_measure(a, mr);
    printf("  mean truncated mass, raw     %s\n", a);
    printf("  mean nucleus (tokens kept)   %.1f\n", an->sum_kept / n);
    if (an->s) {
        fmt_measure(a, ml);
        printf("  mean truncated mass, learned %s\n", a);
        if (isfinite(ratio))
            printf("  KL ratio raw / learned       %.4f\n", ratio);
        else
            printf("  KL ratio raw / learned       %s\n", an->inf_lrn ? "0 (infinite learned KL)" : "n/a (learned KL is 0)");
    }
    if (an->not_drawn)
        printf("  (* %ld step%s whose target does not draw the recorded token again)\n", an->not_drawn,
               an->not_drawn == 1 ? "" : "s");
}

/* ---------------------------------------------------------------- modes */

static void prompt_mode(analyzer *an, const char *prompt)
{
    asn_err e;
    asn_heuristics *hs = asn_heuristics_load(opts.heuristics, &e);
    if (!hs)
        asn_fatal("%s", e.msg);
    int k = asn_heuristics_find(hs, opts.heuristic);
    if (k < 0)
        asn_fatal("%s: no pipeline named \"%s\"", opts.heuristics, opts.heuristic);
    char *tmpl_text = NULL;
    if (asn_gguf_get_str(asn_model_gguf(an->m), "tokenizer.chat_template", 0, &tmpl_text, &e))
        asn_fatal("%s", e.msg);
    /* a model without a template is a base model here: its prompt goes as is */
    int tmpl = !opts.template && !tmpl_text ? ASN_CHAT_NONE : asn_chat_for_model(tmpl_text, opts.template, &e);
    if (tmpl < 0)
        asn_fatal("%s: %s", opts.model, e.msg);
    free(tmpl_text);
    int32_t *ids;
    int n_ids;
    if (asn_gen_prompt_tokens(an->v, tmpl, opts.system, prompt, &ids, &n_ids, &e))
        asn_fatal("%s", e.msg);
    if (!n_ids)
        asn_fatal("the prompt is empty");
    char pid[17];
    asn_prompt_id(opts.system, prompt, pid);
    asn_gen_settings gs = {.min_new_tokens = (int)opts.min_new, .max_new_tokens = (int)opts.max_new};
    asn_generator *g = asn_generator_new(an->m, an->pool, 1, (int)opts.ctx, &gs, &e);
    if (!g)
        asn_fatal("%s", e.msg);
    asn_gen_job job = {.prompt_id = pid, .prompt_tokens = ids, .n_prompt = n_ids, .heuristic = &hs->h[k], .seed = (uint64_t)opts.seed};
    if (asn_generate(g, &job, 1, NULL, NULL, &e))
        asn_fatal("%s", e.msg);
    asn_generator_free(g);
    /* the generation as a candidate (borrowing everything) */
    asn_candidate c = {pid, ids, n_ids, job.tokens, job.n_tokens, hs->h[k], (uint64_t)opts.seed, (int)opts.min_new};
    source src = {NULL, 0, NULL};
    analyze(an, &c, &src);
    asn_gen_job_clear(&job);
    free(ids);
    asn_heuristics_free(hs);
}

/* The chat family for the research pipeline's records (which name none):
 * --chat-template, else the model's own, else none. */
static int model_chat(analyzer *an)
{
    asn_err e;
    char *t = NULL;
    if (asn_gguf_get_str(asn_model_gguf(an->m), "tokenizer.chat_template", 0, &t, &e))
        asn_fatal("%s", e.msg);
    int family = !opts.template && !t ? ASN_CHAT_NONE : asn_chat_for_model(t, opts.template, &e);
    free(t);
    if (family < 0)
        asn_fatal("%s: %s", opts.model, e.msg);
    return family;
}

static void candidates_mode(analyzer *an)
{
    asn_err e;
    const char *sha = asn_model_sha256(an->m, &e);
    if (!sha)
        asn_fatal("%s", e.msg);
    asn_jsonl *r = asn_jsonl_open(opts.candidates, &e);
    if (!r)
        asn_fatal("%s", e.msg);
    const char *path = asn_jsonl_path(r);
    json_t *rec;
    int rc;
    long found = 0;
    while ((rc = asn_jsonl_next(r, &rec, &e)) > 0) {
        long line = asn_jsonl_lineno(r);
        const json_t *jid = json_object_get(rec, "id");
        if (opts.id && !(json_is_string(jid) && !strcmp(json_string_value(jid), opts.id))) {
            json_decref(rec);
            continue;
        }
        asn_candidate c;
        if (asn_rec_format(rec) == ASN_REC_REFERENCE) { /* the research pipeline's: no model, no tokens */
            if (asn_candidate_from_reference(&c, rec, an->v, model_chat(an), &e))
                asn_fatal("%s:%ld: %s", path, line, e.msg);
        } else {
            const json_t *ms = json_object_get(json_object_get(rec, "model"), "sha256");
            if (!json_is_string(ms))
                asn_fatal("%s:%ld: field \"model.sha256\": missing (the records must say which model made them)",
                          path, line);
            if (strcmp(json_string_value(ms), sha))
                asn_fatal("%s:%ld: field \"model.sha256\": the record was generated by model %.12s..., not by %s "
                          "(%.12s...)", path, line, json_string_value(ms), opts.model, sha);
            if (asn_candidate_from_json(&c, rec, an->v, &e))
                asn_fatal("%s:%ld: %s", path, line, e.msg);
        }
        source src = {path, line, json_is_string(jid) ? json_string_value(jid) : NULL};
        analyze(an, &c, &src);
        asn_candidate_clear(&c);
        json_decref(rec);
        found++;
        if (opts.id)
            break;
    }
    if (rc < 0)
        asn_fatal("%s", e.msg);
    if (!found) {
        if (opts.id)
            asn_fatal("%s: no record with id \"%s\"", path, opts.id);
        asn_fatal("%s: no candidate records", path);
    }
    asn_jsonl_close(r);
}

static void check_options(int nops)
{
    asn_err de;
    if (opts.chat_date && asn_chat_set_date(opts.chat_date, &de))
        asn_usage_error("--chat-date: %s", de.msg);
    if (!opts.model)
        asn_usage_error("--model is required");
    if (opts.candidates) {
        if (nops || opts.file || opts.heuristics || opts.heuristic)
            asn_usage_error("--candidates replays records: no PROMPT, --file, --heuristics or --heuristic");
    } else {
        if (!opts.heuristics || !opts.heuristic)
            asn_usage_error("give --candidates FILE, or --heuristics FILE and --heuristic NAME with a prompt");
        if (opts.id)
            asn_usage_error("--id goes with --candidates");
        if (nops > 1)
            asn_usage_error("one PROMPT argument at most (quote it)");
        if (nops && opts.file)
            asn_usage_error("a PROMPT argument or --file, not both");
    }
    if (opts.max_new < 1 || opts.min_new < 0 || opts.seed < 0 || opts.steps < 0 || opts.plot_steps < 0 ||
        opts.top < 1 || opts.json_top < 0 || opts.threads < 0 || opts.ctx < 0)
        asn_usage_error("--max-new-tokens and --top must be >= 1; --min-new-tokens, --seed, --steps, --plot-steps, "
                        "--json-top, --threads and --ctx >= 0");
    if (opts.json_top && !opts.json)
        asn_usage_error("--json-top goes with --json");
}

/* The sampler, the prompt (NULL with --candidates), the model, the plots'
 * folder. */
static char *load_inputs(analyzer *an, int nops, char **argv)
{
    asn_err e;
    if (opts.sampler && !(an->s = asn_sampler_load(opts.sampler, &e)))
        asn_fatal("%s", e.msg);
    char *prompt = NULL;
    if (!opts.candidates) {
        size_t plen;
        prompt = nops ? asn_xstrdup(argv[1]) : asn_read_all(opts.file ? opts.file : "-", &plen);
    }
    if (!(an->m = asn_model_load(opts.model, &e)) || !(an->v = asn_model_vocab(an->m, &e)))
        asn_fatal("%s", e.msg);
    if (opts.plot_dir && mkdir(opts.plot_dir, 0777) && errno != EEXIST)
        asn_fatal("%s: %s", opts.plot_dir, strerror(errno));
    return prompt;
}

/* The replayer and the rows the steps are analyzed in. */
static void make_buffers(analyzer *an)
{
    asn_err e;
    an->pool = asn_pool_new((int)opts.threads);
    an->V = asn_model_cfg(an->m)->n_vocab;
    if (!(an->rp = asn_replayer_new(an->m, an->pool, (int)opts.ctx, &e)))
        asn_fatal("%s", e.msg);
    if (an->s)
        an->ws = asn_sampler_ws_new(an->s, 0);
    size_t rows = (size_t)CHUNK * (size_t)an->V;
    an->raw = asn_xmalloc(rows * sizeof(float));
    an->tgt = asn_xmalloc(rows * sizeof(float));
    an->lrn = an->s ? asn_xmalloc(rows * sizeof(float)) : NULL;
    an->order = asn_xmalloc((size_t)an->V * sizeof *an->order);
}

static void analyzer_free(analyzer *an)
{
    free(an->raw);
    free(an->tgt);
    free(an->lrn);
    free(an->order);
    asn_replayer_free(an->rp);
    asn_sampler_ws_free(an->ws);
    asn_sampler_free(an->s);
    asn_pool_free(an->pool);
    asn_model_free(an->m);
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    check_options(nops);
    analyzer an = {0};
    char *prompt = load_inputs(&an, nops, argv);
    make_buffers(&an);
    if (opts.candidates)
        candidates_mode(&an);
    else
        prompt_mode(&an, prompt);
    summary(&an);
    asn_close_out(stdout, "-");
    if (an.not_drawn)
        asn_warn("%ld of the analyzed steps do not draw their recorded token again: those records were not "
                 "generated by this model with their recorded settings", an.not_drawn);
    free(prompt);
    analyzer_free(&an);
    return 0;
}
