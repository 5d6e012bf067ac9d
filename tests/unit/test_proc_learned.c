/* test_proc_learned.c — the `learned` processor (lib/sampling/proc_learned.c)
 * and its alias `adaptive_sampler`:
 *  - asn_pipeline_apply of a learned heuristic against the outputs of an
 *    independent PyTorch float64 implementation of the five reference
 *    models (tests/fixtures/sampler/, written by tests/reference/sampler_ref.py),
 *    |asn - ref| <= 1e-5 * max |ref|, V = 50 (with -inf tokens) and 5000,
 *    under both names;
 *  - min_p then learned: the tokens min_p removes stay -inf and the network
 *    sees only the others (against the reference, whose rows had exactly
 *    those tokens at -inf), learned then top_k;
 *  - the process-wide cache (shared by path and by file, released by the
 *    last holder), threads building and applying heuristics at once, one
 *    workspace serving samplers of several configurations;
 *  - errors: a missing file, a directory, a file that is not GGUF and a
 *    PyTorch checkpoint (both pointing to the converter), a GGUF of another
 *    architecture, a missing or mistyped parameter, an unknown parameter, a
 *    class name or config that disagrees with the file; in heuristics files
 *    the error carries FILE:LINE:COL, pipeline, processor and parameter. */
#include "asn/gguf.h"
#include "asn/sampler_net.h"
#include "asn/sampling.h"
#include "t.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REF_TOL 1e-5 /* as test_sampler_net.c: per tensor, relative to max |ref| */

static asn_workspace *ws;
static char tmp_dir[256];

static const char *path_in(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}
static const char *fixture(char *buf, size_t n, const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(buf, n, "%s/tests/%s", root ? root : ".", name);
    return buf;
}
static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        printf("not ok - cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

/* A heuristic from a JSON processor list; -1 with the error in e. */
static int build(asn_heuristic *h, const char *json, asn_err *e)
{
    json_error_t je;
    json_t *v = json_loads(json, 0, &je);
    if (!v) {
        printf("not ok - bad test JSON %s: %s\n", json, je.text);
        exit(1);
    }
    int rc = asn_heuristic_init(h, "t", v, e);
    json_decref(v);
    return rc;
}

/* The processor list [{learned path}] (alias 0) or [{adaptive_sampler ...}]. */
static void learned_json(char *buf, size_t n, const char *path, const char *before, const char *after)
{
    snprintf(buf, n, "[%s{\"name\":\"learned\",\"params\":{\"path\":\"%s\"}}%s]", before ? before : "", path,
             after ? after : "");
}

/* max |a - b| / max |b| over the finite entries of b; -inf must match. */
static double rel_err(const float *a, const float *b, size_t n, int *mismatch)
{
    double m = 0, err = 0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(b[i]) || isinf(a[i]) || isnan(a[i])) {
            if (!(a[i] == b[i]))
                *mismatch = 1;
            continue;
        }
        m = fmax(m, fabs(b[i]));
        err = fmax(err, fabs((double)a[i] - b[i]));
    }
    return m > 0 ? err / m : err;
}

typedef struct ref_row {
    asn_gguf *g;
    const float *logits, *out;
    int V;
} ref_row;

static int ref_open(ref_row *r, const char *model, int V)
{
    char name[128], path[4096];
    asn_err e;
    snprintf(name, sizeof name, "fixtures/sampler/%s_v%d.gguf", model, V);
    r->g = asn_gguf_open(fixture(path, sizeof path, name), &e);
    r->V = V;
    r->logits = r->out = NULL;
    if (r->g) {
        const asn_gguf_tensor *l = asn_gguf_find_tensor(r->g, "logits"), *o = asn_gguf_find_tensor(r->g, "out");
        if (l && o && l->type == ASN_T_F32 && o->type == ASN_T_F32 && l->nbytes == V * sizeof(float) &&
            o->nbytes == V * sizeof(float))
            r->logits = l->data, r->out = o->data;
    }
    char label[200];
    snprintf(label, sizeof label, "reference %s V=%d: expected values open", model, V);
    T_OK(label, r->g && r->logits, "%s", r->g ? "tensors logits/out missing" : e.msg);
    return r->logits ? 0 : -1;
}

/* --------------------------------------------------- against the reference */

static const struct {
    const char *model, *cls, *config; /* config: YAML text of the reference's config file */
} MODELS[] = {
    {"local", "LocalProbabilityTransform", "hidden_dims: 32\n"},
    {"dist_static", "SimpleDistributionAwareTransform", "hidden_dims: 32\nuse_dynamic_truncation: False\n"},
    {"dist_dynamic", "SimpleDistributionAwareTransform", "hidden_dims: 32\nuse_dynamic_truncation: True\n"},
    {"net", "SamplingNetwork", "d_model: 32\nd_ff: 64\nn_blocks: 4\nn_heads: 4\nscale: False\n"},
    {"net_scale", "SamplingNetwork", "d_model: 32\nd_ff: 64\nn_blocks: 4\nn_heads: 4\nscale: True\n"},
};
#define N_MODELS ((int)(sizeof MODELS / sizeof MODELS[0]))

static void check_against(const char *label, const asn_heuristic *h, const ref_row *r)
{
    float *row = malloc((size_t)r->V * sizeof *row);
    memcpy(row, r->logits, (size_t)r->V * sizeof *row);
    asn_err e;
    int rc = asn_pipeline_apply(h, row, r->V, NULL, NULL, ws, &e);
    int mism = 0;
    double err = rc ? 0 : rel_err(row, r->out, (size_t)r->V, &mism);
    T_OK(label, !rc && err <= REF_TOL && !mism, "%s (relative error %g, -inf mismatch %d)", rc ? e.msg : "", err,
         mism);
    free(row);
}

static void test_reference(void)
{
    char path[4096], cfg[4096], json[16384], label[300], name[128];
    asn_err e;
    for (int m = 0; m < N_MODELS; m++) {
        snprintf(name, sizeof name, "fixtures/sampler/%s.gguf", MODELS[m].model);
        fixture(path, sizeof path, name);
        snprintf(name, sizeof name, "%s.yaml", MODELS[m].model);
        path_in(cfg, sizeof cfg, tmp_dir, name);
        write_file(cfg, MODELS[m].config, strlen(MODELS[m].config));
        asn_heuristic h, a;
        learned_json(json, sizeof json, path, NULL, NULL);
        int rc = build(&h, json, &e);
        snprintf(label, sizeof label, "learned %s: heuristic builds", MODELS[m].model);
        T_OK(label, rc == 0, "%s", e.msg);
        snprintf(json, sizeof json,
                 "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_model_name\":\"%s\","
                 "\"sampler_config_path\":\"%s\",\"sampler_checkpoint_path\":\"%s\",\"device\":\"cuda:0\"}}]",
                 MODELS[m].cls, cfg, path);
        int rca = build(&a, json, &e);
        snprintf(label, sizeof label, "adaptive_sampler %s (class, config, device as the reference gives them): builds",
                 MODELS[m].model);
        T_OK(label, rca == 0, "%s", e.msg);
        for (int k = 0; k < 2; k++) {
            int V = k ? 5000 : 50;
            ref_row r;
            if (ref_open(&r, MODELS[m].model, V) == 0) {
                if (!rc) {
                    snprintf(label, sizeof label, "learned %s V=%d: pipeline output = reference output",
                             MODELS[m].model, V);
                    check_against(label, &h, &r);
                }
                if (!rca) {
                    snprintf(label, sizeof label, "adaptive_sampler %s V=%d: pipeline output = reference output",
                             MODELS[m].model, V);
                    check_against(label, &a, &r);
                }
            }
            asn_gguf_close(r.g);
        }
        if (!rc && !rca) {
            snprintf(label, sizeof label, "learned and adaptive_sampler %s share one loaded sampler", MODELS[m].model);
            T_OK(label, asn_learned_sampler(&h.procs[0]) && asn_learned_sampler(&h.procs[0]) == asn_learned_sampler(&a.procs[0]), "not shared");
            const json_t *pa = json_array_get(a.processors, 0);
            snprintf(label, sizeof label, "adaptive_sampler %s: the heuristic keeps the name and params as written",
                     MODELS[m].model);
            T_OK(label, h.procs[0].kind == ASN_PROC_LEARNED && a.procs[0].kind == ASN_PROC_LEARNED &&
                            !strcmp(json_string_value(json_object_get(pa, "name")), "adaptive_sampler") &&
                            json_object_size(json_object_get(pa, "params")) == 4,
                 "kind %d, or the name or params changed", a.procs[0].kind);
        }
        if (!rc)
            asn_heuristic_clear(&h);
        if (!rca)
            asn_heuristic_clear(&a);
        unlink(cfg);
    }
}

/* ---------------------------------------------------- pipelines with it */

static void test_pipelines(void)
{
    char path[4096], json[16384];
    asn_err e;
    fixture(path, sizeof path, "fixtures/sampler/net.gguf");
    /* the reference row with its -inf tokens made merely improbable:
     * min_p removes exactly them, so the network sees what the reference's did */
    ref_row r;
    if (ref_open(&r, "net", 50) == 0) {
        float *row = malloc(50 * sizeof *row), mx = -INFINITY;
        for (int i = 0; i < 50; i++)
            mx = fmaxf(mx, r.logits[i]);
        int n_inf = 0;
        for (int i = 0; i < 50; i++) {
            int removed = r.logits[i] == -INFINITY;
            row[i] = removed ? mx - 200 : r.logits[i];
            n_inf += removed;
        }
        asn_heuristic h;
        learned_json(json, sizeof json, path, "{\"name\":\"min_p\",\"params\":{\"min_p\":1e-6}},", NULL);
        int rc = build(&h, json, &e);
        rc = rc ? rc : asn_pipeline_apply(&h, row, 50, NULL, NULL, ws, &e);
        int mism = 0;
        double err = rc ? 0 : rel_err(row, r.out, 50, &mism);
        T_OK("min_p then learned: the tokens min_p removes stay -inf, the rest = reference output",
             !rc && n_inf > 0 && err <= REF_TOL && !mism, "%s (relative error %g, -inf mismatch %d, %d -inf)",
             rc ? e.msg : "", err, mism, n_inf);
        if (!rc)
            asn_heuristic_clear(&h);
        /* learned then top_k 5: the 5 largest reference outputs survive, unchanged */
        memcpy(row, r.logits, 50 * sizeof *row);
        learned_json(json, sizeof json, path, NULL, ",{\"name\":\"top_k\",\"params\":{\"top_k\":5}}");
        rc = build(&h, json, &e);
        rc = rc ? rc : asn_pipeline_apply(&h, row, 50, NULL, NULL, ws, &e);
        int bad = rc, kept = 0;
        for (int i = 0; !rc && i < 50; i++) {
            int above = 0;
            for (int j = 0; j < 50; j++)
                above += r.out[j] > r.out[i];
            if (above < 5) {
                kept++;
                bad |= !(fabsf(row[i] - r.out[i]) <= REF_TOL * 20);
            } else {
                bad |= row[i] != -INFINITY;
            }
        }
        T_OK("learned then top_k 5: the 5 most probable reference tokens, unchanged", !bad && kept == 5, "%s",
             rc ? e.msg : "wrong tokens or values");
        if (!rc)
            asn_heuristic_clear(&h);
        free(row);
    }
    asn_gguf_close(r.g);
    /* a larger row: whatever min_p removes stays -inf, and the kept tokens
     * get what the network gives them alone */
    if (ref_open(&r, "net", 5000) == 0) {
        int V = 5000;
        float *row = malloc((size_t)V * sizeof *row), *alone = malloc((size_t)V * sizeof *alone);
        memcpy(row, r.logits, (size_t)V * sizeof *row);
        asn_heuristic h, hm, hl;
        learned_json(json, sizeof json, path, "{\"name\":\"min_p\",\"params\":{\"min_p\":0.01}},", NULL);
        int rc = build(&h, json, &e);
        rc = rc ? rc : build(&hm, "[{\"name\":\"min_p\",\"params\":{\"min_p\":0.01}}]", &e);
        learned_json(json, sizeof json, path, NULL, NULL);
        rc = rc ? rc : build(&hl, json, &e);
        float *after_min_p = malloc((size_t)V * sizeof *after_min_p);
        memcpy(after_min_p, r.logits, (size_t)V * sizeof *after_min_p);
        rc = rc ? rc : asn_pipeline_apply(&hm, after_min_p, V, NULL, NULL, ws, &e);
        rc = rc ? rc : asn_pipeline_apply(&h, row, V, NULL, NULL, ws, &e);
        int n = 0, removed = 0, bad = rc;
        for (int i = 0; !rc && i < V; i++) {
            if (after_min_p[i] == -INFINITY)
                removed++, bad |= row[i] != -INFINITY;
            else
                alone[n++] = r.logits[i];
        }
        rc = rc ? rc : asn_pipeline_apply(&hl, alone, n, NULL, NULL, ws, &e);
        double worst = 0;
        for (int i = 0, j = 0; !rc && i < V; i++)
            if (after_min_p[i] != -INFINITY)
                worst = fmax(worst, fabs(row[i] - alone[j++]));
        T_OK("min_p 0.01 then learned (V=5000): removed tokens stay -inf, kept ones as the network gives them alone",
             !rc && !bad && removed > 0 && n > 1 && worst < 1e-4, "%s (removed %d, kept %d, max difference %g)",
             rc ? e.msg : "", removed, n, worst);
        asn_heuristic_clear(&h);
        asn_heuristic_clear(&hm);
        asn_heuristic_clear(&hl);
        free(row), free(alone), free(after_min_p);
    }
    asn_gguf_close(r.g);
}

/* ---------------------------------------------- cache, threads, workspaces */

static void test_cache(void)
{
    char path[4096], other[4096], json[16384];
    asn_err e;
    fixture(path, sizeof path, "fixtures/sampler/net.gguf");
    /* the same file by another spelling of its path */
    const char *root = getenv("ASN_ROOT");
    snprintf(other, sizeof other, "%s/tests/fixtures/./sampler/../sampler/net.gguf", root ? root : ".");
    asn_heuristic a, b, c;
    learned_json(json, sizeof json, path, NULL, NULL);
    int ok = build(&a, json, &e) == 0;
    learned_json(json, sizeof json, other, NULL, NULL);
    ok = ok && build(&b, json, &e) == 0;
    T_OK("two heuristics, two spellings of one file: one loaded sampler", ok && asn_learned_sampler(&a.procs[0]) == asn_learned_sampler(&b.procs[0]),
         "%s", ok ? "loaded twice" : e.msg);
    T_OK("two spellings of one path: one heuristic id (the id hashes the file's bytes, not its path)",
         ok && !strcmp(a.id, b.id), "%s / %s", a.id, b.id);
    fixture(path, sizeof path, "fixtures/sampler/local.gguf");
    learned_json(json, sizeof json, path, NULL, NULL);
    ok = ok && build(&c, json, &e) == 0;
    T_OK("another file: another sampler", ok && asn_learned_sampler(&c.procs[0]) != asn_learned_sampler(&a.procs[0]), "%s", ok ? "shared" : e.msg);
    T_OK("another file: another heuristic id", ok && strcmp(c.id, a.id), "same id %s", a.id);
    if (ok) {
        asn_heuristic_clear(&a);
        asn_heuristic_clear(&b);
        asn_heuristic_clear(&c);
    }
    /* one workspace, samplers of three configurations, in turns */
    const char *names[3] = {"net", "local", "dist_dynamic"};
    asn_heuristic hs[3];
    ref_row rows[3];
    int built = 0;
    for (int k = 0; k < 3; k++) {
        char name[128];
        snprintf(name, sizeof name, "fixtures/sampler/%s.gguf", names[k]);
        learned_json(json, sizeof json, fixture(path, sizeof path, name), NULL, NULL);
        built += build(&hs[k], json, &e) == 0;
        ref_open(&rows[k], names[k], 50);
    }
    int good = built == 3;
    float row[50];
    for (int round = 0; good && round < 3; round++)
        for (int k = 0; good && k < 3; k++) {
            if (!rows[k].logits) {
                good = 0;
                break;
            }
            memcpy(row, rows[k].logits, sizeof row);
            int mism = 0;
            good = asn_pipeline_apply(&hs[k], row, 50, NULL, NULL, ws, &e) == 0 &&
                   rel_err(row, rows[k].out, 50, &mism) <= REF_TOL && !mism;
        }
    T_OK("one workspace serves three sampler configurations in turns", good, "%s", e.msg);
    for (int k = 0; k < 3; k++) {
        if (k < built)
            asn_heuristic_clear(&hs[k]);
        asn_gguf_close(rows[k].g);
    }
}

typedef struct thread_job {
    const char *json;
    const float *logits, *out;
    int V, rounds, ok;
    char msg[1024];
} thread_job;

/* Builds, applies and clears a heuristic again and again: loading,
 * sharing and freeing race with the other threads. */
static void *thread_main(void *arg)
{
    thread_job *j = arg;
    asn_workspace *tws = asn_workspace_new();
    float *row = malloc((size_t)j->V * sizeof *row);
    asn_err e;
    j->ok = 1;
    for (int r = 0; r < j->rounds && j->ok; r++) {
        asn_heuristic h;
        json_error_t je;
        json_t *v = json_loads(j->json, 0, &je);
        if (asn_heuristic_init(&h, "t", v, &e)) {
            j->ok = 0;
            snprintf(j->msg, sizeof j->msg, "%s", e.msg);
        } else {
            memcpy(row, j->logits, (size_t)j->V * sizeof *row);
            int mism = 0;
            if (asn_pipeline_apply(&h, row, j->V, NULL, NULL, tws, &e)) {
                j->ok = 0;
                snprintf(j->msg, sizeof j->msg, "%s", e.msg);
            } else if (rel_err(row, j->out, (size_t)j->V, &mism) > REF_TOL || mism) {
                j->ok = 0;
                snprintf(j->msg, sizeof j->msg, "round %d: output differs from the reference", r);
            }
            asn_heuristic_clear(&h);
        }
        json_decref(v);
    }
    free(row);
    asn_workspace_free(tws);
    return NULL;
}

static void test_threads(void)
{
    char path[2][4096], json[2][8192];
    ref_row r[2];
    const char *names[2] = {"net_scale", "dist_static"};
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        char name[128];
        snprintf(name, sizeof name, "fixtures/sampler/%s.gguf", names[k]);
        learned_json(json[k], sizeof json[k], fixture(path[k], sizeof path[k], name), NULL, NULL);
        ok &= ref_open(&r[k], names[k], 50) == 0;
    }
    if (ok) {
        enum { NT = 4 };
        pthread_t th[NT];
        thread_job jobs[NT];
        for (int i = 0; i < NT; i++) {
            int k = i % 2;
            jobs[i] = (thread_job){json[k], r[k].logits, r[k].out, 50, 20, 0, ""};
            pthread_create(&th[i], NULL, thread_main, &jobs[i]);
        }
        int all = 1;
        const char *why = "";
        for (int i = 0; i < NT; i++) {
            pthread_join(th[i], NULL);
            if (!jobs[i].ok)
                all = 0, why = jobs[i].msg;
        }
        T_OK("4 threads building, applying and clearing learned heuristics at once: reference outputs", all, "%s",
             why);
    }
    for (int k = 0; k < 2; k++)
        asn_gguf_close(r[k].g);
}

/* ----------------------------------------------------------------- errors */

/* The heuristic fails to build and the message holds every string given. */
static void expect_error(const char *label, const char *json, const char *s1, const char *s2, const char *s3)
{
    asn_heuristic h;
    asn_err e;
    int rc = build(&h, json, &e);
    if (!rc) {
        asn_heuristic_clear(&h);
        T_OK(label, 0, "accepted");
        return;
    }
    const char *miss = !strstr(e.msg, s1) ? s1 : (s2 && !strstr(e.msg, s2)) ? s2 : (s3 && !strstr(e.msg, s3)) ? s3 : NULL;
    T_OK(label, !miss, "message \"%s\" lacks \"%s\"", e.msg, miss ? miss : "");
    if (strchr(e.msg, '\n'))
        T_OK(label, 0, "message spans several lines: %s", e.msg);
}

static void test_errors(void)
{
    char json[16384], p[4096], p2[4096], cfg[4096];
    const char *P1 = "processor 1 (learned)";
    path_in(p, sizeof p, tmp_dir, "none.gguf");
    learned_json(json, sizeof json, p, NULL, NULL);
    expect_error("a missing file: the processor, the parameter and the file", json, P1, "parameter \"path\"",
                 "none.gguf: No such file or directory");
    learned_json(json, sizeof json, tmp_dir, NULL, NULL);
    expect_error("a directory: not a regular file", json, "parameter \"path\"", "not a regular file", NULL);
    path_in(p, sizeof p, tmp_dir, "notes.txt");
    write_file(p, "not a sampler\n", 14);
    learned_json(json, sizeof json, p, NULL, NULL);
    expect_error("a text file: not GGUF, the converter named", json, "parameter \"path\"", "notes.txt: not an asn sampler file",
                 "scripts/convert-torch-sampler.py");
    path_in(p, sizeof p, tmp_dir, "empty.gguf");
    write_file(p, "", 0);
    learned_json(json, sizeof json, p, NULL, NULL);
    expect_error("an empty file: not GGUF, the converter named", json, "empty.gguf", "convert-torch-sampler.py", NULL);
    path_in(p, sizeof p, tmp_dir, "sampler_model.bin");
    write_file(p, "PK\x03\x04" "archive", 11);
    learned_json(json, sizeof json, p, NULL, NULL);
    expect_error("a PyTorch checkpoint (.bin): the converter named", json, "sampler_model.bin: a PyTorch checkpoint",
                 "scripts/convert-torch-sampler.py", P1);
    path_in(p, sizeof p, tmp_dir, "sampler.pt");
    write_file(p, "\x80\x02}q\x00.", 6);
    snprintf(json, sizeof json, "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"%s\"}}]", p);
    expect_error("adaptive_sampler with a pickled checkpoint (.pt): the converter named", json,
                 "processor 1 (adaptive_sampler): parameter \"sampler_checkpoint_path\"", "sampler.pt",
                 "convert-torch-sampler.py");
    learned_json(json, sizeof json, fixture(p, sizeof p, "data/models/tiny-spm-q8_0.gguf"), NULL, NULL);
    expect_error("a GGUF of another architecture (a llama model)", json, "tiny-spm-q8_0.gguf",
                 "general.architecture is \"llama\"", "not a sampler file");
    expect_error("no path", "[{\"name\":\"learned\",\"params\":{}}]", P1, "parameter \"path\" is required", NULL);
    expect_error("no params at all", "[{\"name\":\"learned\"}]", P1, "parameter \"path\" is required", NULL);
    expect_error("a path that is a number", "[{\"name\":\"learned\",\"params\":{\"path\":3}}]", P1,
                 "parameter \"path\" must be a string, not integer", NULL);
    expect_error("a path that is a list", "[{\"name\":\"learned\",\"params\":{\"path\":[\"a.gguf\"]}}]", P1,
                 "parameter \"path\" must be a string, not array", NULL);
    expect_error("an empty path", "[{\"name\":\"learned\",\"params\":{\"path\":\"\"}}]", P1,
                 "parameter \"path\" must not be empty", NULL);
    fixture(p, sizeof p, "fixtures/sampler/net.gguf");
    snprintf(json, sizeof json, "[{\"name\":\"learned\",\"params\":{\"path\":\"%s\",\"file\":\"x\"}}]", p);
    expect_error("an unknown parameter", json, P1, "unknown parameter \"file\"", NULL);
    snprintf(json, sizeof json, "[{\"name\":\"learned\",\"params\":{\"sampler_checkpoint_path\":\"%s\"}}]", p);
    expect_error("learned does not take the alias's parameters", json, "unknown parameter \"sampler_checkpoint_path\"",
                 NULL, NULL);
    /* the alias */
    expect_error("adaptive_sampler without a checkpoint", "[{\"name\":\"adaptive_sampler\",\"params\":"
                 "{\"sampler_model_name\":\"SamplingNetwork\"}}]",
                 "processor 1 (adaptive_sampler)", "parameter \"sampler_checkpoint_path\" is required", NULL);
    snprintf(json, sizeof json, "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"%s\","
                                "\"sampler_model_name\":7}}]", p);
    expect_error("adaptive_sampler: a class name that is a number", json,
                 "parameter \"sampler_model_name\" must be a string, not integer", NULL, NULL);
    snprintf(json, sizeof json, "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"%s\","
                                "\"device\":0}}]", p);
    expect_error("adaptive_sampler: a device that is a number", json, "parameter \"device\" must be a string", NULL,
                 NULL);
    snprintf(json, sizeof json, "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"%s\","
                                "\"sampler_model_name\":\"Sampler\"}}]", p);
    expect_error("adaptive_sampler: an unknown class name", json, "parameter \"sampler_model_name\"",
                 "unknown sampler architecture \"Sampler\"", NULL);
    snprintf(json, sizeof json, "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"%s\","
                                "\"sampler_model_name\":\"LocalProbabilityTransform\"}}]", p);
    expect_error("adaptive_sampler: a class name other than the file's", json,
                 "parameter \"sampler_model_name\" is \"LocalProbabilityTransform\"", "net.gguf holds a SamplingNetwork",
                 NULL);
    fixture(cfg, sizeof cfg, "data/reference-configs/model_config_scale.yaml");
    snprintf(json, sizeof json, "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"%s\","
                                "\"sampler_config_path\":\"%s\"}}]", p, cfg);
    expect_error("adaptive_sampler: a config other than the file's (scale)", json,
                 "parameter \"sampler_config_path\"", "model_config_scale.yaml gives scale true", "net.gguf holds false");
    path_in(p2, sizeof p2, tmp_dir, "wide.yaml");
    const char *wide = "d_model: 64\nd_ff: 64\nn_blocks: 4\nn_heads: 4\n";
    write_file(p2, wide, strlen(wide));
    snprintf(json, sizeof json, "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"%s\","
                                "\"sampler_config_path\":\"%s\"}}]", p, p2);
    expect_error("adaptive_sampler: a config other than the file's (d_model)", json, "wide.yaml gives d_model 64",
                 "holds 32", NULL);
    fixture(p, sizeof p, "fixtures/sampler/local.gguf");
    snprintf(json, sizeof json, "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"%s\","
                                "\"sampler_config_path\":\"%s\"}}]", p, cfg);
    expect_error("adaptive_sampler: a SamplingNetwork config for a LocalProbabilityTransform file", json,
                 "parameter \"sampler_config_path\"", "unknown key", NULL);
    path_in(p2, sizeof p2, tmp_dir, "none.yaml");
    snprintf(json, sizeof json, "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"%s\","
                                "\"sampler_config_path\":\"%s\"}}]", p, p2);
    expect_error("adaptive_sampler: a config file that does not exist", json, "parameter \"sampler_config_path\"",
                 "none.yaml", NULL);
    /* a valid learned processor after a bad one, and a bad one after a
     * valid learned one: nothing leaks (the sanitizer pass checks) */
    fixture(p, sizeof p, "fixtures/sampler/net.gguf");
    learned_json(json, sizeof json, p, NULL, ",{\"name\":\"top_p\",\"params\":{\"top_p\":2}}");
    expect_error("a bad processor after a learned one", json, "processor 2 (top_p)", NULL, NULL);
    learned_json(json, sizeof json, p, NULL, ",{\"name\":\"mirostat_v2\",\"params\":{\"tau\":3,\"eta\":0.1}},"
                                               "{\"name\":\"greedy\",\"params\":{}}");
    expect_error("mirostat_v2 not last, after a learned processor", json, "must be the last processor", NULL, NULL);
    /* in a heuristics file: FILE:LINE:COL, pipeline, processor, parameter, file */
    char yaml[8192];
    path_in(p2, sizeof p2, tmp_dir, "missing.gguf");
    int n = snprintf(yaml, sizeof yaml,
                     "sampling_pipelines:\n"
                     "  - name: ok\n"
                     "    processors:\n"
                     "      - name: learned\n"
                     "        params: {path: \"%s\"}\n"
                     "  - name: bad\n"
                     "    processors:\n"
                     "      - name: min_p\n"
                     "        params: {min_p: 0.1}\n"
                     "      - name: learned\n"
                     "        params: {path: \"%s\"}\n",
                     p, p2);
    asn_err e;
    asn_heuristics *hs = asn_heuristics_parse("h.yaml", yaml, (size_t)n, &e);
    T_OK("heuristics file: the error names FILE:LINE:COL, pipeline, processor, parameter and file",
         !hs && strstr(e.msg, "h.yaml:10:") && strstr(e.msg, "pipeline \"bad\": processor 2 (learned): parameter \"path\": ") &&
             strstr(e.msg, "missing.gguf: No such file or directory"),
         "%s", hs ? "accepted" : e.msg);
    asn_heuristics_free(hs);
    unlink(path_in(p, sizeof p, tmp_dir, "notes.txt"));
    unlink(path_in(p, sizeof p, tmp_dir, "empty.gguf"));
    unlink(path_in(p, sizeof p, tmp_dir, "sampler_model.bin"));
    unlink(path_in(p, sizeof p, tmp_dir, "sampler.pt"));
    unlink(path_in(p, sizeof p, tmp_dir, "wide.yaml"));
}

/* A sampler written here (asn_sampler_save) is used from a heuristics file;
 * a NaN in the row is refused before the network sees it. */
static void test_saved(void)
{
    asn_err e;
    asn_sampler_config c = {.arch = ASN_SAMPLER_DIST, .hidden_dims = 6, .use_dynamic_truncation = 1};
    asn_sampler *s = asn_sampler_new(&c, 3, &e);
    char p[4096], json[8192];
    path_in(p, sizeof p, tmp_dir, "small.gguf");
    int ok = s && asn_sampler_save(s, p, &e) == 0;
    T_OK("a sampler saved here", ok, "%s", e.msg);
    if (!ok) {
        asn_sampler_free(s);
        return;
    }
    float x[7] = {1, -INFINITY, 0.5f, 3, -2, -INFINITY, 0}, want[7], got[7];
    asn_sampler_ws *sw = asn_sampler_ws_new(s, 0);
    asn_sampler_forward(s, sw, NULL, x, 7, want, &e);
    asn_sampler_ws_free(sw);
    int n = snprintf(json, sizeof json,
                     "sampling_pipelines:\n  - name: mine\n    weight: 2\n    processors:\n"
                     "      - {name: learned, params: {path: \"%s\"}}\n",
                     p);
    asn_heuristics *hs = asn_heuristics_parse("mine.yaml", json, (size_t)n, &e);
    T_OK("a heuristics file with a learned processor loads", hs != NULL, "%s", e.msg);
    if (hs) {
        memcpy(got, x, sizeof got);
        int rc = asn_pipeline_apply(&hs->h[0], got, 7, NULL, NULL, ws, &e);
        T_OK("its output is the network's (asn_sampler_forward), bit for bit", !rc && !memcmp(got, want, sizeof got),
             "%s", rc ? e.msg : "differs");
        memcpy(got, x, sizeof got);
        got[3] = NAN;
        rc = asn_pipeline_apply(&hs->h[0], got, 7, NULL, NULL, ws, &e);
        T_OK("a NaN logit is an error naming the token", rc && strstr(e.msg, "token 3"), "%s", rc ? e.msg : "accepted");
        asn_heuristics_free(hs);
    }
    /* the file changed on disk: a new load, the old sampler stays with its holders */
    asn_heuristic h1, h2;
    snprintf(json, sizeof json, "[{\"name\":\"learned\",\"params\":{\"path\":\"%s\"}}]", p);
    ok = build(&h1, json, &e) == 0;
    asn_sampler_init(s, 4);
    unlink(p);
    /* a modification time of its own, whatever the clock's granularity */
    struct timespec when[2] = {{1000000000, 0}, {1000000000, 0}};
    ok = ok && asn_sampler_save(s, p, &e) == 0 && utimensat(AT_FDCWD, p, when, 0) == 0 && build(&h2, json, &e) == 0;
    T_OK("a file replaced on disk is loaded again (the cache keys the file, not the path)",
         ok && asn_learned_sampler(&h1.procs[0]) != asn_learned_sampler(&h2.procs[0]), "%s", ok ? "old sampler reused" : e.msg);
    if (ok) {
        float a[7], b[7];
        memcpy(a, x, sizeof a), memcpy(b, x, sizeof b);
        asn_pipeline_apply(&h1, a, 7, NULL, NULL, ws, &e);
        asn_pipeline_apply(&h2, b, 7, NULL, NULL, ws, &e);
        T_OK("the old heuristic keeps the old sampler, the new one gets the new", !memcmp(a, want, sizeof a) &&
                                                                                       memcmp(b, want, sizeof b),
             "outputs");
        asn_heuristic_clear(&h1);
        asn_heuristic_clear(&h2);
    }
    unlink(p);
    asn_sampler_free(s);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/asn-learned-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        printf("not ok - temporary directory: cannot create %s\n", tmp_dir);
        return 1;
    }
    ws = asn_workspace_new();
    T_EQ_STR("the processor's name", asn_proc_name(ASN_PROC_LEARNED), "learned");
    test_reference();
    test_pipelines();
    test_cache();
    test_threads();
    test_errors();
    test_saved();
    asn_workspace_free(ws);
    rmdir(tmp_dir);
    T_DONE();
}
