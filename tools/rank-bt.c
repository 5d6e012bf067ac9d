/* rank-bt — quality ratings of candidates: a Swiss tournament per (prompt,
 * seed) group, each game judged by a model, then Bradley-Terry ratings
 * (as the reference's tournament code computes them, asn/bt.h). */
#include "asn/bt.h"
#include "asn/chat.h"
#include "asn/gen.h"
#include "asn/json.h"
#include "asn/model.h"
#include "asn/records.h"
#include "asn/remote.h"
#include "asn/record_loop.h"
#include "asn/tool.h"
#include "asn/vocab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct rank_bt_options {
    const char *judge;
    const char *judge_model;
    const char *template;
    const char *chat;
    const char *group;
    const char *kind;
    const char *api_key;
    const char *tokenizer;
    asn_strlist server;
    long inflight;
    long retries;
    double timeout;
    const char *method;
    const char *shard; /* --shard, --merge: asn_tool_shards */
    asn_strlist merge;
    long seed;
    long extra;
    long threads;
    long batch;
    double tau;
    double prior;
    int retokenize;
    int skip_bad;
    int progress;
    int verbose;
    const char *chat_date;
    long judge_ctx;
} rank_bt_options;

/* The options, with their defaults (the table below points into it). */
static rank_bt_options opts = {
    .group = "seed",
    .inflight = 64,
    .retries = 8,
    .timeout = 600,
    .method = "mle",
    .extra = 1,
    .batch = 16,
    .tau = 0.1,
    .prior = ASN_BT_PRIOR_GAMES,
};

static const asn_option options[] = {
    {"judge", 'j', ASN_OPT_STRING, &opts.judge, "KIND", "pairwise or reference-ll (required)"},
    {"judge-model", 'm', ASN_OPT_STRING, &opts.judge_model, "FILE", "GGUF model of the judge (or --judge-server)"},
    {"judge-server", 0, ASN_OPT_LIST, &opts.server, "URL", "judge on this OpenAI-compatible server instead (repeat: several share the load)"},
    {"server-kind", 0, ASN_OPT_STRING, &opts.kind, "KIND", "with --judge-server: asn (serve), vllm or sglang (default: asked of the server)"},
    {"tokenizer", 0, ASN_OPT_STRING, &opts.tokenizer, "GGUF", "with --judge-server: the judge's tokenizer and chat template (default: --judge-model's; its weights are not loaded)"},
    {"max-inflight", 0, ASN_OPT_INT, &opts.inflight, "N", "with --judge-server: most requests in flight"},
    {"timeout", 0, ASN_OPT_DOUBLE, &opts.timeout, "S", "with --judge-server: seconds a request may take"},
    {"retries", 0, ASN_OPT_INT, &opts.retries, "N", "with --judge-server: tries after the first (429, 5xx, lost connections)"},
    {"api-key", 0, ASN_OPT_STRING, &opts.api_key, "KEY", "with --judge-server: bearer key"},
    {"judge-template", 0, ASN_OPT_STRING, &opts.template, "FILE", "pairwise question template (default: built in, the text of configs/judges/pairwise.txt)"},
    {"judge-chat-template", 0, ASN_OPT_STRING, &opts.chat, "NAME", "chat template family for the judge's input (chatml, llama3, ..., none); default: see below"},
    {"judge-ctx", 0, ASN_OPT_INT, &opts.judge_ctx, "N", "the judge's context in tokens (default: the judge model's training context; the research pipeline's template with two answers needs about 250 tokens more than the answers)"},
    {"chat-date", 0, ASN_OPT_STRING, &opts.chat_date, "DATE", ASN_CHAT_DATE_HELP},
    {"tau", 0, ASN_OPT_DOUBLE, &opts.tau, "X", "reference-ll: temperature of the pair score, in nats"},
    {"retokenize", 0, ASN_OPT_FLAG, &opts.retokenize, NULL, "reference-ll: score the tokenized generation even when the record has tokens"},
    {"group", 0, ASN_OPT_STRING, &opts.group, "BY", "seed: one tournament per (prompt, seed); prompt: one per prompt"},
    {"extra-rounds", 0, ASN_OPT_INT, &opts.extra, "N", "rounds beyond ceil(log2 players)"},
    {"seed", 's', ASN_OPT_INT, &opts.seed, "N", "seed of the round-1 pairing"},
    {"bt-method", 0, ASN_OPT_STRING, &opts.method, "M", "mle (exact maximum likelihood) or reference (1000 gradient steps)"},
    {"bt-prior", 0, ASN_OPT_DOUBLE, &opts.prior, "GAMES", "mle: pseudo-games drawn against an average player, per player"},
    {"batch", 'b', ASN_OPT_INT, &opts.batch, "N", "sequences per judge forward pass"},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads (0: all cores)"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show progress even when stderr is not a terminal"},
    {"verbose", 'v', ASN_OPT_FLAG, &opts.verbose, NULL, "print counts and timings on stderr at the end"},
    {"shard", 0, ASN_OPT_STRING, &opts.shard, "K/N", "only the records of the prompts of shard K of N (as gen-candidates --shard)"},
    {"merge", 0, ASN_OPT_LIST, &opts.merge, "FILE", "label nothing: merge these shard outputs in the order of the input's prompts"},
    {0},
};

static const asn_tool tool = {
    "rank-bt", "--judge KIND --judge-model FILE [OPTIONS] [FILE...]",
    "Rate candidates: a Swiss tournament per prompt and seed, judged by a model, and Bradley-Terry ratings.",
    "Input: candidate records, asn's or the research pipeline's (detected per file;\n"
    "a file of the latter is named on stderr), a prompt's records anywhere in the\n"
    "input (grouped in the order of their first record).\n"
    "Read: \"prompt_id\" (else \"prompt\") and \"seed\" to group; \"prompt\" (the\n"
    "question) and \"generation\"; for reference-ll also \"tokens\", \"system\" and\n"
    "\"settings\" (system, chat_template), or the reference's \"system_prompt\".\n"
    "\n"
    "Tournament: the players are a group's records; rounds = ceil(log2 players)\n"
    "+ --extra-rounds. Round 1 pairs at random (Philox, keyed by --seed, the\n"
    "prompt and the group); later rounds pair each player, best first, with the\n"
    "best-placed player it has not met (else the next one); an odd player out\n"
    "gets a bye worth 0.5 points. A game's score is in [0, 1].\n"
    "\n"
    "Judges:\n"
    "  pairwise      the judge model answers the template's question (\"A\" or\n"
    "                \"B\"?) as one user turn of its chat template; the score is\n"
    "                P(\"A\") renormalized over the tokens \"A\" and \"B\", averaged\n"
    "                over both orders of the pair (position debiasing). A\n"
    "                rematch reuses its first verdict.\n"
    "  reference-ll  each candidate's mean log-probability per token (nats) of\n"
    "                its \"tokens\" (or, without them or with --retokenize, of its\n"
    "                tokenized generation) under the judge model, given the\n"
    "                prompt as the generator formatted it (the record's system\n"
    "                message and settings.chat_template); a game scores\n"
    "                sigmoid((s_a - s_b) / tau). An empty answer loses every game\n"
    "                (draws against another empty one).\n"
    "The judge's chat template: --judge-chat-template, else (reference-ll) the\n"
    "record's settings.chat_template, else the model's own, else none.\n"
    "\n"
    "Servers: --judge-server URL asks an OpenAI-compatible server for the\n"
    "log-probabilities of prompt tokens (asn's serve and vLLM: /v1/completions\n"
    "with \"echo\"; SGLang: /generate with input_token_logprobs; llama-server\n"
    "has none and is refused). The texts are formatted and tokenized here\n"
    "(--tokenizer or --judge-model GGUF, weights not loaded); the pairwise judge\n"
    "sends each order's question followed by \"A\" and by \"B\" and reads the\n"
    "last token's log-probability. Against serve with the same GGUF the ratings\n"
    "are --judge-model's, byte for byte. quality.judge names the server's model\n"
    "(and, from serve, its digest).\n"
    "\n"
    "Ratings: --bt-method mle fits the Bradley-Terry ratings by maximum\n"
    "likelihood (Newton's method until no gradient exceeds 1e-10 games), with\n"
    "--bt-prior pseudo-games per player drawn against a player of rating 0 so\n"
    "that unbeaten players and disconnected groups stay finite; reference runs\n"
    "the reference project's 1000 gradient steps (learning rate 0.05). Ratings\n"
    "are natural log-odds, mean-centered per group.\n"
    "\n"
    "Every record gains\n"
    "  quality: {bt, swiss_points, games, judge, bt_method[, mean_logprob]}\n"
    "  bradley_terry_rating   = quality.bt (the reference's name)\n"
    "bt is null (and bradley_terry_rating absent) for a record that played no\n"
    "game: a group of one record. Records keep their order and every other\n"
    "field. The output does not depend on --threads or --batch.\n" ASN_SHARD_HELP,
    options,
};

enum { JUDGE_PAIRWISE, JUDGE_LL };

/* ------------------------------------------------------------ the run */

typedef struct ranker {
    int judge;
    asn_model *m;
    const asn_vocab *v;
    int model_family; /* the judge model's chat family */
    int chat_override; /* --judge-chat-template, or -1 */
    asn_judge_tmpl *tmpl;
    asn_pairwise *pw;
    asn_llscorer *ll;
    asn_remote_judge remote; /* --judge-server: its client set, m NULL */
    asn_gguf *tok_gguf;      /* --judge-server: the tokenizer's file */
    asn_vocab *own_vocab;
    int V;                   /* token ids are below */
    json_t *judge_json; /* quality.judge */
    int n_ctx;
    /* counts and timings */
    long groups, singles, judged, reused, undecided, records, misspelt;
    double t_judge, t_bt;
} ranker;

/* One record of the prompt group being ranked. */
typedef struct cand {
    json_t *rec;
    int keep, sub, local;
    const char *input, *gen;
    int32_t *prompt; /* reference-ll: formatted prompt tokens (may be shared) */
    int n_prompt, own_prompt;
    int32_t *tok;    /* reference-ll: the answer's tokens (owned) */
    int n_tok;
    double ll;
} cand;

/* A tournament: the group's players (indices into the cands). */
typedef struct sub {
    long long seed;
    int n, *member;
    asn_swiss sw;
    asn_bt_game *games;
    size_t ng, cap;
    int *pairs, np;     /* this round's pairs (local numbers) */
    double *score;      /* their scores */
    int *req;           /* their request number, or -1 when reused */
} sub;

/* ------------------------------------------------------- record fields */

/* The system message the candidate was generated with: its "system", else
 * settings.system, else the reference's "system_prompt". */
static int record_system(const json_t *rec, const char **sys, asn_err *e)
{
    *sys = NULL;
    const json_t *st = json_object_get(rec, "settings");
    if (json_object_get(rec, "system"))
        return asn_get_string(rec, "system", 0, sys, e);
    if (json_is_object(st) && json_object_get(st, "system"))
        return asn_get_string(st, "system", 0, sys, e) ? asn_err_prefix(e, "settings") : 0;
    return asn_get_string(rec, "system_prompt", 0, sys, e);
}

static int record_family(const ranker *R, const json_t *rec, int *fam, asn_err *e)
{
    *fam = R->model_family;
    if (R->chat_override >= 0) {
        *fam = R->chat_override;
        return 0;
    }
    const json_t *st = json_object_get(rec, "settings");
    const char *name = NULL;
    if (!json_is_object(st) || !json_object_get(st, "chat_template"))
        return 0;
    if (asn_get_string(st, "chat_template", 1, &name, e))
        return asn_err_prefix(e, "settings");
    if ((*fam = asn_chat_from_name(name)) < 0)
        return asn_err_set(e, "field \"settings.chat_template\": unknown chat template \"%s\"", name);
    return 0;
}

/* Reads what the judge needs from record c->rec. prev: the previous kept
 * candidate, whose formatted prompt is reused when identical. */
static int read_cand(ranker *R, cand *c, const cand *prev, asn_err *e)
{
    if (asn_get_string(c->rec, "prompt", 1, &c->input, e))
        return -1;
    const json_t *t = json_object_get(c->rec, "tokens"), *x;
    int need_gen = R->judge == JUDGE_PAIRWISE || opts.retokenize || !t || json_is_null(t);
    if (need_gen && asn_get_string(c->rec, "generation", 1, &c->gen, e))
        return -1;
    if (R->judge != JUDGE_LL)
        return 0;
    /* the answer's tokens */
    if (!need_gen) {
        if (!json_is_array(t))
            return asn_err_set(e, "field \"tokens\" must be an array of token ids");
        size_t i, n = json_array_size(t);
        c->tok = asn_xmalloc((n ? n : 1) * sizeof *c->tok);
        json_array_foreach(t, i, x) {
            if (!json_is_integer(x))
                return asn_err_set(e, "field \"tokens\" must be an array of token ids");
            json_int_t id = json_integer_value(x);
            if (id < 0 || id >= R->V)
                return asn_err_set(e, "field \"tokens\": %lld is not a token id of the judge model (%d "
                                      "tokens; --retokenize scores the generation text instead)",
                                   (long long)id, R->V);
            c->tok[i] = (int32_t)id;
        }
        c->n_tok = (int)n;
        /* tokens of another vocabulary would be scored as nonsense: they
         * should spell the generation (cut at a stop string) */
        const char *gen = asn_rec_generation(c->rec);
        char *text;
        size_t len;
        asn_err de;
        if (gen && !asn_detokenize(R->v, c->tok, n, 1, 0, &text, &len, &de)) {
            /* as gen-candidates wrote it: a character cut by the token
             * limit is U+FFFD in the generation, not a mismatch */
            json_t *as_written = asn_json_text(text, len);
            const char *w = json_string_value(as_written);
            size_t gl = strlen(gen);
            R->misspelt += strlen(w) < gl || memcmp(w, gen, gl);
            json_decref(as_written);
            free(text);
        }
    } else {
        size_t n;
        if (asn_tokenize(R->v, c->gen, strlen(c->gen), 0, 0, &c->tok, &n, e))
            return asn_err_prefix(e, "field \"generation\"");
        c->n_tok = (int)n;
    }
    /* the prompt as the generator formatted it */
    const char *sys;
    int fam;
    if (record_system(c->rec, &sys, e) || record_family(R, c->rec, &fam, e))
        return -1;
    if (asn_gen_prompt_tokens(R->v, fam, sys, c->input, &c->prompt, &c->n_prompt, e))
        return -1;
    c->own_prompt = 1;
    if (prev && prev->prompt && prev->n_prompt == c->n_prompt &&
        !memcmp(prev->prompt, c->prompt, (size_t)c->n_prompt * sizeof *c->prompt)) {
        free(c->prompt); /* share the previous one: the scorer sees one prefix */
        c->prompt = prev->prompt;
        c->own_prompt = 0;
    }
    if ((long)c->n_prompt + c->n_tok > R->n_ctx)
        return asn_err_set(e, "prompt and answer are %d tokens, more than the judge model's context of %d",
                           c->n_prompt + c->n_tok, R->n_ctx);
    return 0;
}

/* ------------------------------------------------------------ ranking */

static json_t *real_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* Plays every round of every tournament of the prompt group. */
static int play(ranker *R, cand *cs, sub *subs, int n_sub, asn_err *e)
{
    for (;;) {
        double t0 = asn_now();
        int any = 0, n_req = 0;
        for (int s = 0; s < n_sub; s++) {
            sub *S = &subs[s];
            int bye;
            S->np = asn_swiss_pair(&S->sw, S->pairs, &bye);
            any |= S->np > 0;
            for (int k = 0; k < S->np; k++) {
                int a = S->pairs[2 * k], b = S->pairs[2 * k + 1];
                S->req[k] = -1;
                S->score[k] = NAN;
                if (R->judge == JUDGE_LL) {
                    S->score[k] = asn_ll_pair_score(cs[S->member[a]].ll, cs[S->member[b]].ll, opts.tau);
                    continue;
                }
                if (S->sw.met[(size_t)a * S->n + b]) { /* a rematch: the judge said it already */
                    for (size_t g = 0; g < S->ng; g++) {
                        if (S->games[g].i == a && S->games[g].j == b)
                            S->score[k] = S->games[g].s;
                        else if (S->games[g].i == b && S->games[g].j == a)
                            S->score[k] = 1.0 - S->games[g].s;
                        else
                            continue;
                        break;
                    }
                    R->reused++;
                    continue;
                }
                S->req[k] = n_req++;
            }
        }
        R->t_bt += asn_now() - t0;
        if (!any)
            return 0;
        if (n_req) {
            t0 = asn_now();
            asn_pair_req *req = asn_xmalloc((size_t)n_req * sizeof *req);
            double *p = asn_xmalloc((size_t)n_req * sizeof *p);
            for (int s = 0; s < n_sub; s++)
                for (int k = 0; k < subs[s].np; k++)
                    if (subs[s].req[k] >= 0) {
                        const cand *a = &cs[subs[s].member[subs[s].pairs[2 * k]]];
                        const cand *b = &cs[subs[s].member[subs[s].pairs[2 * k + 1]]];
                        req[subs[s].req[k]] = (asn_pair_req){a->input, a->gen, b->gen};
                    }
            int rc = R->remote.c ? asn_remote_pairwise(&R->remote, R->v, R->model_family, R->tmpl, req, n_req, p, e)
                                 : asn_pairwise_score(R->pw, req, n_req, p, e);
            for (int s = 0; s < n_sub && !rc; s++)
                for (int k = 0; k < subs[s].np; k++)
                    if (subs[s].req[k] >= 0)
                        subs[s].score[k] = p[subs[s].req[k]];
            free(req);
            free(p);
            R->judged += n_req;
            R->t_judge += asn_now() - t0;
            if (rc)
                return -1;
        }
        t0 = asn_now();
        for (int s = 0; s < n_sub; s++) {
            sub *S = &subs[s];
            for (int k = 0; k < S->np; k++) {
                int a = S->pairs[2 * k], b = S->pairs[2 * k + 1];
                if (isnan(S->score[k])) { /* a judge whose outputs were not finite */
                    R->undecided++;
                    continue;
                }
                asn_swiss_record(&S->sw, a, b, S->score[k]);
                asn_grow((void **)&S->games, &S->cap, S->ng + 1, sizeof *S->games);
                S->games[S->ng++] = (asn_bt_game){a, b, S->score[k]};
            }
        }
        R->t_bt += asn_now() - t0;
    }
}

/* Rates the records of one prompt (a JSON array, in place); an
 * asn_group_fn. Invalid records go to asn_group_map_invalid. */
static int rank_prompt(json_t *recs, asn_group_map *gm, void *ctx, asn_err *e)
{
    ranker *R = ctx;
    size_t n = json_array_size(recs);
    cand *cs = asn_xcalloc(n + 1, sizeof *cs);
    sub *subs = asn_xcalloc(n + 1, sizeof *subs);
    int n_sub = 0, rc = 0;
    const cand *prev = NULL;
    /* fields, and the tournaments: records of one seed (or all) */
    for (size_t i = 0; i < n && !rc; i++) {
        cand *c = &cs[i];
        c->rec = json_array_get(recs, i);
        long long seed = 0;
        asn_err fe;
        int bad = !strcmp(opts.group, "seed") ? asn_rec_seed(c->rec, &seed, &fe) : 0;
        if (!bad)
            bad = read_cand(R, c, prev, &fe);
        if (bad) {
            rc = asn_group_map_invalid(gm, i, &fe, e);
            continue;
        }
        c->keep = 1;
        R->records++;
        prev = c;
        int s = 0;
        while (s < n_sub && subs[s].seed != seed)
            s++;
        if (s == n_sub)
            subs[n_sub++].seed = seed;
        c->sub = s;
        c->local = subs[s].n++;
    }
    int fields_ok = !rc;
    for (int s = 0; s < n_sub && !rc; s++) {
        sub *S = &subs[s];
        S->member = asn_xmalloc((size_t)S->n * sizeof *S->member);
        S->pairs = asn_xmalloc((size_t)S->n * sizeof *S->pairs);
        S->score = asn_xmalloc((size_t)S->n * sizeof *S->score);
        S->req = asn_xmalloc((size_t)S->n * sizeof *S->req);
        for (size_t i = 0; i < n; i++)
            if (cs[i].keep && cs[i].sub == s)
                S->member[cs[i].local] = (int)i;
        char label[64];
        if (!strcmp(opts.group, "seed"))
            snprintf(label, sizeof label, "rank-bt/seed=%lld", S->seed);
        else
            snprintf(label, sizeof label, "rank-bt/prompt");
        asn_rng_key key = asn_rng_key_make((uint64_t)opts.seed, asn_rec_prompt_key(cs[S->member[0]].rec), label);
        rc = asn_swiss_init(&S->sw, S->n, (int)opts.extra, key, e);
        R->groups++;
        R->singles += S->n == 1;
    }
    /* reference-ll: every candidate's score, once */
    if (!rc && R->judge == JUDGE_LL) {
        double t0 = asn_now();
        asn_ll_req *req = asn_xmalloc((n + 1) * sizeof *req);
        double *mean = asn_xmalloc((n + 1) * sizeof *mean);
        int nr = 0;
        for (size_t i = 0; i < n; i++)
            if (cs[i].keep)
                req[nr++] = (asn_ll_req){cs[i].prompt, cs[i].n_prompt, cs[i].tok, cs[i].n_tok};
        rc = R->remote.c ? asn_remote_ll(&R->remote, req, nr, mean, e) : asn_llscorer_score(R->ll, req, nr, mean, e);
        nr = 0;
        for (size_t i = 0; i < n && !rc; i++)
            if (cs[i].keep) {
                cs[i].ll = mean[nr++];
                if (cs[i].n_tok && !isfinite(cs[i].ll)) {
                    long line;
                    const char *f = asn_group_map_where(gm, i, &line);
                    asn_warn("%s:%ld: the judge model's log-likelihood is not finite; the answer counts as empty",
                             f, line);
                    cs[i].ll = NAN;
                }
            }
        free(req);
        free(mean);
        R->judged += nr;
        R->t_judge += asn_now() - t0;
    }
    if (!rc)
        rc = play(R, cs, subs, n_sub, e);
    if (rc && fields_ok && n_sub) { /* a judge error: say which prompt */
        long line;
        const char *f = asn_group_map_where(gm, (size_t)subs[0].member[0], &line);
        asn_err_prefix(e, "%s:%ld: the prompt of this record", f, line);
    }
    /* ratings, and the annotations */
    for (int s = 0; s < n_sub && !rc; s++) {
        sub *S = &subs[s];
        double t0 = asn_now(), *r = asn_xmalloc((size_t)S->n * sizeof *r);
        if (!strcmp(opts.method, "reference"))
            asn_bt_fit_reference(S->n, S->games, S->ng, r);
        else
            rc = asn_bt_fit(S->n, S->games, S->ng, opts.prior, r, NULL, e);
        R->t_bt += asn_now() - t0;
        for (int k = 0; k < S->n && !rc; k++) {
            cand *c = &cs[S->member[k]];
            double bt = S->sw.games[k] ? r[k] : NAN;
            json_t *q = json_object();
            json_object_set_new(q, "bt", real_or_null(bt));
            json_object_set_new(q, "swiss_points", json_real(S->sw.points[k]));
            json_object_set_new(q, "games", json_integer(S->sw.games[k]));
            json_object_set(q, "judge", R->judge_json);
            json_object_set_new(q, "bt_method", json_string(opts.method));
            if (R->judge == JUDGE_LL)
                json_object_set_new(q, "mean_logprob", real_or_null(c->ll));
            json_object_set_new(c->rec, "quality", q);
            if (isfinite(bt))
                json_object_set_new(c->rec, "bradley_terry_rating", json_real(bt));
            else
                json_object_del(c->rec, "bradley_terry_rating");
        }
        if (rc) {
            long line;
            const char *f = asn_group_map_where(gm, (size_t)S->member[0], &line);
            asn_err_prefix(e, "%s:%ld: the group of this record", f, line);
        }
        free(r);
    }
    for (size_t i = 0; i < n; i++) {
        if (cs[i].own_prompt)
            free(cs[i].prompt);
        free(cs[i].tok);
    }
    for (int s = 0; s < n_sub; s++) {
        asn_swiss_free(&subs[s].sw);
        free(subs[s].member), free(subs[s].games), free(subs[s].pairs), free(subs[s].score), free(subs[s].req);
    }
    free(cs);
    free(subs);
    return rc;
}

/* ---------------------------------------------------------------- main */

/* --judge-server: the client, and the server's model id, digest and
 * context (serve and vLLM name them in /v1/models). */
static void remote_open(ranker *R, const char **name, const char **sha, char **own)
{
    asn_err e;
    if (opts.kind && asn_server_kind_from_name(opts.kind) < 0)
        asn_usage_error("--server-kind must be asn, vllm or sglang");
    if (opts.kind && asn_server_echo_check(asn_server_kind_from_name(opts.kind), &e))
        asn_usage_error("--server-kind %s: %s", opts.kind, e.msg);
    asn_client_settings cs = {opts.server.v, opts.server.n, opts.api_key, (int)opts.inflight, opts.timeout, (int)opts.retries};
    if (!(R->remote.c = asn_client_new(&cs, &e)))
        asn_usage_error("%s", e.msg);
    asn_server_info info;
    if (asn_server_probe(R->remote.c, opts.kind, &info, &e))
        asn_fatal("%s", e.msg);
    asn_server_say(R->remote.c, &info);
    int kind = R->remote.kind = info.kind;
    if (asn_server_echo_check(kind, &e))
        asn_fatal("%s: %s", asn_client_url(R->remote.c, 0), e.msg);
    if (kind == ASN_SERVER_ASN || kind == ASN_SERVER_VLLM) {
        if (!info.model)
            asn_fatal("%s/v1/models: no model in the answer", asn_client_url(R->remote.c, 0));
        own[0] = info.model;
        own[1] = info.sha256;
        info.model = info.sha256 = NULL;
        if (info.max_model_len > 0 && info.max_model_len < R->n_ctx)
            R->n_ctx = info.max_model_len;
        R->remote.model = *name = own[0];
        if (own[1])
            *sha = own[1];
    }
    asn_server_info_free(&info);
}

static void setup(ranker *R)
{
    asn_err e;
    const asn_gguf *gg;
    const char *path = opts.server.n && opts.tokenizer ? opts.tokenizer : opts.judge_model;
    if (opts.server.n) { /* the tokenizer alone */
        R->tok_gguf = asn_gguf_open(path, &e);
        R->v = R->own_vocab = R->tok_gguf ? asn_vocab_load(R->tok_gguf, &e) : NULL;
        if (!R->v)
            asn_fatal("%s: %s", path, e.msg);
        R->V = asn_vocab_n_tokens(R->v);
        R->n_ctx = 1 << 30; /* the server says (or refuses) */
        gg = R->tok_gguf;
    } else {
        if (!(R->m = asn_model_load(opts.judge_model, &e)) || !(R->v = asn_model_vocab(R->m, &e)))
            asn_fatal("%s", e.msg);
        R->n_ctx = opts.judge_ctx > 0 ? (int)opts.judge_ctx : asn_model_cfg(R->m)->n_ctx_train;
        R->V = asn_model_cfg(R->m)->n_vocab;
        gg = asn_model_gguf(R->m);
    }
    char *tmpl_text = NULL, *gname = NULL;
    if (asn_gguf_get_str(gg, "tokenizer.chat_template", 0, &tmpl_text, &e) ||
        asn_gguf_get_str(gg, "general.name", 0, &gname, &e))
        asn_fatal("%s", e.msg);
    /* a model without a chat template is a base model: text as is */
    R->model_family = !opts.chat && !tmpl_text ? ASN_CHAT_NONE : asn_chat_for_model(tmpl_text, opts.chat, &e);
    if (R->model_family < 0)
        asn_fatal("%s: %s", path, e.msg);
    R->chat_override = opts.chat ? R->model_family : -1;
    free(tmpl_text);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *name = gname ? gname : base, *sha = NULL;
    char file_sha[65], *own[2] = {NULL, NULL};
    if (opts.server.n) {
        remote_open(R, &name, &sha, own);
        if (!sha && asn_sha256_file(path, file_sha, &e))
            asn_fatal("%s", e.msg);
        sha = sha ? sha : file_sha;
    } else if (!(sha = asn_model_sha256(R->m, &e))) {
        asn_fatal("%s", e.msg);
    }
    R->judge_json = json_pack("{s:s,s:s,s:s}", "kind", opts.judge, "model", name, "sha256", sha);
    free(gname);
    free(own[1]); /* own[0] is the server's model id, kept */
    if (opts.chat)
        json_object_set_new(R->judge_json, "chat_template", json_string(asn_chat_name(R->chat_override)));
}

/* The checks of the command line; the judge's kind into R. */
static void check_options(ranker *R)
{
    if (!opts.judge)
        asn_usage_error("--judge is required (pairwise or reference-ll)");
    if (!strcmp(opts.judge, "pairwise"))
        R->judge = JUDGE_PAIRWISE;
    else if (!strcmp(opts.judge, "reference-ll"))
        R->judge = JUDGE_LL;
    else
        asn_usage_error("--judge must be pairwise or reference-ll, not \"%s\"", opts.judge);
    if (!opts.judge_model && !(opts.server.n && opts.tokenizer))
        asn_usage_error(opts.server.n ? "--judge-server needs --tokenizer GGUF (or --judge-model GGUF) for the judge's tokens"
                                     : "--judge-model (or --judge-server) is required");
    if (!opts.server.n && opts.tokenizer)
        asn_usage_error("--tokenizer goes with --judge-server");
    if (opts.inflight < 1 || opts.retries < 0 || !(opts.timeout > 0))
        asn_usage_error("--max-inflight must be >= 1, --retries >= 0, --timeout > 0");
    if (strcmp(opts.group, "seed") && strcmp(opts.group, "prompt"))
        asn_usage_error("--group must be seed or prompt, not \"%s\"", opts.group);
    if (strcmp(opts.method, "mle") && strcmp(opts.method, "reference"))
        asn_usage_error("--bt-method must be mle or reference, not \"%s\"", opts.method);
    if (opts.extra < 0 || opts.extra > 64)
        asn_usage_error("--extra-rounds must be between 0 and 64");
    if (opts.seed < 0)
        asn_usage_error("--seed must be >= 0");
    if (!(opts.tau > 0) || !isfinite(opts.tau))
        asn_usage_error("--tau must be a positive number");
    if (!(opts.prior >= 0) || !isfinite(opts.prior))
        asn_usage_error("--bt-prior must be >= 0");
    if (opts.judge_ctx < 0 || opts.judge_ctx > (1L << 24))
        asn_usage_error("--judge-ctx must be between 1 and 16777216 (0: the model's)");
    if (opts.batch < 1)
        asn_usage_error("--batch must be >= 1");
    if (opts.template && R->judge != JUDGE_PAIRWISE)
        asn_usage_error("--judge-template is for --judge pairwise");
}

/* The pairwise judge's template: a bad one fails before the model loads. */
static void load_template(ranker *R)
{
    asn_err e;
    if (R->judge == JUDGE_PAIRWISE &&
        !(R->tmpl = opts.template ? asn_judge_tmpl_load(opts.template, &e)
                                  : asn_judge_tmpl_parse(asn_judge_default_template, "built-in template", &e)))
        asn_fatal("%s", e.msg);
}

/* The judge on the model or server setup() opened. Returns the pool of a
 * local model (NULL for a server). */
static asn_pool *make_judge(ranker *R)
{
    asn_err e;
    asn_pool *pool = R->m ? asn_pool_new((int)opts.threads) : NULL;
    if (R->judge == JUDGE_PAIRWISE) {
        int32_t ab[2];
        if (!R->m && asn_pairwise_answer_ids(R->v, ab, &e))
            asn_fatal("%s: %s", opts.tokenizer ? opts.tokenizer : opts.judge_model, e.msg);
        if (R->m && !(R->pw = asn_pairwise_new(R->m, R->model_family, R->tmpl, (int)opts.batch, R->n_ctx, pool, &e)))
            asn_fatal("%s", e.msg);
        const char *tn = opts.template ? strrchr(opts.template, '/') : NULL;
        json_object_set_new(R->judge_json, "template",
                            json_string(!opts.template ? "built-in" : tn ? tn + 1 : opts.template));
    } else {
        if (R->m && !(R->ll = asn_llscorer_new(R->m, (int)opts.batch, R->n_ctx, pool, &e)))
            asn_fatal("%s", e.msg);
        json_object_set_new(R->judge_json, "tau", json_real(opts.tau));
    }
    return pool;
}

/* The warnings, and with --verbose the counts and times. */
static void summarize(const ranker *R, long skipped)
{
    if (R->misspelt)
        asn_warn("%ld record%s: the judge model's tokenizer reads %s \"tokens\" as another text than %s "
                 "\"generation\" (made with another vocabulary?); scored from the tokens; --retokenize scores "
                 "the generation text instead",
                 R->misspelt, R->misspelt == 1 ? "" : "s", R->misspelt == 1 ? "its" : "their",
                 R->misspelt == 1 ? "its" : "their");
    if (R->undecided)
        asn_warn("%ld game%s left out: the judge's outputs were not finite", R->undecided,
                 R->undecided == 1 ? "" : "s");
    asn_warn_skipped(skipped);
    if (opts.verbose)
        fprintf(stderr,
                "%s: %ld record%s, %ld group%s (%ld of one record); judge: %ld %s%s %s in %.3f s; "
                "pairing and ratings: %.3f s (%ld rematch%s reused)\n",
                asn_progname(), R->records, ASN_PLURAL(R->records), R->groups, ASN_PLURAL(R->groups), R->singles,
                R->judged, R->judge == JUDGE_LL ? "answer" : "pair", ASN_PLURAL(R->judged),
                R->judge == JUDGE_LL ? "scored" : "judged", R->t_judge, R->t_bt, R->reused,
                R->reused == 1 ? "" : "es");
}

static void ranker_free(ranker *R, asn_pool *pool)
{
    asn_pairwise_free(R->pw);
    asn_llscorer_free(R->ll);
    asn_judge_tmpl_free(R->tmpl);
    json_decref(R->judge_json);
    asn_pool_free(pool);
    asn_model_free(R->m);
    if (R->remote.c) {
        asn_client_free(R->remote.c);
        free((char *)R->remote.model);
        asn_vocab_free(R->own_vocab);
        asn_gguf_close(R->tok_gguf);
    }
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    asn_err de;
    if (opts.chat_date && asn_chat_set_date(opts.chat_date, &de))
        asn_usage_error("--chat-date: %s", de.msg);
    if (asn_tool_shards(opts.shard, &opts.merge, nops ? argv + 1 : NULL))
        return 0;
    ranker R = {0};
    check_options(&R);
    load_template(&R);
    setup(&R);
    asn_pool *pool = make_judge(&R);
    long skipped = asn_map_groups(nops ? argv + 1 : NULL, opts.skip_bad, opts.progress, rank_prompt, &R);
    summarize(&R, skipped);
    asn_close_out(stdout, "-");
    ranker_free(&R, pool);
    return 0;
}
