/* train-lm — trains a small Llama language model on a text corpus and
 * writes it as a GGUF file the model library (and llama.cpp) loads: token
 * stream, random windows, AdamW with warmup and a decaying schedule,
 * validation, checkpoints and resume. The model math is lib/learn/lm.c
 * and lm_layers.c, its files lm_file.c, the optimizer lib/learn/optim.c. */
#include "asn/gguf.h"
#include "asn/lm.h"
#include "asn/optim.h"
#include "asn/tool.h"
#include "asn/vocab.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct train_lm_options {
    const char *vocab;
    const char *output;
    const char *valid;
    const char *name;
    const char *log;
    const char *ckpt;
    const char *resume;
    const char *doc_sep;
    const char *schedule;
    long dim;
    long layers;
    long heads;
    long kv_heads;
    long ffn;
    long ctx;
    long steps;
    long batch;
    long accum;
    long warmup;
    long seed;
    long threads;
    long log_every;
    long eval_every;
    long eval_tokens;
    long ckpt_every;
    long stop_at;
    double lr;
    double min_lr_rate;
    double wd;
    double beta1;
    double beta2;
    double eps;
    double clip;
    double rope_base;
    double rms_eps;
    double max_time;
    int progress;
    int quiet;
    int no_cache;
} train_lm_options;

/* The options, with their defaults (the table below points into it). */
static train_lm_options opts = {
    .schedule = "cosine",
    .dim = 128,
    .layers = 4,
    .heads = 4,
    .kv_heads = 0,
    .ffn = 0,
    .ctx = 256,
    .steps = 1000,
    .batch = 8,
    .accum = 1,
    .warmup = 100,
    .seed = 1,
    .threads = 0,
    .log_every = 10,
    .eval_every = 200,
    .eval_tokens = 65536,
    .ckpt_every = 500,
    .lr = 1e-3,
    .min_lr_rate = 0.1,
    .wd = 0.1,
    .beta1 = 0.9,
    .beta2 = 0.95,
    .eps = 1e-8,
    .clip = 1.0,
    .rope_base = 10000,
    .rms_eps = 1e-5,
    .max_time = 0,
};

static const asn_option options[] = {
    {"vocab", 'v', ASN_OPT_STRING, &opts.vocab, "FILE", "GGUF file whose tokenizer the model uses (required)"},
    {"output", 'o', ASN_OPT_STRING, &opts.output, "FILE", "the model GGUF to write (required)"},
    {"valid", 0, ASN_OPT_STRING, &opts.valid, "FILE", "held-out text for the validation loss"},
    {"name", 0, ASN_OPT_STRING, &opts.name, "TEXT", "general.name of the model (default: the output's file name)"},
    {"dim", 0, ASN_OPT_INT, &opts.dim, "N", "embedding width"},
    {"layers", 0, ASN_OPT_INT, &opts.layers, "N", "transformer blocks"},
    {"heads", 0, ASN_OPT_INT, &opts.heads, "N", "attention heads"},
    {"kv-heads", 0, ASN_OPT_INT, &opts.kv_heads, "N", "key/value heads (grouped-query attention; 0: --heads)"},
    {"ffn", 0, ASN_OPT_INT, &opts.ffn, "N", "SwiGLU hidden width (0: 8/3 dim rounded up to a multiple of 32)"},
    {"ctx", 'c', ASN_OPT_INT, &opts.ctx, "N", "context length: tokens per training window"},
    {"rope-base", 0, ASN_OPT_DOUBLE, &opts.rope_base, "B", "rotary embedding base"},
    {"rms-eps", 0, ASN_OPT_DOUBLE, &opts.rms_eps, "E", "RMSNorm epsilon"},
    {"steps|n", 0, ASN_OPT_INT, &opts.steps, "N", "optimizer steps"},
    {"batch", 'b', ASN_OPT_INT, &opts.batch, "N", "windows per micro-batch"},
    {"accum", 0, ASN_OPT_INT, &opts.accum, "N", "micro-batches per optimizer step (gradient accumulation)"},
    {"lr", 0, ASN_OPT_DOUBLE, &opts.lr, "RATE", "peak learning rate"},
    {"schedule", 0, ASN_OPT_STRING, &opts.schedule, "NAME", "learning-rate schedule: constant, constant_with_warmup, linear, cosine, cosine_with_restarts, polynomial, cosine_with_min_lr"},
    {"warmup", 0, ASN_OPT_INT, &opts.warmup, "N", "linear warmup steps"},
    {"min-lr-rate", 0, ASN_OPT_DOUBLE, &opts.min_lr_rate, "R", "cosine_with_min_lr: final rate as a fraction of --lr"},
    {"weight-decay", 0, ASN_OPT_DOUBLE, &opts.wd, "W", "AdamW decoupled weight decay (matrices only, not norm gains)"},
    {"beta1", 0, ASN_OPT_DOUBLE, &opts.beta1, "B", "AdamW beta1"},
    {"beta2", 0, ASN_OPT_DOUBLE, &opts.beta2, "B", "AdamW beta2"},
    {"adam-eps", 0, ASN_OPT_DOUBLE, &opts.eps, "E", "AdamW epsilon"},
    {"clip", 0, ASN_OPT_DOUBLE, &opts.clip, "NORM", "clip the gradient's global norm to NORM (0: off)"},
    {"seed", 's', ASN_OPT_INT, &opts.seed, "N", "seed of the initial weights and of the windows"},
    {"doc-sep", 0, ASN_OPT_STRING, &opts.doc_sep, "TEXT", "documents in the corpus are separated by TEXT (\\n, \\t, \\\\ escapes); each gets BOS/EOS"},
    {"eval-every", 0, ASN_OPT_INT, &opts.eval_every, "N", "validation loss every N steps (0: only at the end)"},
    {"eval-tokens", 0, ASN_OPT_INT, &opts.eval_tokens, "N", "validate on the first N tokens of --valid (0: all)"},
    {"log", 0, ASN_OPT_STRING, &opts.log, "FILE", "training log, one JSON line per log step (default: OUTPUT without .gguf + .log.jsonl)"},
    {"log-every", 0, ASN_OPT_INT, &opts.log_every, "N", "log every N steps"},
    {"checkpoint", 0, ASN_OPT_STRING, &opts.ckpt, "FILE", "checkpoint file (default: OUTPUT without .gguf + .ckpt.gguf)"},
    {"checkpoint-every", 0, ASN_OPT_INT, &opts.ckpt_every, "N", "write the checkpoint every N steps and at the end (0: only when stopped early)"},
    {"resume", 0, ASN_OPT_STRING, &opts.resume, "FILE", "continue from this checkpoint"},
    {"max-time", 0, ASN_OPT_DOUBLE, &opts.max_time, "SECONDS", "stop after this long with a checkpoint (0: no limit)"},
    {"stop-at", 0, ASN_OPT_INT, &opts.stop_at, "STEP", "stop after step STEP with a checkpoint (0: run to --steps; a run resumed past STEP goes on)"},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads (0: all cores)"},
    {"no-cache", 0, ASN_OPT_FLAG, &opts.no_cache, NULL, "do not read or write the token caches"},
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "redraw a progress line even when stderr is not a terminal"},
    {"quiet", 'q', ASN_OPT_FLAG, &opts.quiet, NULL, "no progress or log lines on stderr"},
    {0},
};

static const asn_tool tool = {
    "train-lm", "-v VOCAB -o OUTPUT [OPTIONS] CORPUS",
    "Train a small Llama language model on a text corpus and write it as GGUF.",
    "The corpus (a text file) is tokenized with the tokenizer of --vocab into one\n"
    "stream, cached beside the output (OUTPUT without .gguf + .train.tokens and\n"
    ".valid.tokens; rebuilt when the text, the vocab or --doc-sep change). With\n"
    "--doc-sep each document gets BOS (when the vocab adds one) and EOS; the\n"
    "corpus of scripts/build-corpus.sh separates documents with '\\n\\n\\n'. Each\n"
    "micro-batch is --batch windows of --ctx + 1 tokens at random positions,\n"
    "drawn with the counter RNG from --seed, so the same options and thread\n"
    "count give the same weights byte for byte, and a run resumed from a\n"
    "checkpoint ends with the weights of an uninterrupted one.\n"
    "\n"
    "Model: Llama (RMSNorm, rotary embeddings, causal attention with optional\n"
    "grouped-query heads, SwiGLU, output tied to the token embeddings), trained\n"
    "in f32 with AdamW (decoupled weight decay on matrices), gradient clipping,\n"
    "and a warmup + decay schedule with HuggingFace transformers' semantics\n"
    "(the rate of step 0 is 0 when there is warmup).\n"
    "\n"
    "Output: OUTPUT, a GGUF with general.architecture \"llama\", the vocab's\n"
    "tokenizer.* keys and F32 tensors (no output.weight: tied). The checkpoint\n"
    "is the same plus the optimizer moments (adam.m.*, adam.v.*) and the\n"
    "training state (asn.train.*). On SIGINT or SIGTERM (exit status 1), or\n"
    "after --max-time or --stop-at (status 0), the run stops after the current\n"
    "step, writes the checkpoint and no model; rerun the same command with\n"
    "--resume CHECKPOINT to continue.\n"
    "\n"
    "Threads: --threads workers split every layer; OpenBLAS runs single-threaded\n"
    "inside them. Its kernels (named in the first line on stderr) are the ones\n"
    "OpenBLAS picks for the CPU, or those OPENBLAS_CORETYPE names; results are\n"
    "reproducible for the same kernels and thread count.\n"
    "\n"
    "stderr shows step, loss, learning rate, tokens/s and ETA (a redrawn line on\n"
    "a terminal, a line per log step otherwise). The log file gets one JSON line\n"
    "per log step: step, tokens, loss (mean since the last line), val_loss (null\n"
    "when not evaluated), lr, grad_norm, tokens_per_s, time (seconds of\n"
    "training, over all resumed runs).\n",
    options,
};

/* --------------------------------------------------------------- helpers */

/* OUTPUT without a ".gguf" suffix, then suffix. */

static char *unescape(const char *s)
{
    char *out = asn_xmalloc(strlen(s) + 1), *o = out;
    for (; *s; s++) {
        if (*s != '\\' || !s[1]) {
            *o++ = *s;
            continue;
        }
        s++;
        *o++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'r' ? '\r' : *s;
    }
    *o = 0;
    return out;
}

static void fmt_duration(double s, char *buf, size_t n)
{
    long t = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

/* ---------------------------------------------------------------- corpus */

/* The token stream of a text file, from the cache when it was made from the
 * same text, vocab and options. */
static int32_t *load_tokens(const char *path, const char *vocab_sha, const asn_vocab *v, const char *doc_sep,
                            const char *cache, asn_pool *pool, size_t *n)
{
    asn_err e;
    asn_lm_corpus_info info;
    int32_t *ids;
    if (asn_lm_corpus_load(path, v, vocab_sha, doc_sep, cache, pool, &ids, n, &info, &e))
        asn_fatal("%s", e.msg);
    if (info.warning[0])
        asn_warn("%s", info.warning);
    if (opts.quiet)
        return ids;
    if (info.from_cache)
        fprintf(stderr, "%s: %s: %zu tokens (cached in %s)\n", asn_progname(), path, *n, cache);
    else
        fprintf(stderr, "%s: %s: %zu bytes -> %zu tokens (%.1fs)\n", asn_progname(), path, info.bytes, *n,
                info.seconds);
    return ids;
}

/* ------------------------------------------------------------ checkpoint */

/* The training options a checkpoint records (as text); a run resumed with
 * other values warns and goes on with the new ones. */
enum { N_RECORDED = 11 };

static void recorded_options(char vals[N_RECORDED][64], const char *keys[N_RECORDED])
{
    static const char *const k[N_RECORDED] = {
        "asn.train.opt.steps", "asn.train.opt.batch", "asn.train.opt.accum", "asn.train.opt.seed",
        "asn.train.opt.lr", "asn.train.opt.schedule", "asn.train.opt.warmup", "asn.train.opt.weight_decay",
        "asn.train.opt.clip", "asn.train.opt.betas", "asn.train.opt.doc_sep"};
    for (int i = 0; i < N_RECORDED; i++)
        keys[i] = k[i];
    snprintf(vals[0], 64, "%ld", opts.steps);
    snprintf(vals[1], 64, "%ld", opts.batch);
    snprintf(vals[2], 64, "%ld", opts.accum);
    snprintf(vals[3], 64, "%ld", opts.seed);
    snprintf(vals[4], 64, "%.17g", opts.lr);
    snprintf(vals[5], 64, "%s", opts.schedule);
    snprintf(vals[6], 64, "%ld", opts.warmup);
    snprintf(vals[7], 64, "%.17g", opts.wd);
    snprintf(vals[8], 64, "%.17g", opts.clip);
    snprintf(vals[9], 64, "%.17g %.17g", opts.beta1, opts.beta2);
    snprintf(vals[10], 64, "%s", opts.doc_sep ? opts.doc_sep : "");
}

static void save_checkpoint(const char *path, const asn_lm *lm, const asn_gguf *vg, const char *name,
                            const asn_lm_state *st, const char *corpus_sha)
{
    asn_err e;
    char vals[N_RECORDED][64];
    const char *keys[N_RECORDED], *extra[2 * N_RECORDED + 3];
    recorded_options(vals, keys);
    int k = 0;
    for (int i = 0; i < N_RECORDED; i++)
        extra[k++] = keys[i], extra[k++] = vals[i];
    extra[k++] = "asn.train.corpus_sha256";
    extra[k++] = corpus_sha;
    extra[k] = NULL;
    if (asn_lm_checkpoint_save(lm, path, name, vg, st, extra, &e))
        asn_fatal("%s", e.msg);
}

static void load_checkpoint(const char *path, asn_lm *lm, asn_lm_state *st, const char *corpus_sha)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open(path, &e);
    if (!g || asn_lm_checkpoint_load(lm, g, st, &e))
        asn_fatal("%s (resume with the model options of the run that wrote it)", e.msg);
    char vals[N_RECORDED][64];
    const char *keys[N_RECORDED];
    recorded_options(vals, keys);
    for (int i = 0; i < N_RECORDED; i++) {
        char *was = NULL;
        if (!asn_gguf_get_str(g, keys[i], 0, &was, &e) && was && strcmp(was, vals[i]))
            asn_warn("%s: %s was %s, now %s: the run will differ from an uninterrupted one", path,
                     keys[i] + strlen("asn.train.opt."), was, vals[i]);
        free(was);
    }
    char *sha = NULL;
    if (!asn_gguf_get_str(g, "asn.train.corpus_sha256", 0, &sha, &e) && sha && strcmp(sha, corpus_sha))
        asn_warn("%s: the corpus has changed since the checkpoint", path);
    free(sha);
    asn_gguf_close(g);
}

/* One training run: what the steps share. */
typedef struct run {
    asn_lm *lm;
    asn_pool *pool;
    const asn_gguf *vocab;
    const int32_t *train, *valid;
    size_t n_train, n_valid;
    asn_rng_key key;
    asn_sched sched;
    asn_adamw adam;
    asn_lm_state st;
    int B, T;
    int32_t *inp, *tgt;
    const char *name, *ckpt_path, *corpus_sha;
    FILE *log;
    /* reporting */
    double t_start, t_eval, t_draw, loss_sum, last_val;
    long loss_n, start_step;
    uint64_t tokens_run;
    int tty;
} run;

/* One optimizer step: --accum micro-batches of --batch random windows,
 * gradient clipping, AdamW at the scheduled rate. Returns the mean loss. */
static double train_step(run *r, double *norm, float *lr)
{
    asn_err e;
    long s = r->st.step;
    uint64_t per_step = (uint64_t)opts.accum * (uint64_t)r->B;
    asn_lm_zero_grad(r->lm);
    double loss = 0;
    for (long a = 0; a < opts.accum; a++) {
        for (int b = 0; b < r->B; b++) {
            uint64_t w = (uint64_t)s * per_step + (uint64_t)a * (uint64_t)r->B + (uint64_t)b;
            size_t at = asn_lm_window(r->key, w, r->n_train, r->T);
            memcpy(r->inp + (size_t)b * r->T, r->train + at, (size_t)r->T * sizeof *r->inp);
            memcpy(r->tgt + (size_t)b * r->T, r->train + at + 1, (size_t)r->T * sizeof *r->tgt);
        }
        double l;
        if (asn_lm_forward(r->lm, r->inp, r->tgt, r->B, r->T, &l, &e) ||
            asn_lm_backward(r->lm, 1.0f / (float)opts.accum, &e))
            asn_fatal("step %ld: %s", s + 1, e.msg);
        loss += l / (double)opts.accum;
    }
    if (!isfinite(loss))
        asn_fatal("step %ld: the loss is %g (try a lower --lr)", s + 1, loss);
    *norm = asn_clip_grad_norm(asn_lm_grads(r->lm), asn_lm_n_params(r->lm), opts.clip);
    *lr = (float)asn_sched_lr(&r->sched, opts.lr, s);
    asn_lm_adamw_step(r->lm, &r->adam, s + 1, *lr, (float)opts.wd, r->st.m, r->st.v);
    r->st.step = s + 1;
    r->st.windows = (uint64_t)r->st.step * per_step;
    r->st.tokens += per_step * (uint64_t)r->T;
    r->tokens_run += per_step * (uint64_t)r->T;
    return loss;
}

/* After a step: validation when due, the log line, the progress line. */
static void report(run *r, double loss, double norm, float lr)
{
    asn_err e;
    long step = r->st.step;
    int last = step == opts.steps;
    int do_eval = r->valid && (last || (opts.eval_every && step % opts.eval_every == 0));
    double val = NAN;
    r->loss_sum += loss;
    r->loss_n++;
    if (do_eval) {
        double t0 = asn_now();
        if (asn_lm_eval(r->lm, r->valid, r->n_valid, (size_t)opts.eval_tokens, r->B, r->T, &val, &e))
            asn_fatal("validation: %s", e.msg);
        r->last_val = val;
        r->t_eval += asn_now() - t0;
    }
    /* the rate counts training time only, the ETA all of it */
    double el = asn_now() - r->t_start, rate = (double)r->tokens_run / (el - r->t_eval);
    double eta = el / (double)(step - r->start_step) * (double)(opts.steps - step);
    char eb[32];
    fmt_duration(eta, eb, sizeof eb);
    if (last || do_eval || step % opts.log_every == 0) {
        double mean = r->loss_sum / (double)r->loss_n;
        fprintf(r->log, "{\"step\":%ld,\"tokens\":%llu,\"loss\":%.6f,\"val_loss\":", step,
                (unsigned long long)r->st.tokens, mean);
        if (do_eval)
            fprintf(r->log, "%.6f", val);
        else
            fputs("null", r->log);
        fprintf(r->log, ",\"lr\":%.6g,\"grad_norm\":%.6g,\"tokens_per_s\":%.1f,\"time\":%.2f}\n", lr, norm, rate,
                r->st.elapsed + el);
        fflush(r->log);
        if (!opts.quiet && !r->tty) {
            fprintf(stderr, "%s: step %ld/%ld loss %.4f", asn_progname(), step, opts.steps, mean);
            if (do_eval)
                fprintf(stderr, " val %.4f (ppl %.2f)", val, exp(val));
            fprintf(stderr, " lr %.3g %.0f tok/s ETA %s\n", lr, rate, eb);
        }
        r->loss_sum = 0;
        r->loss_n = 0;
    }
    if (r->tty && (asn_now() - r->t_draw >= 0.2 || last || do_eval)) {
        fprintf(stderr, "\rstep %ld/%ld  loss %.4f", step, opts.steps, loss);
        if (!isnan(r->last_val))
            fprintf(stderr, "  val %.4f", r->last_val);
        fprintf(stderr, "  lr %.3g  %.0f tok/s  ETA %s   ", lr, rate, eb);
        r->t_draw = asn_now();
    }
}

static void checkpoint(run *r)
{
    asn_lm_state cur = r->st;
    cur.elapsed = r->st.elapsed + (asn_now() - r->t_start);
    save_checkpoint(r->ckpt_path, r->lm, r->vocab, r->name, &cur, r->corpus_sha);
}

/* The model: weights, tokenizer, and how it was trained. */
static void write_model(run *r)
{
    asn_err e;
    char steps[32], tokens[32], seed[32], val[32];
    snprintf(steps, sizeof steps, "%ld", r->st.step);
    snprintf(tokens, sizeof tokens, "%llu", (unsigned long long)r->st.tokens);
    snprintf(seed, sizeof seed, "%ld", opts.seed);
    snprintf(val, sizeof val, "%.6f", r->last_val);
    const char *extra[] = {"asn.train.steps", steps, "asn.train.tokens", tokens, "asn.train.seed", seed,
                           "asn.train.corpus_sha256", r->corpus_sha,
                           isnan(r->last_val) ? NULL : "asn.train.valid_loss", val, NULL};
    if (asn_lm_checkpoint_save(r->lm, opts.output, r->name, r->vocab, NULL, extra, &e))
        asn_fatal("%s", e.msg);
    if (!opts.quiet) {
        fprintf(stderr, "%s: wrote %s (%ld steps, %llu tokens", asn_progname(), opts.output, r->st.step,
                (unsigned long long)r->st.tokens);
        if (!isnan(r->last_val))
            fprintf(stderr, ", validation loss %.4f, perplexity %.2f", r->last_val, exp(r->last_val));
        fprintf(stderr, ")\n");
    }
}

/* ------------------------------------------------------------------ main */

static void check_options(int nops)
{
    if (!opts.vocab)
        asn_usage_error("--vocab is required");
    if (!opts.output)
        asn_usage_error("--output is required");
    if (nops != 1)
        asn_usage_error(nops ? "one CORPUS file, not %d" : "a CORPUS file is required", nops);
    struct {
        const char *name;
        long v, min;
    } pos[] = {{"--dim", opts.dim, 2},        {"--layers", opts.layers, 1},  {"--heads", opts.heads, 1},
               {"--kv-heads", opts.kv_heads, 0}, {"--ffn", opts.ffn, 0},      {"--ctx", opts.ctx, 1},
               {"--steps", opts.steps, 1},    {"--batch", opts.batch, 1},    {"--accum", opts.accum, 1},
               {"--warmup", opts.warmup, 0},  {"--log-every", opts.log_every, 1}, {"--eval-every", opts.eval_every, 0},
               {"--eval-tokens", opts.eval_tokens, 0}, {"--checkpoint-every", opts.ckpt_every, 0},
               {"--threads", opts.threads, 0}, {"--seed", opts.seed, 0}, {"--stop-at", opts.stop_at, 0}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v < pos[i].min)
            asn_usage_error("%s must be at least %ld (got %ld)", pos[i].name, pos[i].min, pos[i].v);
    if (opts.dim > 65536 || opts.layers > 1024 || opts.heads > 4096 || opts.ctx > 65536 || opts.batch * opts.ctx > (1 << 24))
        asn_usage_error("model or batch too large");
    if (!(opts.lr > 0))
        asn_usage_error("--lr must be positive");
    if (opts.wd < 0 || opts.clip < 0 || opts.eps <= 0 || opts.max_time < 0)
        asn_usage_error("--weight-decay, --clip and --max-time must be >= 0, --adam-eps > 0");
    if (!(opts.beta1 >= 0 && opts.beta1 < 1) || !(opts.beta2 >= 0 && opts.beta2 < 1))
        asn_usage_error("--beta1 and --beta2 must be in [0, 1)");
    if (!(opts.rope_base > 0) || !(opts.rms_eps > 0))
        asn_usage_error("--rope-base and --rms-eps must be positive");
}

/* What main's steps share: the run, and what it points to. */
typedef struct tl_ctx {
    run r;
    const char *corpus;
    asn_gguf *vg;
    asn_vocab *v;
    int32_t *train, *valid;
    char vocab_sha[65], corpus_sha[65];
    char *log_path, *ckpt_path, *train_cache, *valid_cache, *doc_sep, *name;
} tl_ctx;

/* The schedule, the optimizer and the paths of the outputs. */
static void make_settings(tl_ctx *g)
{
    asn_err e;
    run *r = &g->r;
    *r = (run){.B = (int)opts.batch, .T = (int)opts.ctx, .last_val = NAN};
    asn_sched_kind kind;
    if (asn_sched_parse(opts.schedule, &kind, &e))
        asn_usage_error("--schedule: %s", e.msg);
    r->sched = asn_sched_make(kind, opts.warmup, opts.steps);
    r->sched.min_lr_rate = opts.min_lr_rate;
    if (asn_sched_check(&r->sched, opts.lr, &e))
        asn_usage_error("--schedule: %s", e.msg);
    r->adam = (asn_adamw){(float)opts.beta1, (float)opts.beta2, (float)opts.eps};
    g->log_path = opts.log ? asn_xstrdup(opts.log) : asn_derived_path(opts.output, ".log.jsonl");
    g->ckpt_path = opts.ckpt ? asn_xstrdup(opts.ckpt) : asn_derived_path(opts.output, ".ckpt.gguf");
    g->train_cache = opts.no_cache ? NULL : asn_derived_path(opts.output, ".train.tokens");
    g->valid_cache = opts.no_cache ? NULL : asn_derived_path(opts.output, ".valid.tokens");
    g->doc_sep = opts.doc_sep && *opts.doc_sep ? unescape(opts.doc_sep) : NULL;
    const char *base = strrchr(opts.output, '/');
    g->name = opts.name ? asn_xstrdup(opts.name) : asn_derived_path(base ? base + 1 : opts.output, "");
    r->ckpt_path = g->ckpt_path;
    r->name = g->name;
}

/* The vocabulary, and the corpus (and --valid) as tokens. */
static void load_corpus(tl_ctx *g)
{
    asn_err e;
    run *r = &g->r;
    g->vg = asn_gguf_open(opts.vocab, &e);
    g->v = g->vg ? asn_vocab_load(g->vg, &e) : NULL;
    if (!g->v)
        asn_fatal("%s: %s", opts.vocab, e.msg);
    if (asn_sha256_file(opts.vocab, g->vocab_sha, &e) || asn_sha256_file(g->corpus, g->corpus_sha, &e))
        asn_fatal("%s", e.msg);
    r->vocab = g->vg;
    r->corpus_sha = g->corpus_sha;
    r->pool = asn_pool_new((int)opts.threads);
    g->train = load_tokens(g->corpus, g->vocab_sha, g->v, g->doc_sep, g->train_cache, r->pool, &r->n_train);
    g->valid = opts.valid ? load_tokens(opts.valid, g->vocab_sha, g->v, g->doc_sep, g->valid_cache, r->pool, &r->n_valid)
                          : NULL;
    if (r->n_train < (size_t)opts.ctx + 1)
        asn_fatal("%s: %zu tokens, fewer than --ctx + 1 = %ld", g->corpus, r->n_train, opts.ctx + 1);
    if (opts.valid && r->n_valid < 2)
        asn_fatal("%s: fewer than 2 tokens to validate on", opts.valid);
    r->train = g->train;
    r->valid = g->valid;
}

/* The model and the optimizer state: new, or from --resume; the log. */
static void make_model(tl_ctx *g)
{
    asn_err e;
    run *r = &g->r;
    asn_lm_config cfg = {
        .n_vocab = asn_vocab_n_tokens(g->v), .dim = (int)opts.dim, .n_layer = (int)opts.layers,
        .n_head = (int)opts.heads, .n_head_kv = (int)opts.kv_heads, .ctx = (int)opts.ctx,
        .rope_base = (float)opts.rope_base, .rms_eps = (float)opts.rms_eps,
        .ffn = opts.ffn ? (int)opts.ffn : (int)((opts.dim * 8 / 3 + 31) / 32 * 32),
    };
    if (!(r->lm = asn_lm_new(&cfg, r->pool, &e)))
        asn_usage_error("%s", e.msg);
    size_t np = asn_lm_n_params(r->lm);
    r->st.m = asn_xcalloc(np, sizeof(float));
    r->st.v = asn_xcalloc(np, sizeof(float));
    if (opts.resume) {
        load_checkpoint(opts.resume, r->lm, &r->st, g->corpus_sha);
        if (r->st.step > opts.steps)
            asn_fatal("%s: the checkpoint is at step %ld, past --steps %ld", opts.resume, r->st.step, opts.steps);
    } else {
        asn_lm_init_weights(r->lm, (uint64_t)opts.seed);
    }
    if (!(r->log = fopen(g->log_path, opts.resume ? "a" : "w")))
        asn_fatal("%s: %s", g->log_path, strerror(errno));
    if (!opts.quiet) {
        size_t n_weights = 0;
        for (size_t i = 0; i < asn_lm_n_tensors(r->lm); i++)
            n_weights += asn_lm_tensor_at(r->lm, i)->size;
        const asn_lm_config *c = asn_lm_cfg(r->lm);
        fprintf(stderr, "%s: %zu parameters (dim %d, layers %d, heads %d/%d, ffn %d, vocab %d, ctx %d); "
                        "%zu training tokens; %ld steps of %ld tokens; OpenBLAS %s kernels%s\n",
                asn_progname(), n_weights, c->dim, c->n_layer, c->n_head, c->n_head_kv, c->ffn, c->n_vocab, c->ctx,
                r->n_train, opts.steps, opts.batch * opts.accum * opts.ctx, openblas_get_corename(),
                opts.resume ? "; resuming" : "");
    }
}

/* The steps, with periodic checkpoints. Returns 0 when all ran, else why
 * they stopped: 1 interrupted, 2 --max-time, 3 --stop-at. */
static int train(run *r)
{
    asn_catch_stop();
    r->inp = asn_xmalloc((size_t)r->B * r->T * sizeof *r->inp);
    r->tgt = asn_xmalloc((size_t)r->B * r->T * sizeof *r->tgt);
    r->key = asn_rng_key_make((uint64_t)opts.seed, "train-lm", "windows");
    r->tty = !opts.quiet && (opts.progress || isatty(2));
    r->t_start = asn_now();
    r->start_step = r->st.step;
    int stopped = 0;
    while (r->st.step < opts.steps) {
        double norm;
        float lr;
        double loss = train_step(r, &norm, &lr);
        report(r, loss, norm, lr);
        int last = r->st.step == opts.steps;
        int timeout = opts.max_time > 0 && asn_now() - r->t_start >= opts.max_time;
        if (!last && (asn_stop_requested() || timeout || r->st.step == opts.stop_at)) {
            stopped = asn_stop_requested() ? 1 : timeout ? 2 : 3;
            break;
        }
        if (!last && opts.ckpt_every && r->st.step % opts.ckpt_every == 0)
            checkpoint(r);
    }
    if (r->tty)
        fputc('\n', stderr);
    fclose(r->log);
    return stopped;
}

/* A stopped run: its checkpoint, and how to continue. Returns the status. */
static int stop(run *r, int stopped)
{
    checkpoint(r);
    fprintf(stderr, "%s: %s at step %ld of %ld; checkpoint %s (continue with --resume %s)\n", asn_progname(),
            stopped == 1 ? "interrupted" : stopped == 2 ? "time limit reached" : "stopped", r->st.step, opts.steps,
            r->ckpt_path, r->ckpt_path);
    return stopped == 1 ? ASN_EXIT_FAIL : ASN_EXIT_OK;
}

/* A finished run: the last checkpoint, the validation loss, the model. */
static void finish(run *r)
{
    asn_err e;
    if (opts.ckpt_every && r->st.step > r->start_step)
        checkpoint(r);
    if (r->valid && isnan(r->last_val) &&
        asn_lm_eval(r->lm, r->valid, r->n_valid, (size_t)opts.eval_tokens, r->B, r->T, &r->last_val,
                    &e)) /* resumed at the end: no step ran */
        asn_fatal("validation: %s", e.msg);
    write_model(r);
}

static void tl_free(tl_ctx *g)
{
    run *r = &g->r;
    free(r->inp), free(r->tgt), free(r->st.m), free(r->st.v), free(g->train), free(g->valid);
    asn_lm_free(r->lm);
    asn_pool_free(r->pool);
    asn_vocab_free(g->v);
    asn_gguf_close(g->vg);
    free(g->log_path), free(g->ckpt_path), free(g->train_cache), free(g->valid_cache), free(g->doc_sep),
        free(g->name);
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    check_options(nops);
    tl_ctx g = {.corpus = argv[1]};
    make_settings(&g);
    load_corpus(&g);
    make_model(&g);
    int stopped = train(&g.r);
    if (stopped)
        return stop(&g.r, stopped);
    finish(&g.r);
    tl_free(&g);
    return 0;
}
