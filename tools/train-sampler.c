/* train-sampler — trains a learned sampler (lib/learn/sampler_net.c) to
 * reproduce the heuristics of a set of candidates: each record is replayed
 * through the base model (lib/gen/replay.c), the record's own heuristic
 * gives the target row of every generated step, and the network learns raw
 * logits -> target with TruncatedLogitsLoss, AdamW and a warmup schedule
 * (the reference's train_supervised, in f32, streamed). */
#include "asn/chat.h"
#include "asn/gguf.h"
#include "asn/json.h"
#include "asn/model.h"
#include "asn/optim.h"
#include "asn/records.h"
#include "asn/replay.h"
#include "asn/sampler_net.h"
#include "asn/tool.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct ts_options {
    const char *model;
    const char *arch;
    const char *config;
    const char *output;
    const char *ckpt;
    const char *resume;
    const char *log;
    const char *sched;
    const char *init;
    const char *reward;
    int rl;
    double rl_beta;
    double rl_clip;
    double rl_kl;
    long tb;
    long accum;
    long epochs;
    long save;
    long warmup;
    long max_seq;
    long max_steps;
    long seed;
    long threads;
    long log_every;
    long stop_at;
    double lr;
    double wd;
    double gamma;
    double clip;
    double beta1;
    double beta2;
    double eps;
    int quiet;
    int progress;
    int no_shuffle;
    const char *chat_date;
} ts_options;

/* The options, with their defaults (the table below points into it). */
static ts_options opts = {
    .sched = "cosine",
    .reward = "score.final",
    .rl_beta = 0.1,
    .rl_clip = 0,
    .rl_kl = 0.1,
    .tb = 8,
    .accum = 24,
    .epochs = 1,
    .save = 50,
    .warmup = 100,
    .max_seq = 1000,
    .seed = 42,
    .log_every = 10,
    .lr = 1e-2,
    .wd = 0.01,
    .gamma = 5.0,
    .beta1 = 0.9,
    .beta2 = 0.999,
    .eps = 1e-8,
};

static const asn_option options[] = {
    {"chat-date", 0, ASN_OPT_STRING, &opts.chat_date, "DATE", ASN_CHAT_DATE_HELP " for the research pipeline's records (asn's carry theirs)"},
    {"model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "the base model GGUF the candidates were generated with (required)"},
    {"arch", 'a', ASN_OPT_STRING, &opts.arch, "NAME", "LocalProbabilityTransform, SimpleDistributionAwareTransform, SamplingNetwork or EquivariantLocalTransform"},
    {"config", 'c', ASN_OPT_STRING, &opts.config, "FILE", "the network's hyper-parameters (a reference model_config YAML)"},
    {"output", 'o', ASN_OPT_STRING, &opts.output, "FILE", "the sampler GGUF to write (required)"},
    {"token-batch-size", 'b', ASN_OPT_INT, &opts.tb, "N", "generated steps (rows of logits) per micro-batch"},
    {"gradient-accumulation-steps", 0, ASN_OPT_INT, &opts.accum, "N", "micro-batches per optimizer step"},
    {"learning-rate", 0, ASN_OPT_DOUBLE, &opts.lr, "RATE", "peak learning rate"},
    {"weight-decay", 0, ASN_OPT_DOUBLE, &opts.wd, "W", "AdamW decoupled weight decay (torch's default 0.01)"},
    {"beta1", 0, ASN_OPT_DOUBLE, &opts.beta1, "B", "AdamW beta1"},
    {"beta2", 0, ASN_OPT_DOUBLE, &opts.beta2, "B", "AdamW beta2"},
    {"adam-eps", 0, ASN_OPT_DOUBLE, &opts.eps, "E", "AdamW epsilon"},
    {"max-grad-norm", 0, ASN_OPT_DOUBLE, &opts.clip, "NORM", "clip the gradient's global norm (0: off, as the reference)"},
    {"lr-scheduler-type", 0, ASN_OPT_STRING, &opts.sched, "NAME", "constant, constant_with_warmup, linear, cosine, cosine_with_restarts, polynomial, cosine_with_min_lr"},
    {"num-warmup-steps", 0, ASN_OPT_INT, &opts.warmup, "N", "linear warmup steps"},
    {"num-epochs", 'e', ASN_OPT_INT, &opts.epochs, "N", "passes over the candidates"},
    {"max-steps", 0, ASN_OPT_INT, &opts.max_steps, "N", "train N optimizer steps, as many epochs as that takes; the schedule spans N (0: --num-epochs decides)"},
    {"loss-gamma", 0, ASN_OPT_DOUBLE, &opts.gamma, "G", "weight of the truncation penalty in the loss"},
    {"max-seq-length", 0, ASN_OPT_INT, &opts.max_seq, "N", "replay at most N positions (prompt + generation) per record"},
    {"seed", 's', ASN_OPT_INT, &opts.seed, "N", "seed of the initial weights and of the record order"},
    {"no-shuffle", 0, ASN_OPT_FLAG, &opts.no_shuffle, NULL, "take the records in file order"},
    {"save-steps", 0, ASN_OPT_INT, &opts.save, "N", "write the checkpoint every N optimizer steps (0: only when stopped early)"},
    {"checkpoint", 0, ASN_OPT_STRING, &opts.ckpt, "FILE", "checkpoint file (default: OUTPUT without .gguf + .ckpt.gguf)"},
    {"resume", 0, ASN_OPT_STRING, &opts.resume, "FILE", "continue from this checkpoint"},
    {"stop-at", 0, ASN_OPT_INT, &opts.stop_at, "STEP", "stop after optimizer step STEP with a checkpoint"},
    {"log", 0, ASN_OPT_STRING, &opts.log, "FILE", "training log, one JSON line per log step (default: OUTPUT without .gguf + .log.jsonl)"},
    {"log-every", 0, ASN_OPT_INT, &opts.log_every, "N", "log every N optimizer steps"},
    {"init", 0, ASN_OPT_STRING, &opts.init, "FILE", "start from this sampler's weights (a sampler GGUF; --arch and --config not needed)"},
    {"rl", 0, ASN_OPT_FLAG, &opts.rl, NULL, "reward-driven fine-tuning (see below) instead of imitation alone"},
    {"reward", 0, ASN_OPT_STRING, &opts.reward, "FIELD", "with --rl: the record's reward, a dotted path (score.final: filter-topk's final score; verifiable_reward, quality.bt, ...)"},
    {"rl-beta", 0, ASN_OPT_DOUBLE, &opts.rl_beta, "B", "with --rl: weight of the imitation loss kept as an anchor"},
    {"rl-clip", 0, ASN_OPT_DOUBLE, &opts.rl_clip, "E", "with --rl: clip the probability ratio to [1 - E, 1 + E] (PPO); 0: no ratio, -A log p (the reference project)"},
    {"rl-kl", 0, ASN_OPT_DOUBLE, &opts.rl_kl, "B", "with --rl: weight of the KL to the --init network (k3 estimate on the drawn token)"},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads (0: all cores)"},
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "redraw a progress line even when stderr is not a terminal"},
    {"quiet", 'q', ASN_OPT_FLAG, &opts.quiet, NULL, "no progress or log lines on stderr"},
    {0},
};

static const asn_tool tool = {
    "train-sampler", "-m MODEL -a ARCH -c CONFIG -o OUTPUT [OPTIONS] [CANDIDATES.jsonl]",
    "Train a learned sampler network to reproduce the heuristics of a set of candidates.",
    "Input: candidate records (gen-candidates or filter-topk output; file or\n"
    "stdin), each with prompt, system, heuristic, seed, tokens, settings and\n"
    "model.sha256, which must be the digest of --model. Every record is checked\n"
    "before training starts; an error names the file, line and field.\n"
    "\n"
    "For each record (in an order shuffled per epoch from --seed), the prompt\n"
    "is formatted as gen-candidates did, prefilled once, and the recorded\n"
    "tokens are fed to the model a micro-batch at a time: the logits of the\n"
    "step that drew each token are the input (with the end-of-generation tokens\n"
    "removed before min_new_tokens, as generation removes them before any\n"
    "heuristic, learned or not, sees the row), and the record's own heuristic\n"
    "applied to them (with the token history, state and random key of that\n"
    "step, and min_new_tokens) is the target: exactly the row the token was\n"
    "drawn from (-inf where the heuristic removed a token). A step whose\n"
    "target does not give back the recorded token is counted and reported:\n"
    "the records then come from other settings.\n"
    "\n"
    "Rows are collected into micro-batches of --token-batch-size (across record\n"
    "boundaries; the last incomplete one is dropped, as in the reference), the\n"
    "loss is TruncatedLogitsLoss: mean over rows of KL(target || network) over\n"
    "the tokens the target keeps, plus --loss-gamma times the network's mass on\n"
    "the tokens the target removed. Gradients accumulate over\n"
    "--gradient-accumulation-steps micro-batches, then AdamW steps with the\n"
    "rate of the schedule (HuggingFace semantics; total steps = target rows /\n"
    "token batch / accumulation x epochs, or --max-steps). Memory: the model,\n"
    "the network and two micro-batches of rows, whatever the data size.\n"
    "\n"
    "Output: OUTPUT, a sampler GGUF (general.architecture \"asn-sampler\"; use\n"
    "it as the processor {name: learned, params: {path: OUTPUT}}). The\n"
    "checkpoint adds AdamW's moments and the position in the data (train.*);\n"
    "--resume continues exactly where it stopped: the same options and thread\n"
    "count give the same weights byte for byte, interrupted or not. On SIGINT\n"
    "or SIGTERM the run writes the checkpoint after the current step and exits\n"
    "with status 1.\n"
    "\n"
    "--rl: reward-driven fine-tuning, GRPO-style. The records of one prompt\n"
    "(prompt_id) form a group; a record's advantage A is its reward (--reward,\n"
    "a number; records without one count as absent and keep advantage 0)\n"
    "minus the group's mean, over the group's standard deviation (0 for a\n"
    "group of one). Each replayed step (drawn token a) adds to the loss\n"
    "  -A log p_net(a) + K (rho - 1 - log rho),  rho = p_net(a) / p_ref(a)\n"
    "(the reference project's GRPO loss: policy gradient plus --rl-kl K times\n"
    "the k3 estimate of the KL to p_ref, the frozen starting network: --init,\n"
    "else the initial weights), plus --rl-beta times TruncatedLogitsLoss\n"
    "towards the record's own heuristic. With --rl-clip E > 0 the first term\n"
    "is PPO's -A min(rho, clip(rho, 1 - E, 1 + E)) instead (a negative\n"
    "advantage weighs at most 3 |A|); a per-token network moves the ratio of\n"
    "rare tokens fast, and at E = 0.2 it hardly learns (examples/README.md).\n"
    "On-policy use: records generated by the --init sampler itself (a\n"
    "{name: learned} heuristic), rewarded, then trained on, round after\n"
    "round (pipelines/rl.mk). On records of other heuristics it is offline\n"
    "fine-tuning (no importance weight for the heuristics). Batching,\n"
    "schedule, checkpoints and --resume are as above (give --init again with\n"
    "--resume); the same options and thread count give the same weights.\n"
    "\n"
    "stderr: step, loss, KL, penalty, learning rate, tokens/s (a redrawn line\n"
    "on a terminal, a line per log step otherwise). The log file gets one JSON\n"
    "line per log step: step, epoch, rows, loss, kl, penalty (means since the\n"
    "last line), lr, grad_norm, rows_per_s, time; report --history LOG -o\n"
    "FILE.svg draws its loss and KL against the step.\n",
    options,
};

/* --------------------------------------------------------------- helpers */

/* ---------------------------------------------------------------- data */

/* The records: a seekable copy of the input, each record's offset and
 * number of target rows. */
typedef struct data {
    const char *path;
    FILE *f;
    long *off, *line;
    int *rows;
    long n;
    long total_rows;
    double *reward;  /* --rl: each record's reward (NaN: none) */
    char **group;    /* --rl: each record's prompt_id */
    float *adv;      /* --rl: each record's advantage */
    long n_reward;
} data;

static char *read_line(FILE *f, char **buf, size_t *cap)
{
    ssize_t len = getline(buf, cap, f);
    if (len < 0)
        return NULL;
    while (len > 0 && ((*buf)[len - 1] == '\n' || (*buf)[len - 1] == '\r'))
        (*buf)[--len] = 0;
    return *buf;
}

static int blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t')
            return 0;
    return 1;
}

/* A record of line `line` as a candidate; fatal with file:line on error. */
/* A dotted path's number in a record; NaN when absent or null. */
static double reward_of(const data *d, long line, const json_t *rec)
{
    char key[256];
    snprintf(key, sizeof key, "%s", opts.reward);
    const json_t *o = rec;
    for (char *p = key, *dot; o && p; p = dot ? dot + 1 : NULL) {
        dot = strchr(p, '.');
        if (dot)
            *dot = 0;
        o = json_is_object(o) ? json_object_get(o, p) : NULL;
    }
    if (!o || json_is_null(o))
        return NAN;
    if (!json_is_number(o) || !isfinite(json_number_value(o)))
        asn_fatal("%s:%ld: field \"%s\": not a finite number (--reward)", d->path, line, opts.reward);
    return json_number_value(o);
}

/* The chat family of the model, for the research pipeline's records (which
 * name none): the model's own template's, none without one. */
static int model_chat(asn_model *m)
{
    static int family = -2;
    if (family != -2)
        return family;
    asn_err e;
    char *t = NULL;
    if (asn_gguf_get_str(asn_model_gguf(m), "tokenizer.chat_template", 0, &t, &e))
        asn_fatal("%s", e.msg);
    family = t ? asn_chat_for_model(t, NULL, &e) : ASN_CHAT_NONE;
    free(t);
    if (family < 0)
        asn_fatal("%s: %s", asn_model_path(m), e.msg);
    return family;
}

static void parse_record(data *d, long line, const char *text, asn_model *m, const asn_vocab *v,
                         const char *sha, asn_candidate *c, long at)
{
    asn_err e;
    json_error_t je;
    json_t *rec = json_loads(text, JSON_DECODE_ANY, &je);
    if (!rec)
        asn_fatal("%s:%ld: invalid JSON at column %d: %s", d->path, line, je.column, je.text);
    if (!json_is_object(rec))
        asn_fatal("%s:%ld: record must be a JSON object", d->path, line);
    if (asn_rec_format(rec) == ASN_REC_REFERENCE) {
        /* the research pipeline's record: no model named, no tokens */
        if (asn_candidate_from_reference(c, rec, v, model_chat(m), &e))
            asn_fatal("%s:%ld: %s", d->path, line, e.msg);
    } else {
        const json_t *ms = json_object_get(json_object_get(rec, "model"), "sha256");
        if (!json_is_string(ms))
            asn_fatal("%s:%ld: field \"model.sha256\": missing (the records must say which model made them)",
                      d->path, line);
        if (strcmp(json_string_value(ms), sha))
            asn_fatal("%s:%ld: field \"model.sha256\": the record was generated by model %.12s..., not by %s "
                      "(%.12s...)", d->path, line, json_string_value(ms), asn_model_path(m), sha);
        if (asn_candidate_from_json(c, rec, v, &e))
            asn_fatal("%s:%ld: %s", d->path, line, e.msg);
    }
    if (at >= 0 && opts.rl) {
        d->reward[at] = reward_of(d, line, rec);
        d->group[at] = asn_xstrdup(c->prompt_id ? c->prompt_id : "");
        d->n_reward += !isnan(d->reward[at]);
    }
    json_decref(rec);
}

static int rows_of(const asn_candidate *c)
{
    long room = opts.max_seq - c->n_prompt;
    if (room < 0)
        room = 0;
    return c->n_gen < room ? c->n_gen : (int)room;
}

/* Reads and checks every record; keeps offsets (the input is copied to a
 * temporary file when it cannot seek). */
static void load_data(data *d, const char *path, asn_model *m, const asn_vocab *v, const char *sha)
{
    d->path = strcmp(path, "-") ? path : "<stdin>";
    FILE *in = asn_open_in(path);
    FILE *f = in;
    if (fseek(in, 0, SEEK_SET) != 0) {
        f = tmpfile();
        if (!f)
            asn_fatal("cannot create a temporary file for %s", d->path);
    }
    char *buf = NULL;
    size_t cap = 0, n_cap = 0;
    long line = 0, pos = 0;
    for (;;) {
        long at = f == in ? ftell(in) : pos;
        if (!read_line(in, &buf, &cap))
            break;
        line++;
        if (f != in) {
            fputs(buf, f);
            fputc('\n', f);
            pos += (long)strlen(buf) + 1;
        }
        if (blank(buf))
            continue;
        asn_candidate c;
        if (d->n == (long)n_cap) {
            n_cap = n_cap ? 2 * n_cap : 1024;
            d->off = asn_xrealloc(d->off, n_cap * sizeof *d->off);
            d->line = asn_xrealloc(d->line, n_cap * sizeof *d->line);
            d->rows = asn_xrealloc(d->rows, n_cap * sizeof *d->rows);
            d->reward = asn_xrealloc(d->reward, n_cap * sizeof *d->reward);
            d->group = asn_xrealloc(d->group, n_cap * sizeof *d->group);
        }
        parse_record(d, line, buf, m, v, sha, &c, d->n);
        d->off[d->n] = at;
        d->line[d->n] = line;
        d->rows[d->n] = rows_of(&c);
        d->total_rows += d->rows[d->n];
        d->n++;
        asn_candidate_clear(&c);
    }
    if (ferror(in))
        asn_fatal("%s: read error", d->path);
    free(buf);
    if (f != in)
        fclose(in);
    if (fflush(f) || ferror(f))
        asn_fatal("%s: cannot write a temporary copy", d->path);
    d->f = f;
}

static void fetch_record(data *d, long i, asn_model *m, const asn_vocab *v, const char *sha, asn_candidate *c)
{
    static char *buf;
    static size_t cap;
    if (fseek(d->f, d->off[i], SEEK_SET) || !read_line(d->f, &buf, &cap))
        asn_fatal("%s:%ld: cannot read the record again (did the file change?)", d->path, d->line[i]);
    parse_record(d, d->line[i], buf, m, v, sha, c, -1);
}

/* --rl: advantages, reward minus the mean of the prompt's records with a
 * reward, over their standard deviation (population); 0 without a reward
 * or in a group of one. Sums in record order. */
static void advantages(data *d)
{
    d->adv = asn_xcalloc((size_t)(d->n ? d->n : 1), sizeof *d->adv);
    for (long i = 0; i < d->n; i++) {
        if (isnan(d->reward[i]))
            continue;
        double s = 0, s2 = 0;
        long k = 0;
        for (long j = 0; j < d->n; j++)
            if (!isnan(d->reward[j]) && !strcmp(d->group[j], d->group[i]))
                s += d->reward[j], k++;
        double mean = s / (double)k;
        for (long j = 0; j < d->n; j++)
            if (!isnan(d->reward[j]) && !strcmp(d->group[j], d->group[i]))
                s2 += (d->reward[j] - mean) * (d->reward[j] - mean);
        double sd = sqrt(s2 / (double)k);
        d->adv[i] = k > 1 && sd > 1e-12 ? (float)((d->reward[i] - mean) / sd) : 0.0f;
    }
    long nz = 0;
    for (long i = 0; i < d->n; i++)
        nz += d->adv[i] != 0.0f;
    if (!nz)
        asn_warn("%s: every advantage is 0 (the rewards \"%s\" are equal within each prompt's records): "
                 "only the KL and imitation terms train", d->path, opts.reward);
}

/* The record order of an epoch: a Fisher-Yates shuffle from the counter
 * RNG, a pure function of (seed, epoch). */
static void epoch_order(long *order, long n, long epoch)
{
    for (long i = 0; i < n; i++)
        order[i] = i;
    if (opts.no_shuffle)
        return;
    asn_rng_key key = asn_rng_key_make((uint64_t)opts.seed, "train-sampler", "shuffle");
    for (long i = n - 1; i > 0; i--) {
        double u = asn_rng_uniform(key, ((uint64_t)epoch << 32) | (uint64_t)i, ASN_STREAM_DRAW);
        long j = (long)(u * (double)(i + 1));
        long t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* ------------------------------------------------------------- training */

typedef struct pos {
    long step;   /* optimizer steps done */
    long epoch;  /* current epoch */
    long k;      /* records of the epoch's order finished */
    long t;      /* rows of record k already used */
    double time; /* seconds of training over all runs */
} pos;

/* The options a checkpoint records; a resumed run with other values warns. */
enum { N_RECORDED = 11 };

static void recorded(char vals[N_RECORDED][64], const char *keys[N_RECORDED])
{
    static const char *const k[N_RECORDED] = {
        "train.opt.token_batch_size", "train.opt.accum", "train.opt.seed", "train.opt.learning_rate",
        "train.opt.schedule", "train.opt.warmup", "train.opt.weight_decay", "train.opt.loss_gamma",
        "train.opt.epochs", "train.opt.max_steps", "train.opt.rl"};
    for (int i = 0; i < N_RECORDED; i++)
        keys[i] = k[i];
    snprintf(vals[0], 64, "%ld", opts.tb);
    snprintf(vals[1], 64, "%ld", opts.accum);
    snprintf(vals[2], 64, "%ld%s", opts.seed, opts.no_shuffle ? " no-shuffle" : "");
    snprintf(vals[3], 64, "%.17g", opts.lr);
    snprintf(vals[4], 64, "%s", opts.sched);
    snprintf(vals[5], 64, "%ld", opts.warmup);
    snprintf(vals[6], 64, "%.17g", opts.wd);
    snprintf(vals[7], 64, "%.17g", opts.gamma);
    snprintf(vals[8], 64, "%ld", opts.epochs);
    snprintf(vals[9], 64, "%ld", opts.max_steps);
    if (opts.rl)
        snprintf(vals[10], 64, "%.20s %.4g %.4g %.4g", opts.reward, opts.rl_beta, opts.rl_clip, opts.rl_kl);
    else
        snprintf(vals[10], 64, "off");
}

static void save_checkpoint(const char *path, const asn_sampler *s, const float *am, const float *av, const pos *p,
                            long n_records, long total_rows)
{
    asn_gguf_writer *w = asn_sampler_writer(s);
    char vals[N_RECORDED][64];
    const char *keys[N_RECORDED];
    recorded(vals, keys);
    for (int i = 0; i < N_RECORDED; i++)
        asn_gguf_set_str(w, keys[i], vals[i]);
    asn_gguf_set_u64(w, "train.step", (uint64_t)p->step);
    asn_gguf_set_u64(w, "train.epoch", (uint64_t)p->epoch);
    asn_gguf_set_u64(w, "train.record", (uint64_t)p->k);
    asn_gguf_set_u64(w, "train.record_row", (uint64_t)p->t);
    asn_gguf_set_u64(w, "train.n_records", (uint64_t)n_records);
    asn_gguf_set_u64(w, "train.n_rows", (uint64_t)total_rows);
    char tbuf[64];
    snprintf(tbuf, sizeof tbuf, "%.17g", p->time);
    asn_gguf_set_str(w, "train.time", tbuf);
    int64_t ne[2] = {(int64_t)asn_sampler_n_params(s), 1};
    asn_gguf_add_tensor(w, "train.adam_m", ASN_T_F32, 1, ne, am);
    asn_gguf_add_tensor(w, "train.adam_v", ASN_T_F32, 1, ne, av);
    char *tmp = asn_derived_path(path, ".tmp.gguf");
    asn_err e;
    if (asn_gguf_write(w, tmp, &e))
        asn_fatal("%s", e.msg);
    asn_gguf_writer_free(w);
    /* on disk before it replaces the last one: a crash leaves one of the two */
    if (asn_fsync_path(tmp) || rename(tmp, path))
        asn_fatal("%s: cannot move the checkpoint into place: %s", path, strerror(errno));
    asn_fsync_dir(path);
    free(tmp);
}

static uint64_t get_u64(const asn_gguf *g, const char *key)
{
    int64_t v = 0;
    asn_err e;
    if (asn_gguf_get_i64(g, key, 1, &v, &e) || v < 0)
        asn_fatal("%s: not a train-sampler checkpoint (%s)", asn_gguf_path(g), key);
    return (uint64_t)v;
}

static asn_sampler *load_checkpoint(const char *path, float **am, float **av, pos *p, long n_records,
                                    long total_rows)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open(path, &e);
    if (!g)
        asn_fatal("%s", e.msg);
    asn_sampler *s = asn_sampler_from_gguf(g, &e);
    if (!s)
        asn_fatal("%s", e.msg);
    size_t np = asn_sampler_n_params(s);
    const char *names[2] = {"train.adam_m", "train.adam_v"};
    float **dst[2] = {am, av};
    for (int i = 0; i < 2; i++) {
        const asn_gguf_tensor *t = asn_gguf_find_tensor(g, names[i]);
        if (!t || t->type != ASN_T_F32 || t->n_dims != 1 || (size_t)t->ne[0] != np)
            asn_fatal("%s: not a train-sampler checkpoint of this network (tensor %s)", path, names[i]);
        *dst[i] = asn_xmalloc(np * sizeof(float));
        memcpy(*dst[i], t->data, np * sizeof(float));
    }
    p->step = (long)get_u64(g, "train.step");
    p->epoch = (long)get_u64(g, "train.epoch");
    p->k = (long)get_u64(g, "train.record");
    p->t = (long)get_u64(g, "train.record_row");
    char *tv = NULL;
    if (!asn_gguf_get_str(g, "train.time", 0, &tv, &e) && tv)
        p->time = atof(tv);
    free(tv);
    if ((long)get_u64(g, "train.n_records") != n_records || (long)get_u64(g, "train.n_rows") != total_rows)
        asn_fatal("%s: the checkpoint was written for other candidates (%llu records, %llu rows; now %ld, %ld)",
                  path, (unsigned long long)get_u64(g, "train.n_records"),
                  (unsigned long long)get_u64(g, "train.n_rows"), n_records, total_rows);
    char vals[N_RECORDED][64];
    const char *keys[N_RECORDED];
    recorded(vals, keys);
    for (int i = 0; i < N_RECORDED; i++) {
        char *was = NULL;
        if (!asn_gguf_get_str(g, keys[i], 0, &was, &e) && was && strcmp(was, vals[i]))
            asn_warn("%s: %s was %s, now %s: the run will differ from an uninterrupted one", path,
                     keys[i] + strlen("train.opt."), was, vals[i]);
        free(was);
    }
    asn_gguf_close(g);
    return s;
}

/* What the steps share. */
typedef struct trainer {
    asn_sampler *s;
    asn_sampler_ws *ws;
    asn_sampler *ref;        /* --rl: the frozen starting point the ratio is taken against */
    asn_sampler_ws *ref_ws;
    float *pref;
    asn_pool *pool;
    asn_sched sched;
    asn_adamw adam;
    float *am, *av;
    float *pred, *dpred;
    int V;
    long micro;           /* micro-batches since the last optimizer step */
    pos p;
    long total_steps;
    /* statistics since the last log line */
    double sum_loss, sum_kl, sum_pen, sum_pg, sum_rlkl;
    long n_micro, rows_done, log_rows;
    double t0, log_t;
    double last_lr, last_norm;
    FILE *log;
    const char *ckpt;
    long n_records, total_rows;
} trainer;

/* log softmax of row x at token a, in double over the finite entries. */
static void micro_batch(trainer *tr, const float *raw, const float *tgt, const int *steps, const float *adv,
                        const int32_t *tok, int rows)
{
    asn_err e;
    float scale = (float)(1.0 / ((double)rows * (double)opts.accum));
    for (int r = 0; r < rows; r++) {
        const float *x = raw + (size_t)r * (size_t)tr->V, *y = tgt + (size_t)r * (size_t)tr->V;
        asn_sampler_loss l;
        asn_sampler_ws_set_step(tr->ws, steps[r]);
        float lscale = opts.rl ? (float)(scale * opts.rl_beta) : scale;
        if (asn_sampler_forward(tr->s, tr->ws, tr->pool, x, tr->V, tr->pred, &e) ||
            asn_truncated_logits_loss_row(tr->pred, y, tr->V, (float)opts.gamma, lscale, &l, tr->dpred, &e))
            asn_fatal("step %ld: %s", tr->p.step + 1, e.msg);
        if (opts.rl) {
            asn_sampler_ws_set_step(tr->ref_ws, steps[r]);
            if (asn_sampler_forward(tr->ref, tr->ref_ws, tr->pool, x, tr->V, tr->pref, &e))
                asn_fatal("step %ld: %s", tr->p.step + 1, e.msg);
            asn_policy_loss pl;
            asn_policy_loss_opts po = {opts.rl_clip, opts.rl_kl};
            if (asn_policy_loss_row(tr->pred, tr->pref, tr->V, tok[r], adv[r], &po, scale, &pl, tr->dpred, &e))
                asn_fatal("step %ld: %s", tr->p.step + 1, e.msg);
            tr->sum_pg += pl.pg / rows;
            tr->sum_rlkl += pl.kl / rows;
            l.total = opts.rl_beta * l.total + pl.total;
        }
        if (asn_sampler_backward(tr->s, tr->ws, tr->pool, tr->dpred, NULL, &e))
            asn_fatal("step %ld: %s", tr->p.step + 1, e.msg);
        tr->sum_loss += l.total / rows;
        tr->sum_kl += l.kl / rows;
        tr->sum_pen += l.penalty / rows;
    }
    tr->n_micro++;
    tr->rows_done += rows;
    tr->micro++;
}

static void log_line(trainer *tr, int final)
{
    double t = asn_now();
    double n = tr->n_micro ? (double)tr->n_micro : 1;
    double rate = (double)(tr->rows_done - tr->log_rows) / (t - tr->log_t > 1e-9 ? t - tr->log_t : 1e-9);
    if (tr->log) {
        json_t *o = json_pack("{s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "step", (json_int_t)tr->p.step, "epoch",
                              (json_int_t)tr->p.epoch, "rows", (json_int_t)tr->rows_done, "loss", tr->sum_loss / n,
                              "kl", tr->sum_kl / n, "penalty", tr->sum_pen / n, "lr", tr->last_lr, "grad_norm",
                              tr->last_norm, "rows_per_s", rate, "time", tr->p.time + (t - tr->t0));
        if (opts.rl) {
            json_object_set_new(o, "pg", json_real(tr->sum_pg / n));
            json_object_set_new(o, "kl_ref", json_real(tr->sum_rlkl / n));
        }
        asn_jsonl_write(tr->log, o);
        fflush(tr->log);
        json_decref(o);
    }
    if (!opts.quiet) {
        int tty = opts.progress || isatty(2);
        fprintf(stderr, "%s: step %ld/%ld  loss %.4f  kl %.4f  penalty %.4f  lr %.3g  %.0f tokens/s%s", asn_progname(),
                tr->p.step, tr->total_steps, tr->sum_loss / n, tr->sum_kl / n, tr->sum_pen / n, tr->last_lr, rate,
                tty && !final ? "\r" : "\n");
        fflush(stderr);
    }
    tr->sum_loss = tr->sum_kl = tr->sum_pen = tr->sum_pg = tr->sum_rlkl = 0;
    tr->n_micro = 0;
    tr->log_rows = tr->rows_done;
    tr->log_t = t;
}

static void optimizer_step(trainer *tr)
{
    size_t np = asn_sampler_n_params(tr->s);
    float *g = asn_sampler_grads(tr->s);
    tr->last_norm = asn_clip_grad_norm(g, np, opts.clip);
    tr->last_lr = asn_sched_lr(&tr->sched, opts.lr, tr->p.step);
    asn_adamw_step(&tr->adam, tr->p.step + 1, (float)tr->last_lr, (float)opts.wd, asn_sampler_params(tr->s), g,
                   tr->am, tr->av, np);
    asn_sampler_zero_grad(tr->s);
    tr->p.step++;
    tr->micro = 0;
}

static void checkpoint(trainer *tr)
{
    pos p = tr->p;
    p.time += asn_now() - tr->t0;
    save_checkpoint(tr->ckpt, tr->s, tr->am, tr->av, &p, tr->n_records, tr->total_rows);
}

/* ------------------------------------------------------------------ main */

/* What a run needs, opened from the options before training starts. */
typedef struct ts_ctx {
    asn_sched_kind sk;
    asn_sampler_config cfg;   /* without --resume or --init: the new network's */
    asn_model *m;
    const asn_vocab *v;
    const char *sha;          /* the model's digest, which the records must carry */
    data d;
    trainer tr;
    char *ckpt, *log_path;
    asn_replayer *rp;
    /* a micro-batch being filled: rows, their targets and what drew them */
    float *raw, *tgt;
    uint8_t *drawn;
    int *steps;
    float *adv;
    int32_t *tok;
    long fill;
    long *order;              /* the epoch's record order */
    long mismatched;          /* replayed steps that do not draw their recorded token */
    int stopped;              /* stopped early (a signal or --stop-at): a checkpoint, no output */
} ts_ctx;

/* The checks of the options; the schedule and a new network's
 * configuration parsed. */
static void check_options(ts_ctx *g, int nop)
{
    asn_err e;
    if (opts.chat_date && asn_chat_set_date(opts.chat_date, &e))
        asn_usage_error("--chat-date: %s", e.msg);
    if (!opts.model || !opts.output)
        asn_usage_error("--model and --output are required");
    if (!opts.resume && !opts.init && (!opts.arch || !opts.config))
        asn_usage_error("--arch and --config are required (unless resuming or with --init)");
    if (opts.rl && (!(opts.rl_beta >= 0) || !(opts.rl_kl >= 0) || !(opts.rl_clip >= 0 && opts.rl_clip < 1)))
        asn_usage_error("--rl-beta and --rl-kl must be >= 0 and --rl-clip in [0, 1)");
    if (opts.rl && opts.resume && !opts.init)
        asn_usage_error("--rl --resume needs the run's --init again (the reference of the ratio)");
    if (nop > 1)
        asn_usage_error("one candidates file at most");
    if (opts.tb < 1 || opts.accum < 1 || opts.epochs < 1 || opts.max_seq < 2 || opts.max_steps < 0 || opts.save < 0 ||
        opts.warmup < 0 || opts.log_every < 1 || opts.threads < 0 || opts.stop_at < 0)
        asn_usage_error("sizes and counts must be >= 1 (--max-steps, --save-steps, --num-warmup-steps, --stop-at, "
                        "--threads >= 0)");
    if (!(opts.lr > 0) || !(opts.wd >= 0) || !(opts.gamma >= 0) || !(opts.clip >= 0) || !(opts.eps > 0) ||
        !(opts.beta1 >= 0 && opts.beta1 < 1) || !(opts.beta2 >= 0 && opts.beta2 < 1))
        asn_usage_error("--learning-rate and --adam-eps must be > 0, --weight-decay, --loss-gamma, --max-grad-norm "
                        ">= 0, betas in [0, 1)");
    if (asn_sched_parse(opts.sched, &g->sk, &e))
        asn_usage_error("--lr-scheduler-type: %s", e.msg);
    if (!opts.resume && !opts.init) {
        if (asn_sampler_arch_parse(opts.arch, &g->cfg.arch, &e))
            asn_usage_error("--arch: %s", e.msg);
        if (asn_sampler_config_load(g->cfg.arch, opts.config, &g->cfg, &e))
            asn_fatal("%s", e.msg);
    }
}

/* The model and the records (every one checked), with --rl their
 * advantages. */
static void load_inputs(ts_ctx *g, const char *path)
{
    asn_err e;
    g->m = asn_model_load(opts.model, &e);
    if (!g->m)
        asn_fatal("%s", e.msg);
    g->v = asn_model_vocab(g->m, &e);
    g->sha = g->v ? asn_model_sha256(g->m, &e) : NULL;
    if (!g->sha)
        asn_fatal("%s", e.msg);
    data *d = &g->d;
    load_data(d, path, g->m, g->v, g->sha);
    if (opts.rl) {
        if (!d->n_reward)
            asn_fatal("%s: no record has a reward \"%s\" (--reward)", d->path, opts.reward);
        advantages(d);
    }
    if (d->total_rows < opts.tb)
        asn_fatal("%s: %ld records with %ld target rows: fewer than one token batch (%ld)", d->path, d->n,
                  d->total_rows, opts.tb);
}

/* The schedule, the network and AdamW's moments (new, --init's or the
 * checkpoint's), the checkpoint's name and the log. */
static void make_trainer(ts_ctx *g)
{
    asn_err e;
    trainer *tr = &g->tr;
    const data *d = &g->d;
    tr->V = asn_model_cfg(g->m)->n_vocab;
    tr->n_records = d->n;
    tr->total_rows = d->total_rows;
    long per_epoch = (d->total_rows / opts.tb) / opts.accum;
    tr->total_steps = opts.max_steps ? opts.max_steps : per_epoch * opts.epochs;
    if (tr->total_steps < 1)
        tr->total_steps = 1; /* as the reference: a final step on the remaining gradients */
    tr->sched = asn_sched_make(g->sk, opts.warmup, tr->total_steps);
    if (asn_sched_check(&tr->sched, opts.lr, &e))
        asn_usage_error("%s", e.msg);
    tr->adam = (asn_adamw){(float)opts.beta1, (float)opts.beta2, (float)opts.eps};
    g->ckpt = opts.ckpt ? asn_xstrdup(opts.ckpt) : asn_derived_path(opts.output, ".ckpt.gguf");
    tr->ckpt = g->ckpt;
    if (opts.resume) {
        tr->s = load_checkpoint(opts.resume, &tr->am, &tr->av, &tr->p, d->n, d->total_rows);
        if (opts.arch) {
            asn_sampler_arch a;
            if (asn_sampler_arch_parse(opts.arch, &a, &e) || a != asn_sampler_get_config(tr->s)->arch)
                asn_fatal("%s: the checkpoint holds a %s, not --arch %s", opts.resume,
                          asn_sampler_arch_name(asn_sampler_get_config(tr->s)->arch), opts.arch);
        }
    } else {
        tr->s = opts.init ? asn_sampler_load(opts.init, &e) : asn_sampler_new(&g->cfg, (uint64_t)opts.seed, &e);
        if (!tr->s)
            asn_fatal("%s: %s", opts.init ? opts.init : opts.config, e.msg);
        size_t np = asn_sampler_n_params(tr->s);
        tr->am = asn_xcalloc(np, sizeof(float));
        tr->av = asn_xcalloc(np, sizeof(float));
    }
    g->log_path = opts.log ? asn_xstrdup(opts.log) : asn_derived_path(opts.output, ".log.jsonl");
    tr->log = fopen(g->log_path, opts.resume ? "a" : "w");
    if (!tr->log)
        asn_fatal("%s: cannot open the log", g->log_path);
}

/* The threads, the workspaces (with --rl the reference network's), the
 * replayer and the micro-batch's buffers. */
static void open_buffers(ts_ctx *g)
{
    asn_err e;
    trainer *tr = &g->tr;
    tr->pool = asn_pool_new((int)opts.threads);
    tr->ws = asn_sampler_ws_new(tr->s, 1);
    tr->pred = asn_xmalloc((size_t)tr->V * sizeof(float));
    if (opts.rl) {
        tr->ref = opts.init ? asn_sampler_load(opts.init, &e) : asn_sampler_new(&g->cfg, (uint64_t)opts.seed, &e);
        if (!tr->ref)
            asn_fatal("%s", e.msg);
        tr->ref_ws = asn_sampler_ws_new(tr->ref, 0);
        tr->pref = asn_xmalloc((size_t)tr->V * sizeof(float));
    }
    tr->dpred = asn_xmalloc((size_t)tr->V * sizeof(float));
    g->rp = asn_replayer_new(g->m, tr->pool, 0, &e);
    if (!g->rp)
        asn_fatal("%s", e.msg);
    g->raw = asn_xmalloc((size_t)opts.tb * (size_t)tr->V * sizeof(float));
    g->tgt = asn_xmalloc((size_t)opts.tb * (size_t)tr->V * sizeof(float));
    g->drawn = asn_xmalloc((size_t)opts.tb);
    g->steps = asn_xmalloc((size_t)opts.tb * sizeof *g->steps);
    g->adv = asn_xcalloc((size_t)opts.tb, sizeof *g->adv);
    g->tok = asn_xcalloc((size_t)opts.tb, sizeof *g->tok);
    g->order = asn_xmalloc((size_t)g->d.n * sizeof *g->order);
}

/* After an optimizer step while record i is replayed: the log line, and a
 * checkpoint every --save-steps, at --stop-at or when a signal asked to
 * stop. Returns whether training is over. */
static int after_step(ts_ctx *g, long i)
{
    trainer *tr = &g->tr;
    optimizer_step(tr);
    if (tr->p.step % opts.log_every == 0 || tr->p.step == tr->total_steps)
        log_line(tr, tr->p.step == tr->total_steps);
    int done = tr->p.step >= tr->total_steps;
    int stop_now = asn_stop_requested() || (opts.stop_at && tr->p.step == opts.stop_at && !done);
    if (stop_now || (opts.save && tr->p.step % opts.save == 0 && !done)) {
        /* the position after this step: the rest of record k */
        if (tr->p.t >= g->d.rows[i]) {
            pos keep = tr->p;
            tr->p.t = 0, tr->p.k++;
            if (tr->p.k >= g->d.n)
                tr->p.k = 0, tr->p.epoch++;
            checkpoint(tr);
            tr->p = keep;
        } else {
            checkpoint(tr);
        }
    }
    if (stop_now) {
        g->stopped = 1;
        done = 1;
    }
    return done;
}

/* Replays record i from row p.t on, a micro-batch at a time (rows carried
 * over into the next record), stepping the optimizer every --gradient-
 * accumulation-steps micro-batches. Returns whether training is over. */
static int train_record(ts_ctx *g, long i)
{
    asn_err e;
    trainer *tr = &g->tr;
    data *d = &g->d;
    asn_candidate c;
    fetch_record(d, i, g->m, g->v, g->sha, &c);
    if (asn_replay_begin(g->rp, &c, &e))
        asn_fatal("%s:%ld: %s", d->path, d->line[i], e.msg);
    for (long skip = 0; skip < tr->p.t;) { /* resumed inside this record */
        int k = asn_replay_next(g->rp, (int)(tr->p.t - skip < opts.tb ? tr->p.t - skip : opts.tb), NULL, NULL, NULL, &e);
        if (k <= 0)
            asn_fatal("%s:%ld: %s", d->path, d->line[i], k < 0 ? e.msg : "replay ended early");
        skip += k;
    }
    int done = 0;
    while (!done && tr->p.t < d->rows[i]) {
        int want = (int)(opts.tb - g->fill);
        if (want > d->rows[i] - tr->p.t)
            want = (int)(d->rows[i] - tr->p.t);
        int got = asn_replay_next(g->rp, want, g->raw + (size_t)g->fill * (size_t)tr->V,
                                  g->tgt + (size_t)g->fill * (size_t)tr->V, g->drawn, &e);
        if (got <= 0)
            asn_fatal("%s:%ld: %s", d->path, d->line[i], got < 0 ? e.msg : "replay ended early");
        for (int j = 0; j < got; j++) {
            g->mismatched += !g->drawn[j];
            g->steps[g->fill + j] = (int)(tr->p.t + j);
            g->tok[g->fill + j] = c.gen[tr->p.t + j];
            g->adv[g->fill + j] = opts.rl ? d->adv[i] : 0.0f;
        }
        g->fill += got;
        tr->p.t += got;
        if (g->fill < opts.tb)
            continue;
        micro_batch(tr, g->raw, g->tgt, g->steps, g->adv, g->tok, (int)opts.tb);
        g->fill = 0;
        if (tr->micro < opts.accum)
            continue;
        done = after_step(g, i);
    }
    asn_candidate_clear(&c);
    return done;
}

/* The epochs, from the checkpoint's position with --resume, then the
 * reference's final step on what was accumulated. */
static void train(ts_ctx *g)
{
    trainer *tr = &g->tr;
    const data *d = &g->d;
    if (!opts.quiet)
        fprintf(stderr, "%s: %s, %zu parameters; %ld records, %ld target rows; %ld steps of %ld x %ld rows%s\n",
                asn_progname(), asn_sampler_arch_name(asn_sampler_get_config(tr->s)->arch),
                asn_sampler_n_params(tr->s), d->n, d->total_rows, tr->total_steps, opts.accum, opts.tb,
                opts.resume ? " (resumed)" : "");
    asn_catch_stop();
    tr->t0 = tr->log_t = asn_now();
    int done = tr->p.step >= tr->total_steps;
    for (; !done && (opts.max_steps || tr->p.epoch < opts.epochs); tr->p.epoch++, tr->p.k = 0) {
        epoch_order(g->order, d->n, tr->p.epoch);
        for (; !done && tr->p.k < d->n; tr->p.k++, tr->p.t = 0) {
            long i = g->order[tr->p.k];
            if (tr->p.t >= d->rows[i])
                continue;
            done = train_record(g, i);
        }
        if (done)
            break;
    }
    if (!g->stopped && tr->micro > 0) {
        optimizer_step(tr);
        log_line(tr, 1);
    }
}

/* The sampler written (and the last checkpoint), or, stopped early, where
 * to continue from. */
static void finish(ts_ctx *g)
{
    asn_err e;
    trainer *tr = &g->tr;
    if (g->mismatched)
        asn_warn("%ld of the replayed steps do not draw their recorded token again: those records were not "
                 "generated by this model with their recorded settings", g->mismatched);
    if (g->stopped) {
        if (!opts.quiet)
            fprintf(stderr, "%s: stopped after step %ld; checkpoint %s (continue with --resume %s)\n",
                    asn_progname(), tr->p.step, g->ckpt, g->ckpt);
    } else {
        if (asn_sampler_save(tr->s, opts.output, &e)) /* written beside it and renamed */
            asn_fatal("%s", e.msg);
        asn_fsync_path(opts.output);
        asn_fsync_dir(opts.output);
        if (opts.save)
            checkpoint(tr);
        if (!opts.quiet)
            fprintf(stderr, "%s: wrote %s (%ld steps, %ld rows, %.1f s)\n", asn_progname(), opts.output, tr->p.step,
                    tr->rows_done, tr->p.time + asn_now() - tr->t0);
    }
    fclose(tr->log);
}

static void ts_free(ts_ctx *g)
{
    trainer *tr = &g->tr;
    data *d = &g->d;
    free(g->order);
    free(g->drawn);
    free(g->steps);
    free(g->adv);
    free(g->tok);
    for (long i = 0; opts.rl && i < d->n; i++)
        free(d->group[i]);
    free(d->group);
    free(d->reward);
    free(d->adv);
    free(g->raw);
    free(g->tgt);
    free(tr->pred);
    free(tr->dpred);
    free(tr->am);
    free(tr->av);
    asn_replayer_free(g->rp);
    asn_sampler_ws_free(tr->ws);
    asn_sampler_ws_free(tr->ref_ws);
    asn_sampler_free(tr->ref);
    free(tr->pref);
    asn_sampler_free(tr->s);
    asn_pool_free(tr->pool);
    fclose(d->f);
    free(d->off);
    free(d->line);
    free(d->rows);
    free(g->ckpt);
    free(g->log_path);
    asn_model_free(g->m);
}

int main(int argc, char **argv)
{
    int nop = asn_tool_parse(&tool, argc, argv);
    ts_ctx g = {0};
    check_options(&g, nop);
    load_inputs(&g, nop ? argv[1] : "-");
    make_trainer(&g);
    open_buffers(&g);
    train(&g);
    finish(&g);
    ts_free(&g);
    return asn_stop_requested() ? ASN_EXIT_FAIL : 0;
}
