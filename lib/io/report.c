/* report.c — the run report: reads an asn index (records table), averages
 * each heuristic's annotations, and writes the HTML page (leaderboard,
 * quality-vs-diversity scatter, quality-over-temperature curves per family,
 * dataset statistics, provenance), the text summary and the brief. A value
 * no record carries is shown as "n/a" and a chart that needs it is left out
 * with a sentence saying why. Every query has an ORDER BY, so the output
 * depends only on the stored records. */
#include "asn/report.h"
#include "asn/scores.h"
#include "asn/store.h"
#include "asn/json.h"

#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* ================================================================ loading */

static void mean_add(asn_report_mean *m, sqlite3_stmt *q, int col)
{
    if (sqlite3_column_type(q, col) == SQLITE_NULL)
        return;
    double v = sqlite3_column_double(q, col);
    if (!isfinite(v))
        return;
    m->sum += v;
    m->n++;
}

static char *col_strdup(sqlite3_stmt *q, int col)
{
    const unsigned char *s = sqlite3_column_text(q, col);
    return s ? asn_xstrdup((const char *)s) : NULL;
}

static int sql_fail(sqlite3 *db, asn_err *e, const char *what)
{
    return asn_err_set(e, "%s: %s", what, sqlite3_errmsg(db));
}

/* Family and temperature from the pipeline: temperature is the temperature
 * processor's parameter, the family the names of the other processors
 * ("temp only" when there is none). Records without processors (the
 * reference's) fall back on the name: "top_p 0.9 temp 0.7". */
static void classify(asn_report_heuristic *h, const char *procs_json)
{
    char fam[256] = "";
    json_t *procs = procs_json ? json_loads(procs_json, 0, NULL) : NULL;
    if (json_is_array(procs)) {
        size_t i;
        json_t *p;
        json_array_foreach(procs, i, p) {
            const char *name = json_string_value(json_object_get(p, "name"));
            json_t *params = json_object_get(p, "params");
            if (!name)
                continue;
            if (!strcmp(name, "temperature") || !strcmp(name, "llama_temp")) {
                json_t *t = json_object_get(params, !strcmp(name, "temperature") ? "temperature" : "temp");
                if (json_is_number(t))
                    h->temperature = json_number_value(t), h->has_temperature = 1;
                continue;
            }
            if (!strcmp(name, "learned"))
                h->learned = 1;
            if (strlen(fam) + strlen(name) + 2 < sizeof fam) {
                if (*fam)
                    strcat(fam, "+");
                strcat(fam, name);
            }
        }
    } else if (h->name) {
        const char *t = strstr(h->name, "temp ");
        while (t && t != h->name && t[-1] != ' ')
            t = strstr(t + 1, "temp ");
        if (t) {
            char *end;
            double v = strtod(t + 5, &end);
            if (end != t + 5)
                h->temperature = v, h->has_temperature = 1;
        }
        size_t n = strcspn(h->name, " ");
        if (n && n < sizeof fam && strncmp(h->name, "temp", n))
            memcpy(fam, h->name, n), fam[n] = 0;
        if (!strcmp(fam, "learned"))
            h->learned = 1;
    }
    json_decref(procs);
    if (h->learned)
        strcpy(fam, "learned");
    else if (h->name && !strncmp(h->name, "official", 8))
        strcpy(fam, "official");
    else if (!*fam)
        strcpy(fam, "temp only");
    h->family = asn_xstrdup(fam);
}

/* The columns every candidate row gives (records of the reference's format
 * included: sampler_info, bradley_terry_rating, infinigram_scores). */
static const char *CANDIDATE_SQL =
    "SELECT coalesce(heuristic_id, heuristic_name, json_extract(json, '$.sampler_info.name'), '?') AS hkey,"
    " coalesce(heuristic_name, json_extract(json, '$.sampler_info.name'), '(unnamed)'),"
    " json_extract(json, '$.heuristic.processors'),"
    " coalesce(json_extract(json, '$.n_tokens'), json_array_length(json, '$.tokens')),"
    " coalesce(json_extract(json, '$.quality.bt'), json_extract(json, '$.bradley_terry_rating')),"
    " json_extract(json, '$.quality.swiss_points'),"
    " json_extract(json, '$.quality.games'),"
    " json_extract(json, '$.diversity.self_bleu'),"
    " json_extract(json, '$.diversity.embedding_entropy'),"
    " coalesce(json_extract(json, '$.ngram.coverage'), json_extract(json, '$.infinigram_scores.infinigram_total_coverage')),"
    " json_extract(json, '$.verifiable_reward'),"
    " json_extract(json, '$.score.final'),"
    " json_extract(json, '$.rank'),"
    " json_extract(json, '$.nucleus')"
    " FROM records WHERE kind = 'candidate' ORDER BY hkey, id";

enum { C_KEY, C_NAME, C_PROCS, C_TOKENS, C_QUALITY, C_POINTS, C_GAMES, C_SELF_BLEU, C_ENTROPY, C_NGRAM,
       C_VERIFIABLE, C_FINAL, C_RANK, C_NUCLEUS };

static int load_heuristics(sqlite3 *db, asn_report *r, asn_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, CANDIDATE_SQL, -1, &q, NULL) != SQLITE_OK)
        return sql_fail(db, e, "reading candidates");
    size_t cap = 0;
    asn_report_heuristic *h = NULL;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(q, C_KEY);
        if (!h || strcmp(h->key, key)) {
            asn_grow((void **)&r->h, &cap, (size_t)r->nh + 1, sizeof *r->h);
            h = &r->h[r->nh++];
            memset(h, 0, sizeof *h);
            h->key = asn_xstrdup(key);
            h->name = col_strdup(q, C_NAME);
            classify(h, (const char *)sqlite3_column_text(q, C_PROCS));
        }
        h->candidates++;
        r->candidates++;
        mean_add(&h->tokens, q, C_TOKENS);
        mean_add(&r->tokens, q, C_TOKENS);
        mean_add(&h->quality, q, C_QUALITY);
        mean_add(&h->self_bleu, q, C_SELF_BLEU);
        mean_add(&h->entropy, q, C_ENTROPY);
        mean_add(&h->ngram, q, C_NGRAM);
        mean_add(&h->verifiable, q, C_VERIFIABLE);
        mean_add(&h->final_score, q, C_FINAL);
        mean_add(&h->nucleus, q, C_NUCLEUS);
        r->with_nucleus += sqlite3_column_type(q, C_NUCLEUS) != SQLITE_NULL;
        if (sqlite3_column_type(q, C_POINTS) != SQLITE_NULL && sqlite3_column_type(q, C_GAMES) != SQLITE_NULL) {
            h->points += sqlite3_column_double(q, C_POINTS);
            h->games += sqlite3_column_double(q, C_GAMES);
        }
        r->with_quality += sqlite3_column_type(q, C_QUALITY) != SQLITE_NULL;
        r->with_diversity += sqlite3_column_type(q, C_ENTROPY) != SQLITE_NULL ||
                             sqlite3_column_type(q, C_SELF_BLEU) != SQLITE_NULL;
        r->with_ngram += sqlite3_column_type(q, C_NGRAM) != SQLITE_NULL;
        r->with_verifiable += sqlite3_column_type(q, C_VERIFIABLE) != SQLITE_NULL;
        r->with_score += sqlite3_column_type(q, C_FINAL) != SQLITE_NULL;
        if (sqlite3_column_type(q, C_RANK) != SQLITE_NULL)
            h->kept++, r->kept++;
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : sql_fail(db, e, "reading candidates");
}

/* Rows of (value, detail or NULL, count) into a list. */
static int load_counts(sqlite3 *db, const char *sql, asn_report_counts *out, asn_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return sql_fail(db, e, "reading the index");
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (sqlite3_column_type(q, 0) == SQLITE_NULL)
            continue;
        asn_grow((void **)&out->v, &cap, (size_t)out->n + 1, sizeof *out->v);
        asn_report_count *c = &out->v[out->n++];
        c->value = col_strdup(q, 0);
        c->detail = col_strdup(q, 1);
        c->n = sqlite3_column_int64(q, 2);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : sql_fail(db, e, "reading the index");
}

/* One row of integers from a query into out[0..n). */
static int load_row(sqlite3 *db, const char *sql, int n, long *out, asn_report_mean *mean, asn_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return sql_fail(db, e, "reading the index");
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        for (int i = 0; i < n; i++)
            out[i] = sqlite3_column_int64(q, i);
        if (mean && sqlite3_column_type(q, n) != SQLITE_NULL)
            mean->sum = sqlite3_column_double(q, n), mean->n = 1;
    }
    sqlite3_finalize(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(db, e, "reading the index");
}

static int load_seeds(sqlite3 *db, asn_report *r, asn_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, "SELECT DISTINCT seed FROM records WHERE kind = 'candidate' AND seed IS NOT NULL"
                               " ORDER BY seed", -1, &q, NULL) != SQLITE_OK)
        return sql_fail(db, e, "reading seeds");
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        asn_grow((void **)&r->seeds, &cap, (size_t)r->nseeds + 1, sizeof *r->seeds);
        r->seeds[r->nseeds++] = (long)sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : sql_fail(db, e, "reading seeds");
}

/* Leaderboard order: by mean final score (kept candidates) when there is
 * one, else by mean quality; unrated heuristics last; ties by name. */
static int cmp_heuristic(const void *pa, const void *pb, void *key)
{
    const asn_report_heuristic *a = pa, *b = pb;
    for (int f = *(const int *)key; f < 2; f++) {
        const asn_report_mean *ma = f == 0 ? &a->final_score : &a->quality;
        const asn_report_mean *mb = f == 0 ? &b->final_score : &b->quality;
        double va, vb;
        int ha = asn_report_mean_get(ma, &va), hb = asn_report_mean_get(mb, &vb);
        if (ha != hb)
            return hb - ha;
        if (ha && va != vb)
            return va > vb ? -1 : 1;
    }
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->key, b->key);
}

static void rank_heuristics(asn_report *r)
{
    int any_final = 0, any_quality = 0;
    for (int i = 0; i < r->nh; i++)
        any_final |= r->h[i].final_score.n > 0, any_quality |= r->h[i].quality.n > 0;
    r->rank_key = any_final ? 0 : any_quality ? 1 : 2;
    r->rank_by = any_final ? "mean final score of its kept candidates"
                 : any_quality ? "mean quality (Bradley-Terry rating)" : "name";
    if (r->nh > 1)
        qsort_r(r->h, (size_t)r->nh, sizeof *r->h, cmp_heuristic, &r->rank_key);
}

asn_report *asn_report_load(const char *db_path, asn_err *e)
{
    struct stat st;
    if (stat(db_path, &st) || access(db_path, R_OK)) {
        if (errno == ENOENT)
            asn_err_set(e, "%s: no such database: make it with index --db %s CANDIDATES.jsonl...", db_path, db_path);
        else
            asn_err_set(e, "%s: cannot read the database: %s", db_path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        asn_err_set(e, "%s: is a folder, not a database (the file index --db wrote)", db_path);
        return NULL;
    }
    /* Opened for writing where allowed, but only ever read (query_only): as
     * the last connection of a WAL database it then removes the -wal and
     * -shm files on closing, which a read-only connection would leave. */
    sqlite3 *db;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
            asn_err_set(e, "%s: %s", db_path, db ? sqlite3_errmsg(db) : "cannot open");
            sqlite3_close(db);
            return NULL;
        }
    }
    sqlite3_busy_timeout(db, 10000);
    sqlite3_exec(db, "PRAGMA query_only = 1", NULL, NULL, NULL);
    sqlite3_stmt *probe;
    if (sqlite3_prepare_v2(db, "SELECT id, kind, prompt_id, heuristic_id, heuristic_name, seed, json FROM records"
                               " LIMIT 1", -1, &probe, NULL) != SQLITE_OK) {
        asn_err_set(e, "%s: not an asn index (%s)", db_path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_finalize(probe);
    int version = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &probe, NULL) == SQLITE_OK &&
        sqlite3_step(probe) == SQLITE_ROW)
        version = sqlite3_column_int(probe, 0);
    sqlite3_finalize(probe);
    if (version > ASN_STORE_SCHEMA_VERSION) {
        asn_err_set(e, "%s: the index has schema version %d, newer than this asn's (%d): use a newer asn", db_path,
                    version, ASN_STORE_SCHEMA_VERSION);
        sqlite3_close(db);
        return NULL;
    }

    asn_report *r = asn_xcalloc(1, sizeof *r);
    long row[3] = {0};
    int rc = load_heuristics(db, r, e);
    if (!rc) {
        rc = load_row(db, "SELECT count(*), min(n), max(n) FROM (SELECT count(*) AS n FROM records"
                          " WHERE kind = 'candidate' GROUP BY coalesce(prompt_id, json_extract(json, '$.prompt')))",
                      3, row, NULL, e);
        r->prompts = row[0], r->min_per_prompt = row[1], r->max_per_prompt = row[2];
    }
    if (!rc) {
        rc = load_row(db, "SELECT count(*) FROM records WHERE kind = 'prompt'", 1, row, NULL, e);
        r->prompt_records = row[0];
    }
    if (!rc) {
        rc = load_row(db, "SELECT count(*), avg(json_extract(json, '$.margin')) FROM records WHERE kind = 'pair'",
                      1, row, &r->margin, e);
        r->pairs = row[0];
    }
    const char *count_sql[] = {
        "SELECT coalesce(json_extract(json, '$.finish'), '(not recorded)'), NULL, count(*) FROM records"
        " WHERE kind = 'candidate' GROUP BY 1 ORDER BY 1",
        "SELECT json_extract(json, '$.model.name'), json_extract(json, '$.model.sha256'), count(*) FROM records"
        " WHERE kind = 'candidate' GROUP BY 1, 2 ORDER BY 1, 2",
        "SELECT json_extract(json, '$.quality.judge.kind') || ': ' || json_extract(json, '$.quality.judge.model'),"
        " json_extract(json, '$.quality.judge.sha256'), count(*) FROM records WHERE kind = 'candidate'"
        " GROUP BY 1, 2 ORDER BY 1, 2",
        "SELECT json_extract(json, '$.settings.chat_template'), NULL, count(*) FROM records"
        " WHERE kind = 'candidate' GROUP BY 1 ORDER BY 1",
        "SELECT CAST(json_extract(json, '$.settings.max_new_tokens') AS TEXT), NULL, count(*) FROM records"
        " WHERE kind = 'candidate' GROUP BY 1 ORDER BY json_extract(json, '$.settings.max_new_tokens')",
        "SELECT printf('quality %g, diversity %g, verifiable %g', json_extract(json, '$.score.weights.quality'),"
        " json_extract(json, '$.score.weights.diversity'), json_extract(json, '$.score.weights.verifiable')),"
        " NULL, count(*) FROM records WHERE kind = 'candidate' AND json_extract(json, '$.score.weights') IS NOT NULL"
        " GROUP BY 1 ORDER BY 1",
        "SELECT json_extract(json, '$.settings.generator'), NULL, count(*) FROM records"
        " WHERE kind = 'candidate' AND json_extract(json, '$.settings.generator') IS NOT NULL GROUP BY 1 ORDER BY 1",
    };
    asn_report_counts *count_out[] = {&r->finish, &r->models, &r->judges, &r->templates, &r->max_new_tokens,
                                      &r->weights, &r->generators};
    for (size_t i = 0; !rc && i < sizeof count_sql / sizeof *count_sql; i++)
        rc = load_counts(db, count_sql[i], count_out[i], e);
    if (!rc)
        rc = load_seeds(db, r, e);
    sqlite3_close(db);
    if (rc) {
        asn_err_prefix(e, "%s", db_path);
        asn_report_free(r);
        return NULL;
    }
    rank_heuristics(r);
    return r;
}

static void free_counts(asn_report_counts *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->v[i].value), free(c->v[i].detail);
    free(c->v);
}

void asn_report_free(asn_report *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nh; i++)
        free(r->h[i].key), free(r->h[i].name), free(r->h[i].family);
    free(r->h);
    asn_report_counts *lists[] = {&r->finish, &r->models, &r->judges, &r->templates, &r->max_new_tokens,
                                  &r->weights, &r->generators};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
        free_counts(lists[i]);
    free(r->seeds);
    asn_report_analysis_free(r->analysis);
    free(r);
}

int asn_report_learned_rank(const asn_report *r)
{
    for (int i = 0; i < r->nh; i++)
        if (r->h[i].learned)
            return i + 1;
    return 0;
}

/* ============================================================ formatting */

enum { NUM = 48 };

/* A mean with `decimals` digits, or "n/a". */
static const char *fmt_mean(char *buf, const asn_report_mean *m, int decimals)
{
    double v;
    if (!asn_report_mean_get(m, &v))
        return "n/a";
    if (fabs(v) < 0.5 * pow(10, -decimals))
        v = 0; /* no "-0.000" */
    snprintf(buf, NUM, "%.*f", decimals, v);
    return buf;
}

static const char *fmt_win(char *buf, const asn_report_heuristic *h)
{
    if (h->games <= 0)
        return "n/a";
    snprintf(buf, NUM, "%.1f%%", 100 * h->points / h->games);
    return buf;
}

static const char *fmt_temp(char *buf, const asn_report_heuristic *h)
{
    if (!h->has_temperature)
        return "n/a";
    asn_fmt_double(buf, h->temperature); /* as the heuristics YAML writes it: 1.0, 0.7 */
    return buf;
}

static const char *fmt_share(char *buf, long n, long total)
{
    snprintf(buf, NUM, "%.1f%%", total > 0 ? 100.0 * (double)n / (double)total : 0.0);
    return buf;
}

/* Seeds as ranges: "0-4, 7, 9-10". */
static void write_seeds(FILE *f, const asn_report *r)
{
    if (!r->nseeds) {
        fputs("n/a", f);
        return;
    }
    for (int i = 0; i < r->nseeds;) {
        int j = i;
        while (j + 1 < r->nseeds && r->seeds[j + 1] == r->seeds[j] + 1)
            j++;
        fprintf(f, "%s%ld", i ? ", " : "", r->seeds[i]);
        if (j > i)
            fprintf(f, "-%ld", r->seeds[j]);
        i = j + 1;
    }
}

/* Position of heuristic `i` when the heuristics are sorted by a mean,
 * highest first (1-based), and how many have that mean. 0 when it has none. */
static int position_by(const asn_report *r, int i, size_t off, int *of)
{
    const asn_report_mean *mi = (const asn_report_mean *)((const char *)&r->h[i] + off);
    double vi, v;
    int pos = 1, n = 0;
    int has = asn_report_mean_get(mi, &vi);
    for (int k = 0; k < r->nh; k++) {
        const asn_report_mean *mk = (const asn_report_mean *)((const char *)&r->h[k] + off);
        if (!asn_report_mean_get(mk, &v))
            continue;
        n++;
        if (has && (v > vi || (v == vi && k < i)))
            pos++;
    }
    *of = n;
    return has ? pos : 0;
}

#define OFF(field) offsetof(asn_report_heuristic, field)

/* "ranks 2 of 10 by <measure> (0.412); quality 0.31 (2 of 10); ..." */
static void write_learned_sentence(FILE *f, const asn_report *r, int i)
{
    const asn_report_heuristic *h = &r->h[i];
    static const struct {
        const char *label;
        size_t off;
    } parts[] = {{"final score", OFF(final_score)}, {"quality", OFF(quality)}, {"embedding entropy", OFF(entropy)}};
    char b[NUM];
    int of;
    if (r->rank_key == 2) { /* nothing to rank by */
        fprintf(f, "is one of the %d heuristics; no candidate has a quality or a final score yet", r->nh);
        return;
    }
    fprintf(f, "ranks %d of %d by %s", i + 1, r->nh, r->rank_by);
    for (size_t k = 0; k < sizeof parts / sizeof *parts; k++) {
        const asn_report_mean *m = (const asn_report_mean *)((const char *)h + parts[k].off);
        int pos = position_by(r, i, parts[k].off, &of);
        if ((int)k == r->rank_key) {
            fprintf(f, " (%s)", fmt_mean(b, m, 3)); /* the measure ranked by: its value only */
            continue;
        }
        fprintf(f, "; %s %s", parts[k].label, fmt_mean(b, m, 3));
        if (pos)
            fprintf(f, " (%d of %d)", pos, of);
    }
    fprintf(f, "; win rate %s", fmt_win(b, h));
}

/* ================================================================= HTML */

static const char *CSS =
    "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;color:#222;background:#f6f6f4;margin:0}\n"
    "main{max-width:1240px;margin:0 auto;padding:24px 28px 40px;background:#fff;box-sizing:border-box}\n"
    "h1{font-size:26px;margin:4px 0 2px}h2{font-size:19px;margin:30px 0 8px;border-bottom:2px solid #ddd;"
    "padding-bottom:4px}\n"
    ".sub{color:#666;margin:0 0 16px}\n"
    ".cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}\n"
    ".card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:110px;background:#fafafa}\n"
    ".card b{display:block;font-size:22px}.card span{color:#666;font-size:13px}\n"
    "table{border-collapse:collapse;font-size:13px;margin:6px 0}\n"
    "th,td{padding:4px 8px;border-bottom:1px solid #e6e6e6;text-align:left;vertical-align:top}\n"
    "th{background:#f0f0ee;font-weight:600}\n"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "td.name{min-width:9em}td.family{white-space:nowrap}\n"
    ".wide{max-width:100%;overflow-x:auto}\n"
    "th .unit{display:block;font-weight:400;color:#666;font-size:11px;white-space:nowrap}\n"
    "tr.learned td{background:#fff1b8;font-weight:600}\n"
    ".na{color:#999}\n"
    ".note{color:#555;font-size:13px;margin:4px 0 10px}\n"
    ".skip{background:#fdf3e7;border-left:4px solid #e0a050;padding:8px 12px;font-size:14px}\n"
    ".callout{background:#fff8d6;border-left:4px solid #d4a800;padding:8px 12px;font-size:14px;margin:10px 0}\n"
    ".bar{display:inline-block;height:10px;background:#4e79a7;vertical-align:middle}\n"
    "code{font-size:12px;word-break:break-all}\n"
    "dl.prov{display:grid;grid-template-columns:190px 1fr;gap:4px 12px;font-size:14px}\n"
    "dl.prov dt{color:#555}dl.prov dd{margin:0}\n"
    "svg.chart{display:block;margin:8px 0;max-width:100%;height:auto}\n"
    ".plots{display:flex;flex-wrap:wrap;gap:8px}.plots svg{max-width:100%;height:auto}\n"
    "svg text.learned{font-weight:700}\n"
    "footer{color:#888;font-size:12px;margin-top:30px}\n";

static void h_text(FILE *f, const char *s) { asn_xml_escape(f, s); }

/* A table cell with a number, greyed when "n/a". */
static void h_num(FILE *f, const char *s)
{
    fprintf(f, "<td class=\"n%s\">%s</td>", strcmp(s, "n/a") ? "" : " na", s);
}

static void h_skip(FILE *f, const char *what, const char *why)
{
    fprintf(f, "<p class=\"skip\">%s: not drawn: %s.</p>\n", what, why);
}

static int any_mean(const asn_report *r, size_t off)
{
    for (int i = 0; i < r->nh; i++)
        if (((const asn_report_mean *)((const char *)&r->h[i] + off))->n > 0)
            return 1;
    return 0;
}

/* The leaderboard's measures: what each column is, its unit, which way is
 * better, and where it comes from (one table for the page and the summary). */
typedef struct measure {
    const char *head;  /* the page's header */
    const char *text;  /* the summary's header (short) */
    const char *score; /* a score field of asn/scores.h, which gives unit and direction; NULL: those below */
    const char *unit;  /* shown under the header */
    int better;        /* 1: higher is better, -1: lower is, 0: neither */
    const char *title; /* hover text: what it is, which tool writes it */
    size_t off;        /* the asn_report_mean in asn_report_heuristic; WIN_RATE: points / games */
    int decimals, width;
    size_t need;       /* shown only when this count of asn_report is > 0; NO_NEED: always */
} measure;

#define WIN_RATE ((size_t)-1)
#define NO_NEED ((size_t)-1)
static const measure MEASURES[] = {
    {"final score", "final", "final", NULL, 0,
     "mean score.final of the kept candidates (filter-topk: weighted sum of the z-scored quality, diversity and "
     "verifiable reward)", OFF(final_score), 3, 8, NO_NEED},
    {"quality", "quality", "quality", NULL, 0,
     "mean Bradley-Terry rating (rank-bt): sigmoid of the difference of two ratings is the chance one beats the "
     "other", OFF(quality), 3, 8, NO_NEED},
    {"win rate", "win", NULL, "% of points", 1, "Swiss tournament points per game played (a bye adds 0.5 points)", WIN_RATE,
     1, 7, NO_NEED},
    {"emb. entropy", "entropy", "diversity", NULL, 0,
     "mean log entropy (bits) of the embedding similarity spectrum across a prompt's seeds (score-diversity): "
     "higher is more diverse", OFF(entropy), 3, 8, NO_NEED},
    {"self-BLEU", "self-bleu", "self_bleu", NULL, 0,
     "mean log self-BLEU across a prompt's seeds (score-diversity): lower is more diverse", OFF(self_bleu), 3, 9,
     NO_NEED},
    {"mean tokens", "tokens", NULL, "tokens", 0, "mean length of the generations in tokens (n_tokens)", OFF(tokens), 1, 7,
     NO_NEED},
    {"verifiable", "verif.", "verifiable", NULL, 0,
     "mean verifiable reward (score-verifiable): the share of checked answers that are right, 0 to 1",
     OFF(verifiable), 3, 7, offsetof(asn_report, with_verifiable)},
    {"n-gram cov.", "ngram", "ngram", NULL, 0,
     "mean words of the generation covered by n-grams of the reference corpus (score-ngram): higher is closer to "
     "the corpus, not better", OFF(ngram), 1, 6, offsetof(asn_report, with_ngram)},
    {"nucleus", "nucleus", NULL, "tokens", 0,
     "mean tokens the heuristic kept per step (gen-candidates --nucleus): the nucleus size", OFF(nucleus), 1, 8,
     offsetof(asn_report, with_nucleus)},
};
enum { N_MEASURES = sizeof MEASURES / sizeof *MEASURES };

static const char *measure_unit(const measure *m)
{
    return m->score ? asn_score_field_named(m->score)->unit : m->unit;
}

static int measure_better(const measure *m)
{
    return m->score ? asn_score_field_named(m->score)->better : m->better;
}

static int measure_shown(const asn_report *r, const measure *m)
{
    return m->need == NO_NEED || *(const long *)((const char *)r + m->need) > 0;
}

static const char *measure_fmt(char *buf, const asn_report_heuristic *h, const measure *m)
{
    if (m->off == WIN_RATE)
        return fmt_win(buf, h);
    return fmt_mean(buf, (const asn_report_mean *)((const char *)h + m->off), m->decimals);
}

static const char *better_arrow(int better) { return better > 0 ? " \xe2\x86\x91" : better < 0 ? " \xe2\x86\x93" : ""; }

static void html_leaderboard(FILE *f, const asn_report *r)
{
    char b[NUM];
    fprintf(f, "<h2 id=\"leaderboard\">Heuristic leaderboard</h2>\n");
    if (!r->nh) {
        fprintf(f, "<p class=\"skip\">No candidate records in this index.</p>\n");
        return;
    }
    fprintf(f, "<p class=\"note\">Ordered by %s. Means over each heuristic's candidates that carry the "
               "value; <span class=\"na\">n/a</span>: no candidate does. \xe2\x86\x91 higher is better, "
               "\xe2\x86\x93 lower is better; hover a header for its definition.</p>\n", r->rank_by);
    fprintf(f, "<div class=\"wide\">\n<table id=\"leaderboard-table\">\n<thead><tr><th class=\"n\">#</th>"
               "<th>heuristic</th><th>family</th><th class=\"n\">temp</th><th class=\"n\">candidates</th>"
               "<th class=\"n\" title=\"candidates filter-topk kept\">kept</th>");
    for (int k = 0; k < N_MEASURES; k++)
        if (measure_shown(r, &MEASURES[k]))
            fprintf(f, "<th class=\"n\" title=\"%s\">%s<span class=\"unit\">%s%s</span></th>", MEASURES[k].title,
                    MEASURES[k].head, measure_unit(&MEASURES[k]), better_arrow(measure_better(&MEASURES[k])));
    fprintf(f, "</tr></thead>\n<tbody>\n");
    for (int i = 0; i < r->nh; i++) {
        const asn_report_heuristic *h = &r->h[i];
        fprintf(f, "<tr class=\"%s\" data-heuristic=\"", h->learned ? "learned" : "heuristic");
        h_text(f, h->name);
        fprintf(f, "\"><td class=\"n\">%d</td><td class=\"name\">", i + 1);
        h_text(f, h->name);
        fprintf(f, "</td><td class=\"family\">");
        h_text(f, h->family);
        fprintf(f, "</td>");
        h_num(f, fmt_temp(b, h));
        fprintf(f, "<td class=\"n\">%ld</td><td class=\"n\">%ld</td>", h->candidates, h->kept);
        for (int k = 0; k < N_MEASURES; k++)
            if (measure_shown(r, &MEASURES[k]))
                h_num(f, measure_fmt(b, h, &MEASURES[k]));
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</tbody>\n</table>\n</div>\n");
}

/* Marker shape of each family: the learned sampler a star, the others in
 * the order of their names. */
typedef struct family {
    const char *name;
    asn_marker marker;
    const char *color;
    int learned;
} family;

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int families(const asn_report *r, family *out, int cap)
{
    const char **names = asn_xmalloc(((size_t)r->nh + 1) * sizeof *names);
    int n = 0;
    for (int i = 0; i < r->nh; i++)
        names[n++] = r->h[i].family;
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    int m = 0, shape = 0;
    for (int i = 0; i < n && m < cap; i++) {
        if (i && !strcmp(names[i], names[i - 1]))
            continue;
        family *fa = &out[m];
        fa->name = names[i];
        fa->learned = !strcmp(names[i], "learned");
        if (fa->learned) {
            fa->marker = ASN_MARK_STAR;
            fa->color = "#111111";
        } else {
            fa->marker = (asn_marker)(shape % (ASN_MARK_COUNT - 1));
            fa->color = asn_color_category(shape);
            shape++;
        }
        m++;
    }
    free(names);
    return m;
}

static const family *family_of(const family *fs, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(fs[i].name, name))
            return &fs[i];
    return &fs[0];
}

enum { MAX_FAMILIES = 64, CHART_W = 1060, CHART_H = 520 };

/* Temperature colour of a heuristic (grey when it has none). */
static void temp_color(const asn_report_heuristic *h, double lo, double hi, char col[8])
{
    if (!h->has_temperature) {
        strcpy(col, "#9a9a9a");
        return;
    }
    asn_color_scale(hi > lo ? (h->temperature - lo) / (hi - lo) : 0.5, col);
}

/* Labels of the scatter: each tried right, left, above and below its
 * point, and placed where it overlaps no other label or point. */
enum { MAX_LABELLED = 25 }; /* more points than this: only the leaders and learned samplers get names */
/* Mean advance of a 12 px DejaVu Sans character, regular and bold (learned
 * samplers' labels), for estimating label widths. */
#define CHAR_W 6.6
#define CHAR_W_BOLD 7.6

typedef struct box {
    double x0, y0, x1, y1;
} box;

static int box_free(const box *b, const box *taken, int n, const asn_plot *p)
{
    if (b->x0 < p->left + 2 || b->x1 > p->width - p->right - 2 || b->y0 < p->top + 2 ||
        b->y1 > p->height - p->bottom - 2)
        return 0;
    for (int i = 0; i < n; i++)
        if (b->x0 < taken[i].x1 && taken[i].x0 < b->x1 && b->y0 < taken[i].y1 && taken[i].y0 < b->y1)
            return 0;
    return 1;
}

static void scatter_labels(asn_plot *p, const asn_report *r, int npoints)
{
    box *taken = asn_xmalloc(((size_t)r->nh * 2 + 1) * sizeof *taken);
    int nt = 0;
    for (int i = 0; i < r->nh; i++) {
        double x, y;
        if (asn_report_mean_get(&r->h[i].entropy, &x) && asn_report_mean_get(&r->h[i].quality, &y)) {
            double px = asn_plot_px(p, x), py = asn_plot_py(p, y), rr = r->h[i].learned ? 17 : 7;
            taken[nt++] = (box){px - rr, py - rr, px + rr, py + rr};
        }
    }
    /* learned samplers first, then in leaderboard order */
    for (int pass = 1; pass >= 0; pass--)
        for (int i = 0; i < r->nh; i++) {
            const asn_report_heuristic *h = &r->h[i];
            double x, y;
            if (h->learned != pass || (npoints > MAX_LABELLED && i >= 3 && !h->learned) ||
                !asn_report_mean_get(&h->entropy, &x) || !asn_report_mean_get(&h->quality, &y))
                continue;
            char lab[300];
            /* a learned sampler says so, unless its name already does */
            snprintf(lab, sizeof lab, "%s%s", h->learned && !strstr(h->name, "learned") ? "learned: " : "", h->name);
            double w = (h->learned ? CHAR_W_BOLD : CHAR_W) * (double)strlen(lab), px = asn_plot_px(p, x), py = asn_plot_py(p, y);
            double gap = h->learned ? 19 : 9;
            /* right, left, above, below, then the corners: box and text offset */
            double c = gap * 0.7;
            const struct {
                box b;
                double dx, dy;
                const char *anchor;
            } tries[] = {
                {{px + gap, py - 8, px + gap + w, py + 6}, gap, 4, "start"},
                {{px - gap - w, py - 8, px - gap, py + 6}, -gap, 4, "end"},
                {{px - w / 2, py - gap - 14, px + w / 2, py - gap}, 0, -gap - 3, "middle"},
                {{px - w / 2, py + gap, px + w / 2, py + gap + 14}, 0, gap + 11, "middle"},
                {{px + c, py - c - 14, px + c + w, py - c}, c, -c - 3, "start"},
                {{px + c, py + c, px + c + w, py + c + 14}, c, c + 11, "start"},
                {{px - c - w, py - c - 14, px - c, py - c}, -c, -c - 3, "end"},
                {{px - c - w, py + c, px - c, py + c + 14}, -c, c + 11, "end"},
            };
            int k = 0, nk = (int)(sizeof tries / sizeof *tries);
            while (k < nk && !box_free(&tries[k].b, taken, nt, p))
                k++;
            if (k == nk) {
                if (!h->learned)
                    continue; /* no room: its name is in the table and in the point's tooltip */
                k = px > p->width - p->right - w - gap ? 1 : 0;
            }
            taken[nt++] = tries[k].b;
            asn_plot_text(p, x, y, tries[k].dx, tries[k].dy, tries[k].anchor, lab, h->learned ? "label learned" : "label");
        }
    free(taken);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The distinct temperatures of the heuristics that pass `want`, ascending;
 * returns their number (temps holds r->nh). */
static int distinct_temps(const asn_report *r, size_t need_off, double *temps)
{
    int n = 0, m = 0;
    for (int i = 0; i < r->nh; i++) {
        const asn_report_heuristic *h = &r->h[i];
        if (h->has_temperature && ((const asn_report_mean *)((const char *)h + need_off))->n > 0)
            temps[n++] = h->temperature;
    }
    qsort(temps, (size_t)n, sizeof *temps, cmp_double);
    for (int i = 0; i < n; i++)
        if (!m || temps[i] != temps[m - 1])
            temps[m++] = temps[i];
    return m;
}

enum { MAX_TEMP_MARKS = 8 }; /* at most this many temperatures: the colour bar names each */

static void html_scatter(FILE *f, const asn_report *r, const family *fs, int nf)
{
    fprintf(f, "<h2 id=\"quality-diversity\">Quality vs diversity</h2>\n");
    const char *what = "the quality-vs-diversity scatter";
    if (!any_mean(r, OFF(quality))) {
        h_skip(f, what, "no candidate has a quality annotation (run rank-bt)");
        return;
    }
    if (!any_mean(r, OFF(entropy))) {
        h_skip(f, what, "no candidate has a diversity annotation (run score-diversity)");
        return;
    }
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    int n = 0, left_out = 0;
    for (int i = 0; i < r->nh; i++) {
        double x, y;
        const asn_report_heuristic *h = &r->h[i];
        if (!asn_report_mean_get(&h->entropy, &x) || !asn_report_mean_get(&h->quality, &y)) {
            left_out++;
            continue;
        }
        n++;
        xlo = fmin(xlo, x), xhi = fmax(xhi, x), ylo = fmin(ylo, y), yhi = fmax(yhi, y);
    }
    double *temps = asn_xmalloc(((size_t)r->nh + 1) * sizeof *temps);
    int nt = distinct_temps(r, OFF(entropy), temps);
    double tlo = nt ? temps[0] : 0, thi = nt ? temps[nt - 1] : 1;
    int no_temp = 0;
    for (int i = 0; i < r->nh; i++)
        no_temp |= !r->h[i].has_temperature && r->h[i].entropy.n > 0 && r->h[i].quality.n > 0;
    fprintf(f, "<p class=\"note\">One point per heuristic: its mean embedding entropy across seeds "
               "(diversity) against its mean Bradley-Terry rating (quality). Colour: temperature; shape: "
               "family%s. Up and to the right is better on both; hover a point for its numbers.",
            no_temp ? " (grey: no temperature)" : "");
    if (left_out)
        fprintf(f, " %d heuristic%s without both values %s left out.", left_out, left_out == 1 ? "" : "s",
                left_out == 1 ? "is" : "are");
    fprintf(f, "</p>\n");
    asn_plot p;
    char desc[160];
    snprintf(desc, sizeof desc, "Quality against diversity, one point per heuristic (%d points)", n);
    asn_plot_begin(&p, f, "scatter", desc, CHART_W, CHART_H, xlo, xhi,
                   "diversity: mean embedding entropy (log bits), higher is more diverse", ylo, yhi,
                   "quality: mean Bradley-Terry rating");
    fprintf(f, "<g class=\"points\">\n");
    /* learned heuristics last, so that they are drawn on top */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < r->nh; i++) {
            const asn_report_heuristic *h = &r->h[i];
            double x, y;
            if (h->learned != pass || !asn_report_mean_get(&h->entropy, &x) || !asn_report_mean_get(&h->quality, &y))
                continue;
            char col[8], title[512], tb[NUM];
            temp_color(h, tlo, thi, col);
            snprintf(title, sizeof title, "%s (#%d): quality %.3f, embedding entropy %.3f, temperature %s", h->name,
                     i + 1, y, x, fmt_temp(tb, h));
            const family *fa = family_of(fs, nf, h->family);
            if (h->learned) {
                /* a ring around it and its name, so it is found at once */
                asn_plot_marker(&p, x, y, ASN_MARK_CIRCLE, 17, "#fff1b8", "#111111", "halo", NULL);
                asn_plot_marker(&p, x, y, fa->marker, 8, col, "#111111", "pt learned", title);
            } else {
                asn_plot_marker(&p, x, y, fa->marker, 6, col, "#333333", "pt", title);
            }
        }
    fprintf(f, "</g>\n<g class=\"labels\" font-size=\"12\">\n");
    scatter_labels(&p, r, n);
    fprintf(f, "</g>\n");
    asn_plot_legend_title(&p, "family (shape)");
    for (int i = 0; i < nf; i++)
        asn_plot_legend_marker(&p, fs[i].marker, "#c8c8c8", "#333333", NULL, fs[i].name);
    if (nt) {
        asn_plot_legend_title(&p, "temperature (colour)");
        asn_plot_legend_colorbar(&p, tlo, thi, 150, nt <= MAX_TEMP_MARKS ? temps : NULL, nt);
    }
    asn_plot_end(&p);
    free(temps);
}


static void html_curves(FILE *f, const asn_report *r, const family *fs, int nf)
{
    fprintf(f, "<h2 id=\"temperature-curves\">Quality over temperature, per family</h2>\n");
    const char *what = "the per-family curves";
    if (!any_mean(r, OFF(quality))) {
        h_skip(f, what, "no candidate has a quality annotation (run rank-bt)");
        return;
    }
    double *temps = asn_xmalloc(((size_t)r->nh + 1) * sizeof *temps);
    int nt = distinct_temps(r, OFF(quality), temps);
    if (!nt) {
        free(temps);
        h_skip(f, what, "no heuristic with a quality annotation has a temperature");
        return;
    }
    /* mean quality of each (family, temperature): every candidate of the
     * family's heuristics at that temperature */
    asn_report_mean *cell = asn_xcalloc((size_t)nf * (size_t)nt, sizeof *cell);
    double ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < r->nh; i++) {
        const asn_report_heuristic *h = &r->h[i];
        if (!h->has_temperature || !h->quality.n)
            continue;
        int fi = (int)(family_of(fs, nf, h->family) - fs), ti = 0;
        while (temps[ti] != h->temperature)
            ti++;
        cell[fi * nt + ti].sum += h->quality.sum;
        cell[fi * nt + ti].n += h->quality.n;
    }
    for (int k = 0; k < nf * nt; k++) {
        double v;
        if (asn_report_mean_get(&cell[k], &v))
            ylo = fmin(ylo, v), yhi = fmax(yhi, v);
    }
    /* learned samplers without a temperature: a horizontal line each */
    for (int i = 0; i < r->nh; i++) {
        double v;
        if (r->h[i].learned && !r->h[i].has_temperature && asn_report_mean_get(&r->h[i].quality, &v))
            ylo = fmin(ylo, v), yhi = fmax(yhi, v);
    }
    fprintf(f, "<p class=\"note\">Mean Bradley-Terry rating of every candidate of a family's heuristics at each "
               "temperature (a family's heuristics differ in their other parameters: top_p 0.9 and 0.95 are one "
               "family).%s</p>\n",
            nt < 2 ? " Only one temperature was sampled, so each family is a single point." : "");
    asn_plot p;
    asn_plot_begin(&p, f, "curves", "Mean quality against temperature, one line per family", CHART_W, CHART_H,
                   temps[0], temps[nt - 1], "temperature", ylo, yhi, "quality: mean Bradley-Terry rating");
    double *xs = asn_xmalloc((size_t)nt * sizeof *xs), *ys = asn_xmalloc((size_t)nt * sizeof *ys);
    for (int fi = 0; fi < nf; fi++) {
        int n = 0;
        for (int ti = 0; ti < nt; ti++)
            if (asn_report_mean_get(&cell[fi * nt + ti], &ys[n]))
                xs[n++] = temps[ti];
        if (!n)
            continue;
        fprintf(f, "<g class=\"family%s\" data-family=\"", fs[fi].learned ? " learned" : "");
        h_text(f, fs[fi].name);
        fprintf(f, "\">\n");
        if (n > 1)
            asn_plot_polyline(&p, n, xs, ys, fs[fi].color, fs[fi].learned ? 3 : 2, NULL, "curve");
        if (fs[fi].learned)
            asn_plot_text(&p, xs[n - 1], ys[n - 1], -14, 4, "end", "learned sampler", "label learned");
        for (int k = 0; k < n; k++) {
            char title[300];
            snprintf(title, sizeof title, "%s at temperature %g: mean quality %.3f", fs[fi].name, xs[k], ys[k]);
            asn_plot_marker(&p, xs[k], ys[k], fs[fi].marker, fs[fi].learned ? 8 : 4.5,
                            fs[fi].learned ? "#ffd23f" : fs[fi].color, fs[fi].learned ? "#111111" : "#ffffff",
                            "pt", title);
        }
        fprintf(f, "</g>\n");
    }
    for (int i = 0; i < r->nh; i++) {
        double v;
        if (r->h[i].learned && !r->h[i].has_temperature && asn_report_mean_get(&r->h[i].quality, &v)) {
            char lab[300];
            /* "learned: NAME", unless the name says so already */
            snprintf(lab, sizeof lab, "%s%s", strstr(r->h[i].name, "learned") ? "" : "learned: ", r->h[i].name);
            asn_plot_hline(&p, v, "#111111", "6 4", lab);
        }
    }
    asn_plot_legend_title(&p, "family");
    for (int fi = 0; fi < nf; fi++) {
        int has = 0;
        for (int ti = 0; ti < nt; ti++)
            has |= cell[fi * nt + ti].n > 0;
        if (has)
            asn_plot_legend_marker(&p, fs[fi].marker, fs[fi].learned ? "#ffd23f" : fs[fi].color,
                                   fs[fi].learned ? "#111111" : "#ffffff", fs[fi].color, fs[fi].name);
    }
    asn_plot_end(&p);
    free(xs), free(ys), free(cell), free(temps);
}

static void html_dataset(FILE *f, const asn_report *r)
{
    char b[NUM];
    fprintf(f, "<h2 id=\"dataset\">Dataset</h2>\n<table id=\"dataset-table\">\n");
    fprintf(f, "<tr><th>prompts</th><td class=\"n\">%ld</td><td>", r->prompts);
    if (r->prompts && r->min_per_prompt == r->max_per_prompt)
        fprintf(f, "%ld candidates each", r->min_per_prompt);
    else if (r->prompts)
        fprintf(f, "%ld to %ld candidates each", r->min_per_prompt, r->max_per_prompt);
    if (r->prompt_records)
        fprintf(f, "%s%ld prompt records indexed", r->prompts ? "; " : "", r->prompt_records);
    fprintf(f, "</td></tr>\n");
    fprintf(f, "<tr><th>candidates</th><td class=\"n\">%ld</td><td>mean length %s tokens</td></tr>\n",
            r->candidates, fmt_mean(b, &r->tokens, 1));
    fprintf(f, "<tr><th>heuristics</th><td class=\"n\">%d</td><td></td></tr>\n", r->nh);
    fprintf(f, "<tr><th>seeds</th><td class=\"n\">%d</td><td>", r->nseeds);
    write_seeds(f, r);
    fprintf(f, "</td></tr>\n");
    fprintf(f, "<tr><th>kept</th><td class=\"n\">%ld</td><td>%s of the candidates (filter-topk)</td></tr>\n",
            r->kept, fmt_share(b, r->kept, r->candidates));
    fprintf(f, "<tr><th>preference pairs</th><td class=\"n\">%ld</td><td>", r->pairs);
    if (r->pairs)
        fprintf(f, "mean margin %s", fmt_mean(b, &r->margin, 3));
    fprintf(f, "</td></tr>\n</table>\n");

    fprintf(f, "<h3>Finish reasons</h3>\n<table id=\"finish-table\">\n<tr><th>finish</th><th class=\"n\">"
               "candidates</th><th class=\"n\">share</th><th></th></tr>\n");
    for (int i = 0; i < r->finish.n; i++) {
        const asn_report_count *c = &r->finish.v[i];
        double share = r->candidates ? 100.0 * (double)c->n / (double)r->candidates : 0;
        fprintf(f, "<tr><td>");
        h_text(f, c->value);
        fprintf(f, "</td><td class=\"n\">%ld</td><td class=\"n\">%s</td><td><span class=\"bar\" "
                   "style=\"width:%.0fpx\"></span></td></tr>\n", c->n, fmt_share(b, c->n, r->candidates),
                share * 3);
    }
    fprintf(f, "</table>\n");

    fprintf(f, "<h3>Annotations</h3>\n<table id=\"annotations-table\">\n<tr><th>annotation</th><th>tool</th>"
               "<th class=\"n\">candidates</th><th class=\"n\">share</th></tr>\n");
    static const struct {
        const char *name, *tool;
        size_t off;
    } ann[] = {
        {"quality", "rank-bt", offsetof(asn_report, with_quality)},
        {"diversity", "score-diversity", offsetof(asn_report, with_diversity)},
        {"n-gram coverage", "score-ngram", offsetof(asn_report, with_ngram)},
        {"verifiable reward", "score-verifiable", offsetof(asn_report, with_verifiable)},
        {"final score", "filter-topk", offsetof(asn_report, with_score)},
    };
    for (size_t i = 0; i < sizeof ann / sizeof *ann; i++) {
        long n = *(const long *)((const char *)r + ann[i].off);
        fprintf(f, "<tr><td>%s</td><td>%s</td><td class=\"n\">%ld</td><td class=\"n\">%s</td></tr>\n", ann[i].name,
                ann[i].tool, n, fmt_share(b, n, r->candidates));
    }
    fprintf(f, "</table>\n");
}

/* A provenance entry listing values (and their digests) with counts. */
static void h_counts(FILE *f, const char *term, const asn_report_counts *c, long total)
{
    fprintf(f, "<dt>%s</dt><dd>", term);
    if (!c->n)
        fprintf(f, "<span class=\"na\">not recorded</span>");
    for (int i = 0; i < c->n; i++) {
        fprintf(f, "%s", i ? "<br/>" : "");
        h_text(f, c->v[i].value);
        if (c->v[i].detail) {
            fprintf(f, " <code>");
            h_text(f, c->v[i].detail);
            fprintf(f, "</code>");
        }
        if (c->n > 1 || c->v[i].n != total)
            fprintf(f, " <span class=\"na\">(%ld candidates)</span>", c->v[i].n);
    }
    fprintf(f, "</dd>\n");
}

static void html_provenance(FILE *f, const asn_report *r)
{
    fprintf(f, "<h2 id=\"provenance\">Provenance</h2>\n<dl class=\"prov\">\n");
    h_counts(f, "model (sha256)", &r->models, r->candidates);
    h_counts(f, "judge (sha256)", &r->judges, r->with_quality);
    h_counts(f, "chat template", &r->templates, r->candidates);
    h_counts(f, "max new tokens", &r->max_new_tokens, r->candidates);
    fprintf(f, "<dt>heuristics</dt><dd>%d</dd>\n<dt>seeds</dt><dd>", r->nh);
    write_seeds(f, r);
    fprintf(f, "</dd>\n");
    h_counts(f, "scoring weights", &r->weights, r->with_score);
    fprintf(f, "<dt>generated by</dt><dd>");
    if (!r->generators.n)
        fprintf(f, "<span class=\"na\">not recorded (candidates of a gen-candidates older than asn 0.1.0, or of "
                   "another program)</span>");
    for (int i = 0; i < r->generators.n; i++) {
        fprintf(f, "%s", i ? "<br/>" : "");
        h_text(f, r->generators.v[i].value);
        if (r->generators.n > 1 || r->generators.v[i].n != r->candidates)
            fprintf(f, " <span class=\"na\">(%ld candidate%s)</span>", r->generators.v[i].n,
                    ASN_PLURAL(r->generators.v[i].n));
    }
    fprintf(f, "</dd>\n<dt>this page</dt><dd>report (asn) %s</dd>\n</dl>\n", ASN_VERSION);
}

int asn_report_write_html(const asn_report *r, const char *title, FILE *f, asn_err *e)
{
    family fs[MAX_FAMILIES];
    int nf = families(r, fs, MAX_FAMILIES);
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>asn report: ");
    h_text(f, title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n<h1>asn report: ", CSS);
    h_text(f, title);
    fprintf(f, "</h1>\n<p class=\"sub\">");
    for (int i = 0; i < r->models.n; i++) {
        fprintf(f, "%s", i ? ", " : "model ");
        h_text(f, r->models.v[i].value);
    }
    fprintf(f, "%s%ld candidates from %d heuristics over %ld prompts</p>\n", r->models.n ? " · " : "",
            r->candidates, r->nh, r->prompts);
    fprintf(f, "<div class=\"cards\">\n");
    const struct {
        const char *label;
        long v;
    } cards[] = {{"prompts", r->prompts}, {"candidates", r->candidates}, {"heuristics", r->nh},
                 {"seeds", r->nseeds},     {"kept", r->kept},             {"pairs", r->pairs}};
    for (size_t i = 0; i < sizeof cards / sizeof *cards; i++)
        fprintf(f, "<div class=\"card\"><b>%ld</b><span>%s</span></div>\n", cards[i].v, cards[i].label);
    fprintf(f, "</div>\n");
    int lr = asn_report_learned_rank(r);
    if (lr) {
        fprintf(f, "<p class=\"callout\" id=\"learned\">Learned sampler <b>");
        h_text(f, r->h[lr - 1].name);
        fprintf(f, "</b> ");
        write_learned_sentence(f, r, lr - 1);
        fprintf(f, ".</p>\n");
    }
    html_leaderboard(f, r);
    if (r->nh) {
        html_scatter(f, r, fs, nf);
        html_curves(f, r, fs, nf);
    }
    if (r->analysis)
        asn_report_analysis_html(f, r->analysis);
    html_dataset(f, r);
    html_provenance(f, r);
    fprintf(f, "<footer>Written by report (asn) %s from the records of the index; the same index gives the same "
               "page.</footer>\n</main>\n</body>\n</html>\n", ASN_VERSION);
    if (ferror(f))
        return asn_err_set(e, "writing the HTML page failed");
    return 0;
}

/* ================================================================= text */

static void t_counts(FILE *f, const char *term, const asn_report_counts *c)
{
    fprintf(f, "  %-18s", term);
    if (!c->n)
        fprintf(f, "not recorded");
    for (int i = 0; i < c->n; i++) {
        fprintf(f, "%s%s", i ? "\n                    " : "", c->v[i].value);
        if (c->v[i].detail)
            fprintf(f, "  %s", c->v[i].detail);
        if (c->n > 1)
            fprintf(f, "  (%ld candidates)", c->v[i].n);
    }
    fprintf(f, "\n");
}

int asn_report_write_text(const asn_report *r, const char *title, FILE *f, asn_err *e)
{
    char b[NUM];
    int tl = (int)strlen(title) + 12;
    fprintf(f, "asn report: %s\n", title);
    for (int i = 0; i < tl; i++)
        fputc('=', f);
    fprintf(f, "\n\nDataset\n");
    fprintf(f, "  %-18s%ld", "prompts", r->prompts);
    if (r->prompts && r->min_per_prompt == r->max_per_prompt)
        fprintf(f, " (%ld candidates each)", r->min_per_prompt);
    else if (r->prompts)
        fprintf(f, " (%ld to %ld candidates each)", r->min_per_prompt, r->max_per_prompt);
    fprintf(f, "\n  %-18s%ld (mean length %s tokens)\n", "candidates", r->candidates, fmt_mean(b, &r->tokens, 1));
    fprintf(f, "  %-18s%d\n  %-18s%d (", "heuristics", r->nh, "seeds", r->nseeds);
    write_seeds(f, r);
    fprintf(f, ")\n  %-18s%ld (%s)\n  %-18s%ld", "kept", r->kept, fmt_share(b, r->kept, r->candidates), "pairs",
            r->pairs);
    if (r->pairs)
        fprintf(f, " (mean margin %s)", fmt_mean(b, &r->margin, 3));
    fprintf(f, "\n  %-18s", "finish reasons");
    for (int i = 0; i < r->finish.n; i++)
        fprintf(f, "%s%s %ld (%s)", i ? ", " : "", r->finish.v[i].value, r->finish.v[i].n,
                fmt_share(b, r->finish.v[i].n, r->candidates));
    fprintf(f, "%s\n  %-18squality %ld, diversity %ld, n-gram %ld, verifiable %ld, final score %ld (of %ld)\n",
            r->finish.n ? "" : "n/a", "annotations", r->with_quality, r->with_diversity, r->with_ngram,
            r->with_verifiable, r->with_score, r->candidates);

    fprintf(f, "\nLeaderboard (by %s)\n", r->rank_by);
    if (!r->nh)
        fprintf(f, "  no candidate records in this index\n");
    int w = 9;
    for (int i = 0; i < r->nh; i++)
        if ((int)strlen(r->h[i].name) > w)
            w = (int)strlen(r->h[i].name);
    if (w > 40)
        w = 40;
    int fw = 6;
    for (int i = 0; i < r->nh; i++)
        if ((int)strlen(r->h[i].family) > fw)
            fw = (int)strlen(r->h[i].family);
    if (r->nh) {
        fprintf(f, "  %3s  %-*s  %-*s %5s %5s %5s", "#", w, "heuristic", fw, "family", "temp", "cand", "kept");
        for (int k = 0; k < N_MEASURES; k++)
            if (measure_shown(r, &MEASURES[k]))
                fprintf(f, " %*s", MEASURES[k].width, MEASURES[k].text);
        /* the second header line: which way is better (no trailing blanks) */
        char dir[512];
        int n = snprintf(dir, sizeof dir, "  %3s  %-*s  %-*s %5s %5s %5s", "", w, "", fw, "", "", "", "");
        for (int k = 0; k < N_MEASURES && n < (int)sizeof dir; k++)
            if (measure_shown(r, &MEASURES[k]))
                n += snprintf(dir + n, sizeof dir - (size_t)n, " %*s", MEASURES[k].width,
                              measure_better(&MEASURES[k]) > 0   ? "higher"
                              : measure_better(&MEASURES[k]) < 0 ? "lower"
                                                                 : "");
        n = n < (int)sizeof dir ? n : (int)sizeof dir - 1;
        while (n > 0 && dir[n - 1] == ' ')
            dir[--n] = 0;
        fprintf(f, "\n%s\n", dir);
    }
    for (int i = 0; i < r->nh; i++) {
        const asn_report_heuristic *h = &r->h[i];
        char t[NUM], v[NUM];
        fprintf(f, "%c %3d  %-*.*s  %-*s %5s %5ld %5ld", h->learned ? '*' : ' ', i + 1, w, w, h->name, fw, h->family,
                fmt_temp(t, h), h->candidates, h->kept);
        for (int k = 0; k < N_MEASURES; k++)
            if (measure_shown(r, &MEASURES[k]))
                fprintf(f, " %*s", MEASURES[k].width, measure_fmt(v, h, &MEASURES[k]));
        fprintf(f, "\n");
    }
    if (r->nh) {
        fprintf(f, "  (\"higher\"/\"lower\": the better direction; units:");
        for (int k = 0; k < N_MEASURES; k++)
            if (measure_shown(r, &MEASURES[k]))
                fprintf(f, "%s %s %s", k ? "," : "", MEASURES[k].text, measure_unit(&MEASURES[k]));
        fprintf(f, ")\n");
    }
    int lr = asn_report_learned_rank(r);
    fprintf(f, "\nLearned sampler\n  ");
    if (lr) {
        fprintf(f, "%s (marked *): ", r->h[lr - 1].name);
        write_learned_sentence(f, r, lr - 1);
        fprintf(f, "\n");
    } else {
        fprintf(f, "none among the heuristics\n");
    }

    if (r->analysis)
        asn_report_analysis_text(f, r->analysis);

    fprintf(f, "\nCharts (in the HTML page)\n");
    int q = any_mean(r, OFF(quality)), d = any_mean(r, OFF(entropy));
    fprintf(f, "  quality vs diversity   %s\n", !r->nh ? "not drawn: no candidates"
                                                : !q  ? "not drawn: no quality annotation (run rank-bt)"
                                                : !d  ? "not drawn: no diversity annotation (run score-diversity)"
                                                      : "drawn");
    fprintf(f, "  quality over temperature  %s\n", !r->nh ? "not drawn: no candidates"
                                                   : !q  ? "not drawn: no quality annotation (run rank-bt)"
                                                         : "drawn");

    fprintf(f, "\nProvenance\n");
    t_counts(f, "model", &r->models);
    t_counts(f, "judge", &r->judges);
    t_counts(f, "chat template", &r->templates);
    t_counts(f, "max new tokens", &r->max_new_tokens);
    t_counts(f, "scoring weights", &r->weights);
    fprintf(f, "  %-18s", "generated by");
    if (!r->generators.n)
        fprintf(f, "not recorded (candidates of a gen-candidates older than asn 0.1.0, or of another program)");
    for (int i = 0; i < r->generators.n; i++)
        fprintf(f, "%s%s (%ld candidate%s)", i ? "\n                    " : "", r->generators.v[i].value,
                r->generators.v[i].n, ASN_PLURAL(r->generators.v[i].n));
    fprintf(f, "\n  %-18sreport (asn) %s\n", "this summary", ASN_VERSION);
    if (ferror(f))
        return asn_err_set(e, "writing the text summary failed");
    return 0;
}

int asn_report_write_brief(const asn_report *r, FILE *f, asn_err *e)
{
    char b[NUM], c[NUM];
    fprintf(f, "%ld prompts, %ld candidates, %d heuristics, %ld kept, %ld pairs\n", r->prompts, r->candidates, r->nh,
            r->kept, r->pairs);
    if (r->nh && r->rank_key < 2)
        fprintf(f, "best heuristic (by %s): %s (final %s, quality %s)\n", r->rank_by, r->h[0].name,
                fmt_mean(b, &r->h[0].final_score, 3), fmt_mean(c, &r->h[0].quality, 3));
    int lr = asn_report_learned_rank(r);
    if (lr) {
        fprintf(f, "learned sampler %s: ", r->h[lr - 1].name);
        write_learned_sentence(f, r, lr - 1);
        fprintf(f, "\n");
    }
    if (ferror(f))
        return asn_err_set(e, "writing the summary failed");
    return 0;
}
