# full.mk — the whole pipeline on your own models and prompts, sharded.
#
#   make -f pipelines/full.mk MODEL=m.gguf PROMPTS=p.jsonl HEURISTICS=h.yaml OUT=out/run
#   make -f pipelines/full.mk MODEL=m.gguf JUDGE_MODEL=big.gguf PROMPTS=p.jsonl \
#        HEURISTICS=h.yaml SEEDS=0-7 SHARDS=8 THREADS=2 OUT=out/run -j8
#   make -f pipelines/full.mk help        (the variables and targets)
#
# The chain is the one of pipelines/demo.mk: gen-candidates -> verify ->
# rank-bt -> score-diversity -> score-ngram (only with NGRAM_INDEX or
# NGRAM_CORPUS) -> score-verifiable -> filter-topk -> index -> report.
#
# Sharding. The prompts are split into SHARDS shards with gen-candidates
# --shard K/N (a prompt's shard is a function of its id alone), and every
# step up to score-verifiable runs on each shard's file on its own, in
# $(OUT)/shards/K-of-N/. Then the shards are merged: each stage's JSONL into
# $(OUT)/<stage>.jsonl, byte for byte the file an unsharded run writes, and
# the shard indexes into $(OUT)/index.db. filter-topk, the index of its
# output and the report run once, on the merged data. With -jN, make runs
# the shards side by side; pipelines/full-parallel.sh (GNU parallel over
# ssh) and pipelines/slurm/ (a Slurm array job) run them on several hosts.
#
# Why per-shard results equal the unsharded ones, step by step:
#   gen-candidates    a candidate's tokens depend only on the model, its
#                     prompt, heuristic, seed and the settings, not on
#                     --shard, --batch or --threads (gen-candidates --help).
#                     Each shard's file holds its prompts in input order.
#   verify            decides prompt by prompt (seeds, heuristics, records);
#                     "one model" is checked against -m MODEL, which is given,
#                     so not against a shard's first record. --replay picks
#                     REPLAY random candidates of each shard: the replays
#                     differ, the records written do not.
#   rank-bt           one tournament per (prompt, seed) group, its round-1
#                     pairing keyed by --seed, the prompt and the group; the
#                     judge scores a prompt's records together, and the
#                     output does not depend on --batch or --threads.
#   score-diversity   per (prompt, heuristic) group; a prompt's texts are
#                     embedded in one batch of their own.
#   score-ngram       record by record, against one shared index.
#   score-verifiable  record by record.
#   filter-topk       NOT per shard: it normalizes quality and diversity by
#                     the mean and deviation over its whole input, so it runs
#                     on the merged scored.jsonl.
#   index             an upsert keyed by id: merging the shard databases
#                     (index --merge) gives the rows of one database built
#                     from the merged file (in another rowid order, which the
#                     report does not use: its queries all have an ORDER BY).
# The merge is not a plain cat: an unsharded run writes the prompts in
# input order, while a shard holds the prompts whose id hashes to it.
# `gen-candidates --merge` reads the prompts as the generation did (same
# options) and interleaves the shards' prompt groups in that order, lines
# unchanged; it fails rather than write a different order.
#
# Every step is a target with real file dependencies, written to a temporary
# name and renamed when complete (a tool killed while writing stdout leaves
# its partial output in $@.tmp, never in $@; gen-candidates -o writes $@.part
# and renames it itself): an interrupted run resumes where it stopped
# (generation resumes inside a shard, from its .part file). Make does not
# see changed variables: after changing MAX_NEW_TOKENS, SEEDS, SHARDS (a new
# SHARDS uses new shard folders), ... use a new OUT or `make ... clean`.

# this file, for `help` (before anything is included)
SELF    := $(lastword $(MAKEFILE_LIST))
BIN     ?= bin
OUT     ?= out/full

# ---- models -----------------------------------------------------------------
# MODEL generates; JUDGE_MODEL rates (rank-bt; with JUDGE=reference-ll its
# mean log-probability of each answer, so a larger or instruction-tuned model
# than MODEL is better); EMBED_MODEL embeds the texts for score-diversity.
MODEL       ?=
JUDGE_MODEL ?= $(MODEL)
EMBED_MODEL ?= $(JUDGE_MODEL)
JUDGE       ?= reference-ll

# ---- inputs -----------------------------------------------------------------
# PROMPTS: prompt JSONL files (one or more, in this order), or SOURCES: a
# dataset-sources YAML of the reference project. HEURISTICS: a heuristics
# YAML; without it, one is expanded from GRID for the model family FAMILY
# (llama, gemma, qwen or none) into $(OUT)/heuristics.yaml.
PROMPTS    ?=
SOURCES    ?=
HEURISTICS ?=
GRID       ?= configs/heuristics/grid.yaml
FAMILY     ?=
SEEDS      ?= 0-3

# ---- scale-out --------------------------------------------------------------
# SHARDS: how many shards (use as many as jobs or hosts, or more). THREADS:
# threads per tool process (0: all cores); with -jN give each job its share,
# e.g. THREADS=$((cores / N)). Processes on one host share the memory-mapped
# model weights; each adds its KV cache.
SHARDS  ?= 1
THREADS ?= 0

# ---- generation (gen-candidates) --------------------------------------------
MAX_NEW_TOKENS ?= 250
MIN_NEW_TOKENS ?= 50
BATCH          ?= 64
CTX            ?= 0
# chat template name (chatml, llama3, ..., none); empty: the model's own
CHAT_TEMPLATE  ?=
# default system message; empty: gen-candidates' default. NO_SYSTEM=1: none.
SYSTEM         ?=
NO_SYSTEM      ?=
# other gen-candidates options (--stop TEXT, ...); not --shard, -o or
# --resume, which are set here, nor --only, which would leave out heuristics
# that verify -H expects
GEN_FLAGS      ?=

# ---- labelling --------------------------------------------------------------
# verify: EXPECTED_SEEDS distinct seeds per prompt (default: counted from
# SEEDS; -1: any); REPLAY candidates of each shard regenerated and compared.
REPLAY          ?= 4
VERIFY_FLAGS    ?=
JUDGE_BATCH     ?= 16
RANK_FLAGS      ?=
DIVERSITY_FLAGS ?=
# n-gram coverage: an index made by `score-ngram build` (NGRAM_INDEX), or
# text files to build one from (NGRAM_CORPUS, into $(OUT)/ngram.idx). With
# neither, score-ngram is left out.
NGRAM_INDEX       ?=
NGRAM_CORPUS      ?=
NGRAM_BUILD_FLAGS ?=
NGRAM_FLAGS       ?=
VERIFIABLE_FLAGS  ?= -q
# filter-topk: records kept per group; FILTER_FLAGS go to both the top-k and
# the --pairs runs (--group, --sort-key, --weights, ...)
TOP_K        ?= 5
FILTER_FLAGS ?=
REPORT_FLAGS ?=

# Which stages' shard files are merged into $(OUT)/<stage>.jsonl (scored is
# always merged: filter-topk reads it). Leave out stages to save disk.
MERGE_STAGES ?= candidates verified ranked diverse ngram scored

# ---- derived ----------------------------------------------------------------
SHELL := /bin/sh
.DELETE_ON_ERROR:
.SUFFIXES:

NO_CHECK_GOALS := clean help
ifeq ($(filter-out $(NO_CHECK_GOALS),$(or $(MAKECMDGOALS),all)),)
else
  ifeq ($(MODEL),)
    $(error MODEL is required: a GGUF file (see make -f pipelines/full.mk help))
  endif
  ifeq ($(PROMPTS)$(SOURCES),)
    $(error PROMPTS (prompt JSONL files) or SOURCES (a dataset-sources YAML) is required)
  endif
  ifneq ($(PROMPTS),)
    ifneq ($(SOURCES),)
      $(error give PROMPTS or SOURCES, not both)
    endif
  endif
  ifeq ($(HEURISTICS)$(FAMILY),)
    $(error HEURISTICS (a heuristics YAML) is required, or FAMILY to expand GRID)
  endif
endif
ifeq ($(shell expr 'x$(SHARDS)' : 'x[1-9][0-9]*$$'),0)
  $(error SHARDS must be a positive integer, not "$(SHARDS)")
endif

ifeq ($(HEURISTICS),)
  HEURISTICS := $(OUT)/heuristics.yaml
  GEN_HEURISTICS := 1
endif
ifeq ($(origin EXPECTED_SEEDS),undefined)
  EXPECTED_SEEDS := $(shell echo '$(SEEDS)' | awk -F, '{ for (i = 1; i <= NF; i++) \
    if (split($$i, r, "-") == 2) { for (s = r[1] + 0; s <= r[2] + 0; s++) u[s] = 1 } else u[$$i + 0] = 1; \
    for (k in u) c++; print c + 0 }')
endif

NGRAM_IDX := $(or $(NGRAM_INDEX),$(if $(NGRAM_CORPUS),$(OUT)/ngram.idx))
# the stage score-verifiable reads
PRE_SCORED := $(if $(NGRAM_IDX),ngram,diverse)
MERGED := $(addprefix $(OUT)/,$(addsuffix .jsonl,$(sort scored \
            $(filter candidates verified ranked diverse scored $(if $(NGRAM_IDX),ngram),$(MERGE_STAGES)))))

GEN_INPUT   := $(if $(SOURCES),--sources $(SOURCES),$(PROMPTS))
q = '$(subst ','\'',$(1))'
GEN_OPTS := $(strip -m $(MODEL) -H $(HEURISTICS) --seeds $(SEEDS) -n $(MAX_NEW_TOKENS) \
  --min-new-tokens $(MIN_NEW_TOKENS) -b $(BATCH) -c $(CTX) -t $(THREADS) \
  $(if $(CHAT_TEMPLATE),--chat-template $(CHAT_TEMPLATE)) \
  $(if $(NO_SYSTEM),--no-system,$(if $(SYSTEM),--system $(call q,$(SYSTEM)))) $(GEN_FLAGS))

KS         := $(shell seq 1 $(SHARDS))
SHARD_DIRS := $(foreach k,$(KS),$(OUT)/shards/$(k)-of-$(SHARDS))
shard_files = $(addsuffix /$(1),$(SHARD_DIRS))
# the folder of shard % (static pattern rules below: % is the shard number)
S := $(OUT)/shards/%-of-$(SHARDS)
SHARD_GOALS := $(addprefix shard-,$(KS))

.PHONY: all prepare shards $(SHARD_GOALS) shard-inputs samplers clean help

# the default goal; its prerequisites are listed at the end of this file,
# after the learned-sampler hook
all:

# ---- shared inputs ----------------------------------------------------------
# What every shard reads and nothing else builds. Run `prepare` once before
# starting shards on several hosts (full-parallel.sh and the Slurm scripts
# do), so that they do not all build it. Temporary names are unique per
# process, so even concurrent builds leave one complete file.
prepare: $(HEURISTICS) $(NGRAM_IDX)

ifdef GEN_HEURISTICS
$(HEURISTICS): $(GRID)
	@mkdir -p $(@D)
	$(BIN)/gen-heuristics --grid $(GRID) --family $(FAMILY) -o $@.$$$$.tmp && mv $@.$$$$.tmp $@
endif

ifeq ($(NGRAM_INDEX),)
$(OUT)/ngram.idx: $(NGRAM_CORPUS)
	@mkdir -p $(@D)
	$(BIN)/score-ngram build $(NGRAM_BUILD_FLAGS) -o $@.$$$$.tmp $(NGRAM_CORPUS) && mv $@.$$$$.tmp $@
endif

# What a shard reads, after `prepare`, one a line: the programs, this file,
# the models, the prompts, the heuristics and the n-gram index; then, after a
# line "--", the variables that point a shard at the prepared files instead
# of what they are made from. full-parallel.sh with TRANSFER=1 copies the
# files to each host and gives the variables to its make.
SHARD_PROGRAMS := gen-candidates verify rank-bt score-diversity score-verifiable index \
  $(if $(NGRAM_IDX),score-ngram)
shard-inputs:
	@printf '%s\n' $(sort $(addprefix $(BIN)/,$(SHARD_PROGRAMS)) $(SELF) $(MODEL) $(JUDGE_MODEL) \
	  $(EMBED_MODEL) $(PROMPTS) $(HEURISTICS) $(NGRAM_IDX)) -- HEURISTICS=$(HEURISTICS) \
	  $(if $(NGRAM_IDX),NGRAM_INDEX=$(NGRAM_IDX) NGRAM_CORPUS=)

# ---- per shard --------------------------------------------------------------
# shard-K: every per-shard step of shard K of SHARDS (what a host or an array
# task runs); shards: all of them.
shards: $(SHARD_GOALS)
$(SHARD_GOALS): shard-%: $(S)/scored.jsonl $(S)/index.db

# 1. candidates of the shard's prompts: every prompt x heuristic x seed
#    (resumable: an interrupted run keeps the complete prompts of .part)
$(call shard_files,candidates.jsonl): $(S)/candidates.jsonl: $(MODEL) $(HEURISTICS) $(PROMPTS) $(SOURCES)
	@mkdir -p $(@D)
	$(BIN)/gen-candidates $(GEN_OPTS) --shard $*/$(SHARDS) -o $@ --resume $(GEN_INPUT)

# 2. integrity, with a few replays
$(call shard_files,verified.jsonl): $(S)/verified.jsonl: $(S)/candidates.jsonl $(MODEL) $(HEURISTICS)
	$(BIN)/verify --expected-seeds $(EXPECTED_SEEDS) -H $(HEURISTICS) -m $(MODEL) --replay $(REPLAY) \
	  -t $(THREADS) --report $(@D)/verify-report.json $(VERIFY_FLAGS) $< > $@.tmp
	mv $@.tmp $@

# 3. quality: Swiss tournaments judged by JUDGE_MODEL, Bradley-Terry ratings
$(call shard_files,ranked.jsonl): $(S)/ranked.jsonl: $(S)/verified.jsonl $(JUDGE_MODEL)
	$(BIN)/rank-bt --judge $(JUDGE) --judge-model $(JUDGE_MODEL) -b $(JUDGE_BATCH) -t $(THREADS) \
	  $(RANK_FLAGS) $< > $@.tmp
	mv $@.tmp $@

# 4. diversity across seeds
$(call shard_files,diverse.jsonl): $(S)/diverse.jsonl: $(S)/ranked.jsonl $(EMBED_MODEL)
	$(BIN)/score-diversity --embed-model $(EMBED_MODEL) -t $(THREADS) $(DIVERSITY_FLAGS) $< > $@.tmp
	mv $@.tmp $@

# 5. n-gram coverage (only with NGRAM_INDEX or NGRAM_CORPUS)
ifneq ($(NGRAM_IDX),)
$(call shard_files,ngram.jsonl): $(S)/ngram.jsonl: $(S)/diverse.jsonl $(NGRAM_IDX)
	$(BIN)/score-ngram --index $(NGRAM_IDX) $(NGRAM_FLAGS) $< > $@.tmp
	mv $@.tmp $@
endif

# 6. verifiable rewards (GSM8K, MATH, IFEval records; null for the others)
$(call shard_files,scored.jsonl): $(S)/scored.jsonl: $(S)/$(PRE_SCORED).jsonl
	$(BIN)/score-verifiable $(VERIFIABLE_FLAGS) $< > $@.tmp
	mv $@.tmp $@

# 7. the shard's index of its scored records
$(call shard_files,index.db): $(S)/index.db: $(S)/scored.jsonl
	rm -f $@.tmp $@.tmp-wal $@.tmp-shm
	$(BIN)/index --db $@.tmp $<
	mv $@.tmp $@

# ---- merge ------------------------------------------------------------------
# 8. each stage's shard files, in input order: byte for byte the unsharded file
$(MERGED): $(OUT)/%.jsonl: $(call shard_files,%.jsonl)
	$(BIN)/gen-candidates $(GEN_OPTS) $(addprefix --merge ,$^) $(GEN_INPUT) > $@.tmp
	mv $@.tmp $@

# 9. the best of each group, and preference pairs, over the whole dataset
$(OUT)/filtered.jsonl: $(OUT)/scored.jsonl
	$(BIN)/filter-topk --top-k $(TOP_K) $(FILTER_FLAGS) $< > $@.tmp
	mv $@.tmp $@
$(OUT)/pairs.jsonl: $(OUT)/scored.jsonl
	$(BIN)/filter-topk --pairs $(FILTER_FLAGS) $< > $@.tmp
	mv $@.tmp $@

# 10. the index: the shard indexes merged, then the top-k and pairs upserted
$(OUT)/index.db: $(call shard_files,index.db) $(OUT)/filtered.jsonl $(OUT)/pairs.jsonl
	rm -f $@.tmp $@.tmp-wal $@.tmp-shm
	$(BIN)/index --db $@.tmp --merge $(call shard_files,index.db)
	$(BIN)/index --db $@.tmp $(OUT)/filtered.jsonl $(OUT)/pairs.jsonl
	mv $@.tmp $@

# 11. the report
$(OUT)/report/report.html: $(OUT)/index.db
	$(BIN)/report --db $< -o $(OUT)/report $(REPORT_FLAGS)

# ---- learned samplers -------------------------------------------------------
# HOOK: the learned-sampler steps (train-sampler, analyze-sampler) go here.
# They read the merged dataset (SAMPLER_INPUTS); list their outputs in
# SAMPLER_TARGETS, which `all` and `samplers` build, and add their rules
# below this comment.
SAMPLER_INPUTS  := $(OUT)/scored.jsonl $(OUT)/filtered.jsonl $(OUT)/pairs.jsonl $(OUT)/index.db
SAMPLER_TARGETS ?=
# SWEEP=1: the training sweep of pipelines/sweep.mk on the merged top-k
# candidates (SWEEP_ARCHS x SWEEP_HIDDEN x SWEEP_LRS x SWEEP_SEEDS, chosen by
# held-out KL) into $(OUT)/sweep/: sweep.tsv, best.gguf, runs/*/
ifneq ($(SWEEP),)
SWEEP_MODEL ?= $(MODEL)
SWEEP_DATA  ?= $(OUT)/filtered.jsonl
SWEEP_OUT   ?= $(OUT)/sweep
include $(dir $(SELF))sweep.mk
SAMPLER_TARGETS += $(SWEEP_OUT)/sweep.tsv $(SWEEP_OUT)/best.gguf
endif
samplers: $(SAMPLER_TARGETS)

# everything: the report, the merged dataset, the preference pairs and the
# learned-sampler outputs
all: $(OUT)/report/report.html $(OUT)/filtered.jsonl $(OUT)/pairs.jsonl $(MERGED) $(SAMPLER_TARGETS)

# ---- housekeeping -----------------------------------------------------------
clean:
	rm -rf $(OUT)

help:
	@sed -n '1,6p' $(SELF) | sed 's/^# \{0,1\}//'
	@echo
	@echo 'Targets: all (default), prepare, shard-K (K = 1..SHARDS), shards, shard-inputs, samplers, clean, help'
	@echo 'SWEEP=1 adds the training sweep (make -f pipelines/sweep.mk sweep-help: its variables)'
	@echo
	@echo 'Variables (now):'
	@echo '  MODEL=$(MODEL) JUDGE_MODEL=$(JUDGE_MODEL) EMBED_MODEL=$(EMBED_MODEL) JUDGE=$(JUDGE)'
	@echo '  PROMPTS=$(PROMPTS) SOURCES=$(SOURCES) HEURISTICS=$(HEURISTICS) GRID=$(GRID) FAMILY=$(FAMILY)'
	@echo '  SEEDS=$(SEEDS) EXPECTED_SEEDS=$(EXPECTED_SEEDS) SHARDS=$(SHARDS) THREADS=$(THREADS) OUT=$(OUT)'
	@echo '  MAX_NEW_TOKENS=$(MAX_NEW_TOKENS) MIN_NEW_TOKENS=$(MIN_NEW_TOKENS) BATCH=$(BATCH) CTX=$(CTX)'
	@echo '  CHAT_TEMPLATE=$(CHAT_TEMPLATE) NO_SYSTEM=$(NO_SYSTEM) REPLAY=$(REPLAY) JUDGE_BATCH=$(JUDGE_BATCH) TOP_K=$(TOP_K)'
	@echo '  NGRAM_INDEX=$(NGRAM_INDEX) NGRAM_CORPUS=$(NGRAM_CORPUS) MERGE_STAGES=$(MERGE_STAGES)'
	@echo '  GEN_FLAGS VERIFY_FLAGS RANK_FLAGS DIVERSITY_FLAGS NGRAM_FLAGS VERIFIABLE_FLAGS FILTER_FLAGS REPORT_FLAGS:'
	@echo '  extra options of each tool (see docs/tools.md)'
