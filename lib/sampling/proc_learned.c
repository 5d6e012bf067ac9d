/* proc_learned.c — the `learned` processor: a trained sampler network
 * (asn/sampler_net.h) replaces the row by its log-probabilities. Tokens
 * already removed (-inf) stay removed and are not seen by the network.
 *
 * `adaptive_sampler` is the reference project's name for it (its SGLang
 * processor, _AdaptiveSamplerWrapper(sampler_model_name,
 * sampler_config_path, sampler_checkpoint_path, device)): the checkpoint
 * path names the sampler file; the class name and the config, when given,
 * must agree with the class and hyper-parameters the file holds; device is
 * accepted and ignored (asn computes on the CPU, in f32).
 *
 * Samplers are loaded when a heuristic is built and shared by the whole
 * process: a mutex-protected list keyed by the file's identity (device,
 * inode, size, modification time), each entry counting the processors that
 * hold it; the last release frees it. A forward pass needs working memory,
 * kept in the caller's per-thread asn_workspace, one per sampler
 * configuration, made on first use. */
#include "proc.h"
#include "asn/sampler_net.h"

#include <cblas.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- cache */

struct asn_learned {
    struct asn_learned *next;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    int refs; /* processors holding it */
    asn_sampler *s;
    char sha256[65]; /* of the file's bytes: the heuristic id hashes this, not the path */
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct asn_learned *cache;

static int same_file(const struct asn_learned *l, const struct stat *st)
{
    return l->dev == st->st_dev && l->ino == st->st_ino && l->size == st->st_size &&
           l->mtime.tv_sec == st->st_mtim.tv_sec && l->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* A file that is not GGUF gets a pointer to the converter (asn_sampler_load
 * gives one already for torch.save's zip archive or pickle). */
static void point_to_converter(const char *path, asn_err *e)
{
    if (strstr(e->msg, "convert-torch-sampler"))
        return;
    char head[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n == 4 && !memcmp(head, "GGUF", 4))
        return; /* a GGUF file with something else wrong: that message stands */
    asn_err_set(e, "%s: not an asn sampler file (GGUF); convert a PyTorch sampler checkpoint with "
                   "scripts/convert-torch-sampler.py --config CONFIG.yaml %s sampler.gguf",
                path, path);
}

/* The sampler in the file at path, loaded or shared; NULL with an error
 * naming the file. */
static struct asn_learned *acquire(const char *path, asn_err *e)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        asn_err_set(e, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        asn_err_set(e, "%s: not a regular file", path);
        return NULL;
    }
    pthread_mutex_lock(&cache_lock);
    struct asn_learned *l = cache;
    while (l && !same_file(l, &st))
        l = l->next;
    if (l) {
        l->refs++;
    } else {
        asn_sampler *s = asn_sampler_load(path, e);
        char sha[65];
        if (s && asn_sha256_file(path, sha, e)) {
            asn_sampler_free(s);
            s = NULL;
        }
        if (s) {
            l = asn_xcalloc(1, sizeof *l);
            l->dev = st.st_dev;
            l->ino = st.st_ino;
            l->size = st.st_size;
            l->mtime = st.st_mtim;
            l->refs = 1;
            l->s = s;
            memcpy(l->sha256, sha, sizeof sha);
            l->next = cache;
            cache = l;
            /* sampling threads each call OpenBLAS on their own rows: it must
             * not start threads of its own (asn/sampler_net.h) */
            openblas_set_num_threads(1);
        } else {
            point_to_converter(path, e);
        }
    }
    pthread_mutex_unlock(&cache_lock);
    return l;
}

static void release(struct asn_learned *l)
{
    pthread_mutex_lock(&cache_lock);
    int last = --l->refs == 0;
    if (last) {
        struct asn_learned **pp = &cache;
        while (*pp != l)
            pp = &(*pp)->next;
        *pp = l->next;
    }
    pthread_mutex_unlock(&cache_lock);
    if (last) {
        asn_sampler_free(l->s);
        free(l);
    }
}

/* ------------------------------------------------------------ parameters */

/* learned {path, exact}; adaptive_sampler {sampler_checkpoint_path,
 * sampler_model_name, sampler_config_path, device} (strings, read by
 * learned_init) */
typedef struct learned_params {
    int exact;                /* the exact pass, not the fast one */
    struct asn_learned *held; /* the loaded sampler, shared (the cache above) */
} learned_params;

/* The hyper-parameters, in the order errors report a difference. */
static const struct {
    const char *name;
    size_t off;
    int is_bool;
} HPARAMS[] = {
    {"hidden_dims", offsetof(asn_sampler_config, hidden_dims), 0},
    {"use_dynamic_truncation", offsetof(asn_sampler_config, use_dynamic_truncation), 1},
    {"d_model", offsetof(asn_sampler_config, d_model), 0},
    {"d_ff", offsetof(asn_sampler_config, d_ff), 0},
    {"n_blocks", offsetof(asn_sampler_config, n_blocks), 0},
    {"n_heads", offsetof(asn_sampler_config, n_heads), 0},
    {"scale", offsetof(asn_sampler_config, scale), 1},
};

static const char *hp_value(int v, int is_bool, char *buf, size_t n)
{
    if (is_bool)
        return v ? "true" : "false";
    snprintf(buf, n, "%d", v);
    return buf;
}

/* adaptive_sampler: the class name and the config YAML, when given, must
 * be what the sampler file holds. */
static int check_alias(const asn_sampler *s, const char *file, const char *cls, const char *cfg_path, asn_err *e)
{
    const asn_sampler_config *have = asn_sampler_get_config(s);
    asn_sampler_arch arch = have->arch;
    if (cls) {
        if (asn_sampler_arch_parse(cls, &arch, e))
            return asn_err_prefix(e, "parameter \"sampler_model_name\"");
        if (arch != have->arch)
            return asn_err_set(e, "parameter \"sampler_model_name\" is \"%s\", but %s holds a %s", cls, file,
                               asn_sampler_arch_name(have->arch));
    }
    if (!cfg_path)
        return 0;
    asn_sampler_config want;
    if (asn_sampler_config_load(arch, cfg_path, &want, e))
        return asn_err_prefix(e, "parameter \"sampler_config_path\"");
    for (size_t i = 0; i < sizeof HPARAMS / sizeof HPARAMS[0]; i++) {
        int a = *(const int *)((const char *)&want + HPARAMS[i].off);
        int b = *(const int *)((const char *)have + HPARAMS[i].off);
        char ba[16], bb[16];
        if (a != b)
            return asn_err_set(e, "parameter \"sampler_config_path\": %s gives %s %s, but %s holds %s", cfg_path,
                               HPARAMS[i].name, hp_value(a, HPARAMS[i].is_bool, ba, sizeof ba), file,
                               hp_value(b, HPARAMS[i].is_bool, bb, sizeof bb));
    }
    return 0;
}

const char *asn_learned_path_param(const char *proc_name)
{
    if (!strcmp(proc_name, "learned"))
        return "path";
    return strcmp(proc_name, "adaptive_sampler") ? NULL : "sampler_checkpoint_path";
}

/* The parameter naming the sampler file: learned's or the reference's. */
static const char *path_key(const asn_proc *p)
{
    return asn_learned_path_param(p->iface->name);
}

/* After the parameters were checked: loads the sampler file named in
 * params, or takes it from the cache, and checks the alias's class name and
 * config against it. Errors name the parameter and the file. */
static int learned_init(asn_proc *p, const json_t *params, asn_err *e)
{
    int alias = strcmp(p->iface->name, "learned") != 0;
    const char *key = path_key(p);
    const char *path = json_string_value(json_object_get(params, key));
    if (!path) /* the parameter table requires it */
        return asn_err_set(e, "parameter \"%s\" is required", key);
    struct asn_learned *l = acquire(path, e);
    if (!l)
        return asn_err_prefix(e, "parameter \"%s\"", key);
    if (alias && check_alias(l->s, path, json_string_value(json_object_get(params, "sampler_model_name")),
                             json_string_value(json_object_get(params, "sampler_config_path")), e)) {
        release(l);
        return -1;
    }
    ((learned_params *)p->params)->held = l;
    return 0;
}

static void learned_release(asn_proc *p)
{
    learned_params *a = p->params;
    if (a->held)
        release(a->held);
    a->held = NULL;
}

const asn_sampler *asn_learned_sampler(const asn_proc *p)
{
    if (p->kind != ASN_PROC_LEARNED || !p->params)
        return NULL;
    const learned_params *a = p->params;
    return a->held ? a->held->s : NULL;
}

json_t *asn_learned_id_value(const char *sha256)
{
    char v[72];
    snprintf(v, sizeof v, "sha256:%s", sha256);
    return json_string(v);
}

void asn_learned_id_params(const asn_proc *p, json_t *params)
{
    const learned_params *a = p->params;
    if (p->kind != ASN_PROC_LEARNED || !a || !a->held)
        return;
    json_object_set_new(params, path_key(p), asn_learned_id_value(a->held->sha256));
}

/* --------------------------------------------------------------- applying */

struct asn_learned_ws {
    struct asn_learned_ws *next;
    asn_sampler_config cfg;
    asn_sampler_ws *ws;
};

/* row = network(row), in place, on the calling thread. */
static int learned_apply(const asn_proc *p, float *row, int V, const asn_seq_ctx *ctx, asn_seq_state *st,
                         asn_workspace *ws, asn_err *e)
{
    const learned_params *a = p->params;
    if (!a->held)
        return asn_err_set(e, "no sampler loaded (the processor was not built by asn_heuristic_init)");
    const asn_sampler *s = a->held->s;
    const asn_sampler_config *c = asn_sampler_get_config(s);
    struct asn_learned_ws *l = ws->learned;
    while (l && memcmp(&l->cfg, c, sizeof *c))
        l = l->next;
    if (!l) {
        l = asn_xcalloc(1, sizeof *l);
        l->cfg = *c;
        l->ws = asn_sampler_ws_new(s, 0);
        l->next = ws->learned;
        ws->learned = l;
    }
    /* the step (generated tokens so far): an input of EquivariantLocalTransform */
    asn_sampler_ws_set_step(l->ws, ctx && ctx->n_ids > ctx->n_prompt ? ctx->n_ids - ctx->n_prompt : 0);
    /* the fast pass (SamplingNetwork: its tail binned by log-probability;
     * Local and Dist: their function of lp interpolated; KL to the exact
     * output <= 1e-6) unless exact: true */
    if (a->exact)
        return asn_sampler_forward(s, l->ws, NULL, row, V, row, e);
    return asn_sampler_forward_fast(s, l->ws, NULL, row, V, row, e);
}

void asn_learned_ws_free(struct asn_learned_ws *l)
{
    while (l) {
        struct asn_learned_ws *next = l->next;
        asn_sampler_ws_free(l->ws);
        free(l);
        l = next;
    }
}

/* The output replaces the whole row: it is checked like a scaled one. */
const asn_proc_iface asn_procs_learned[] = {
    {.name = "learned", .kind = ASN_PROC_LEARNED, .size = sizeof(learned_params),
     .doc = "A trained sampler network replaces the row by its log-probabilities over the finite tokens (-inf "
            "stays -inf). The file is loaded and checked when the heuristic is read.",
     .params = {ASN_STR("path", 1,
                        "An asn sampler file (GGUF, general.architecture asn-sampler), relative to the current "
                        "directory."),
                ASN_BOOL("exact", learned_params, exact,
                         "The exact pass instead of the fast one (SamplingNetwork: tail binned by log-probability; "
                         "LocalProbabilityTransform, SimpleDistributionAwareTransform: the output interpolated in "
                         "log-probability below the top 4 nats; KL to exact <= 1e-6). Default false.")},
     .flags = ASN_PF_OVERFLOW, .init = learned_init, .release = learned_release, .apply = learned_apply},
    /* the reference's _AdaptiveSamplerWrapper arguments */
    {.name = "adaptive_sampler", .kind = ASN_PROC_LEARNED, .size = sizeof(learned_params),
     .doc = "learned under the reference project's name and parameters (its SGLang _AdaptiveSamplerWrapper).",
     .params = {ASN_STR("sampler_checkpoint_path", 1,
                        "An asn sampler file (GGUF); a PyTorch checkpoint must first be converted with "
                        "scripts/convert-torch-sampler.py."),
                ASN_STR("sampler_model_name", 0,
                        "The class: LocalProbabilityTransform, SimpleDistributionAwareTransform or "
                        "SamplingNetwork; must be the file's."),
                ASN_STR("sampler_config_path", 0,
                        "A config YAML of the class's constructor arguments; must equal the file's "
                        "hyper-parameters."),
                ASN_STR("device", 0, "Accepted and ignored (asn runs on the CPU).")},
     .flags = ASN_PF_OVERFLOW, .init = learned_init, .release = learned_release, .apply = learned_apply},
    {0},
};
