# demo.mk — the whole pipeline on the shipped demo models and prompts.
#
#   make demo                 (from the top directory: builds, then runs this)
#   make -f pipelines/demo.mk OUT=out/demo [-j2]
#
# Every step is a target with real file dependencies: an interrupted run
# resumes where it stopped, and make -j runs independent steps together.
# Outputs go to $(OUT).

BIN      ?= bin
OUT      ?= out/demo
MODELS   ?= examples/models
BASE     ?= $(MODELS)/demo-base.gguf
REF      ?= $(MODELS)/demo-ref.gguf
PROMPTS  ?= examples/prompts/demo.jsonl
# prompts that only round 2 sees (held out from round 1 and the sampler)
HELDOUT  ?= examples/prompts/demo-heldout.jsonl
GRID     ?= configs/heuristics/demo-grid.yaml
SEEDS    ?= 0-3
SEED_N   ?= 4
MAX_NEW  ?= 48
MIN_NEW  ?= 8
CORPUS   ?= build/corpus
THREADS  ?= 0

# Round 1 may be shared by several runs (R1=out/demo/round1 OUT=out/demo-s1
# SAMPLER_SEED=1: round 2 and the sampler again, with another seed).
R1       ?= $(OUT)/round1
SAMPLER_ARCH   ?= EquivariantLocalTransform
SAMPLER_CONFIG ?= configs/samplers/equivariant.yaml
SAMPLER_SEED   ?= 42
SAMPLER_OPTS   ?= --num-epochs 8 --token-batch-size 8 --gradient-accumulation-steps 4 \
                  --num-warmup-steps 10 --learning-rate 0.02 --loss-gamma 1
# The sampler imitates the best TRAIN_TOP candidates of each (prompt, seed)
# group of round 1 (filter-topk's ranking), not every kept one: imitating
# the mixture of all kept heuristics learns their average, whose tail is
# heavier than any of theirs.
TRAIN_TOP      ?= 1
# Round 2's sampler: by default the imitation sampler fine-tuned on-policy
# (DEMO_RL=1: the rl target below, RL_ROUNDS rounds of rollouts on the
# training prompts rewarded by the labelling chain's final score); with
# DEMO_RL=0 the imitation sampler, or with RL_STEPS > 0 that one fine-tuned
# offline on the candidates it imitated (train-sampler --rl, reward =
# filter-topk's final score), RL_STEPS optimizer steps.
DEMO_RL  ?= 1
RL_OUT   ?= $(OUT)/rl
RL_STEPS ?= 0
# or a sampler made elsewhere used as is
RL_SAMPLER ?=
RL_OPTS  ?= --token-batch-size 8 --gradient-accumulation-steps 4 --learning-rate 0.002 --rl-beta 0.5

.PHONY: all report clean sweep
.DELETE_ON_ERROR:
all: $(OUT)/report/report.html $(OUT)/analysis/summary.txt $(OUT)/heldout-rank.txt $(R1)/filtered.jsonl

$(OUT)/.dir:
	@mkdir -p $(OUT) $(R1) && touch $@

# Two rounds. Round 1 ($(OUT)/round1/) labels the candidates of the
# heuristics alone; its best candidates train the learned sampler. Round 2
# ($(OUT)/) generates and labels again with the learned sampler as one more
# heuristic, so the report shows where it lands among the heuristics it
# learned from. The labelling chain is the same for both (score_chain).

# 1. heuristics: the demo grid, no model-family defaults (base models)
$(R1)/heuristics.yaml: $(GRID) | $(OUT)/.dir
	$(BIN)/gen-heuristics --grid $(GRID) --family none -o $@

# n-gram index of the demo corpus (shared by both rounds)
$(OUT)/ngram.idx: $(CORPUS)/train.txt | $(OUT)/.dir
	$(BIN)/score-ngram build -o $@ $<

# score_chain DIR [PROMPTS]: DIR/heuristics.yaml -> candidates -> verified ->
# ranked -> diverse -> ngram -> scored -> filtered + pairs + scored-all (on
# $(PROMPTS) unless given)
define score_chain
# 2. candidates: every prompt x heuristic x seed (resumable)
$(1)/candidates.jsonl: $(BASE) $(1)/heuristics.yaml $(or $(2),$(PROMPTS))
	$(BIN)/gen-candidates -m $(BASE) -H $(1)/heuristics.yaml --seeds $(SEEDS) -n $(MAX_NEW) \
	  --min-new-tokens $(MIN_NEW) -t $(THREADS) -o $$@ --resume $(or $(2),$(PROMPTS))
# 3. integrity, with a few replays
$(1)/verified.jsonl: $(1)/candidates.jsonl
	$(BIN)/verify --expected-seeds $(SEED_N) -H $(1)/heuristics.yaml -m $(BASE) --replay 8 \
	  --report $(1)/verify-report.json $$< > $$@
# 4. quality: Swiss tournament judged by the reference model's likelihood
$(1)/ranked.jsonl: $(1)/verified.jsonl $(REF)
	$(BIN)/rank-bt --judge reference-ll --judge-model $(REF) -t $(THREADS) $$< > $$@
# 5. diversity across seeds, embeddings from the reference model
$(1)/diverse.jsonl: $(1)/ranked.jsonl $(REF)
	$(BIN)/score-diversity --embed-model $(REF) -t $(THREADS) $$< > $$@
# 6. n-gram coverage of the demo corpus
$(1)/ngram.jsonl: $(1)/diverse.jsonl $(OUT)/ngram.idx
	$(BIN)/score-ngram --index $(OUT)/ngram.idx $$< > $$@
# 7. verifiable rewards
$(1)/scored.jsonl: $(1)/ngram.jsonl
	$(BIN)/score-verifiable -q $$< > $$@
# 8. the best of each group, and preference pairs
$(1)/filtered.jsonl: $(1)/scored.jsonl
	$(BIN)/filter-topk --top-k 2 $$< > $$@
$(1)/pairs.jsonl: $(1)/scored.jsonl
	$(BIN)/filter-topk --pairs $$< > $$@
# every candidate with its final score (the held-out ranking, the sweep's finalists)
$(1)/scored-all.jsonl: $(1)/scored.jsonl
	$(BIN)/filter-topk --top-k 0 $$< > $$@.tmp && mv $$@.tmp $$@
endef
$(eval $(call score_chain,$(R1)))
$(eval $(call score_chain,$(OUT),$(OUT)/round2-prompts.jsonl))
$(OUT)/round2-prompts.jsonl: $(PROMPTS) $(HELDOUT) | $(OUT)/.dir
	cat $(PROMPTS) $(HELDOUT) > $@

# 9. the learned sampler, trained on round 1's best candidates (TRAIN_TOP of
# each group) of the training prompts: every third prompt of $(PROMPTS) is held
# out, and with $(HELDOUT) (seen by round 2 only) makes heldout.jsonl; round 2
# is ranked on those too (heldout-rank.txt: over every candidate, then the
# kept ones)
$(OUT)/heldout.jsonl: $(PROMPTS) $(HELDOUT) | $(OUT)/.dir
	{ awk 'NR % 3 == 0' $(PROMPTS); cat $(HELDOUT); } > $@
$(OUT)/train-top.jsonl: $(R1)/scored.jsonl | $(OUT)/.dir
	$(BIN)/filter-topk --top-k $(TRAIN_TOP) $< > $@.tmp && mv $@.tmp $@
$(OUT)/train-kept.jsonl: $(OUT)/train-top.jsonl $(OUT)/heldout.jsonl
	sed -n 's/^{"id": *\("[^"]*"\).*/"prompt_id":\1/p' $(OUT)/heldout.jsonl > $@.ids
	grep -v -F -f $@.ids $(OUT)/train-top.jsonl > $@; rm -f $@.ids
$(OUT)/sampler-imitation.gguf: $(OUT)/train-kept.jsonl $(BASE) $(SAMPLER_CONFIG)
	$(BIN)/train-sampler -m $(BASE) -a $(SAMPLER_ARCH) -c $(SAMPLER_CONFIG) $(SAMPLER_OPTS) \
	  --seed $(SAMPLER_SEED) -t $(THREADS) -q --save-steps 0 -o $@ $<
$(OUT)/sampler.gguf: $(OUT)/sampler-imitation.gguf $(OUT)/train-kept.jsonl $(RL_SAMPLER) \
                     $(if $(RL_SAMPLER),,$(if $(filter 1,$(DEMO_RL)),$(RL_OUT)/sampler.gguf))
	if [ -n "$(RL_SAMPLER)" ]; then cp $(RL_SAMPLER) $@; \
	elif [ "$(DEMO_RL)" = 1 ]; then cp $(RL_OUT)/sampler.gguf $@; \
	elif [ $(RL_STEPS) -gt 0 ]; then \
	  $(BIN)/train-sampler -m $(BASE) --init $< --rl --reward score.final --max-steps $(RL_STEPS) $(RL_OPTS) \
	    --seed $(SAMPLER_SEED) -t $(THREADS) -q --save-steps 0 -o $@ $(OUT)/train-kept.jsonl; \
	else cp $< $@; fi
# ranked by the mean final score of every candidate (each heuristic on the
# same prompts and seeds), then of the kept ones only (the report's measure)
$(OUT)/heldout-rank.txt: $(OUT)/scored-all.jsonl $(OUT)/filtered.jsonl $(OUT)/heldout.jsonl
	{ echo "every candidate of the held-out prompts:"; \
	  /usr/bin/python3 scripts/heldout-rank.py $(OUT)/scored-all.jsonl $(OUT)/heldout.jsonl && echo && \
	  echo "the kept candidates (filter-topk --top-k 2) of the held-out prompts:" && \
	  /usr/bin/python3 scripts/heldout-rank.py $(OUT)/filtered.jsonl $(OUT)/heldout.jsonl; } > $@.tmp && mv $@.tmp $@
	@cat $@

# 10. round 2's heuristics: the grid plus the learned sampler
$(OUT)/learned.yaml: | $(OUT)/.dir
	printf 'sampling_pipelines:\n- name: learned $(SAMPLER_ARCH)\n  weight: 1\n  processors:\n  - name: learned\n    params:\n      path: $(OUT)/sampler.gguf\n' > $@
$(OUT)/heuristics.yaml: $(GRID) $(OUT)/learned.yaml $(OUT)/sampler.gguf
	$(BIN)/gen-heuristics --grid $(GRID) --family none --append $(OUT)/learned.yaml -o $@

# 11. the index: every stage of round 2 upserted into one database
$(OUT)/index.db: $(OUT)/scored.jsonl $(OUT)/filtered.jsonl $(OUT)/pairs.jsonl
	rm -f $@ $@-wal $@-shm
	$(BIN)/index --db $@ $(OUT)/scored.jsonl $(OUT)/filtered.jsonl $(OUT)/pairs.jsonl

# 12. the report, with the learned sampler's analysis (13) and its plots
$(OUT)/report/report.html: $(OUT)/index.db $(OUT)/analysis/kl.jsonl $(OUT)/analysis/summary.txt
	$(BIN)/report --db $< -o $(OUT)/report --analysis $(OUT)/analysis/kl.jsonl --plots $(OUT)/analysis

# 13. the learned sampler against its targets, step by step: over the
# candidates it was trained on (summary.txt: KL from each step's target to
# the raw and to the learned distribution, truncated mass), and one fresh
# generation with plots of its first steps (example.txt, record-1-step-*.svg);
# the same over the candidates as JSON lines for the report (kl.jsonl)
$(OUT)/analysis/kl.jsonl: $(OUT)/sampler.gguf $(OUT)/train-kept.jsonl
	@mkdir -p $(OUT)/analysis
	$(BIN)/analyze-sampler -m $(BASE) -S $(OUT)/sampler.gguf --candidates $(OUT)/train-kept.jsonl \
	  -t $(THREADS) --json > $@.tmp && mv $@.tmp $@
$(OUT)/analysis/summary.txt: $(OUT)/sampler.gguf $(OUT)/train-kept.jsonl
	@mkdir -p $(OUT)/analysis
	$(BIN)/analyze-sampler -m $(BASE) -S $(OUT)/sampler.gguf --candidates $(OUT)/train-kept.jsonl \
	  -t $(THREADS) > $@
	$(BIN)/analyze-sampler -m $(BASE) -S $(OUT)/sampler.gguf -H $(R1)/heuristics.yaml \
	  --heuristic "min_p 0.05 temp 0.8" -n 16 --plot-dir $(OUT)/analysis --plot-steps 4 \
	  -t $(THREADS) "And it came to pass, that" > $(OUT)/analysis/example.txt

$(CORPUS)/train.txt:
	sh scripts/build-corpus.sh $(CORPUS)

clean:
	rm -rf $(OUT)

# The training sweep (pipelines/sweep.mk) on the training candidates of the
# learned sampler: `make -f pipelines/demo.mk sweep` (not part of all):
# 2 architectures x 2 hidden sizes x 2 learning rates: 8 short runs.
SWEEP_MODEL  ?= $(BASE)
SWEEP_DATA   ?= $(OUT)/train-kept.jsonl
SWEEP_OUT    ?= $(OUT)/sweep
SWEEP_HIDDEN ?= 4 8
SWEEP_LRS    ?= 0.02 0.005
SWEEP_OPTS   ?= --num-epochs 2 --token-batch-size 8 --gradient-accumulation-steps 4 \
                --num-warmup-steps 4 --loss-gamma 1 --log-every 1
include pipelines/sweep.mk

# Then by the pipeline's own score (`make -f pipelines/demo.mk sweep-final`,
# after the sweep): the SWEEP_FINALISTS runs of smallest held-out KL
# (finalists.txt) each become a `learned CONFIG` heuristic of one more round
# of the labelling chain on the grid, on the training prompts only (the
# demo's held-out prompts stay out of the choice), in $(SWEEP_OUT)/final/;
# final.tsv: config, heldout_kl, the mean final score of its candidates,
# how many, its rank among the round's heuristics by that mean, their
# number, chosen (1 on the highest mean); final-best.gguf / .txt.
SWEEP_FINALISTS ?= 3
SF := $(SWEEP_OUT)/final
.PHONY: sweep-final
sweep-final: $(SF)/final.tsv $(SF)/final-best.gguf
$(SF)/finalists.txt: $(SWEEP_OUT)/sweep.tsv
	@mkdir -p $(@D)
	awk -F '\t' 'NR > 1 && $$6 != "null" { print $$6 "\t" NR "\t" $$1 }' $< | sort -g -k1,1 -k2,2n \
	  | head -n $(SWEEP_FINALISTS) | cut -f3 > $@.tmp && mv $@.tmp $@
$(SF)/learned.yaml: $(SF)/finalists.txt
	{ echo 'sampling_pipelines:'; while read c; do \
	    printf -- '- name: learned %s\n  weight: 1\n  processors:\n  - name: learned\n    params:\n      path: %s\n' \
	      "$$c" "$(SWEEP_OUT)/runs/$$c/sampler.gguf"; done < $<; } > $@.tmp && mv $@.tmp $@
$(SF)/heuristics.yaml: $(GRID) $(SF)/learned.yaml
	$(BIN)/gen-heuristics --grid $(GRID) --family none --append $(SF)/learned.yaml -o $@
$(eval $(call score_chain,$(SF),$(OUT)/train-prompts.jsonl))
$(SF)/final.tsv: $(SF)/scored-all.jsonl $(SWEEP_OUT)/sweep.tsv $(SF)/finalists.txt
	/usr/bin/python3 scripts/sweep-final.py $^ > $@.tmp && mv $@.tmp $@
	@cat $@
$(SF)/final-best.txt: $(SF)/final.tsv
	awk -F '\t' 'NR > 1 && $$7 == 1 { print $$1 }' $< > $@.tmp && mv $@.tmp $@
$(SF)/final-best.gguf: $(SF)/final-best.txt
	cp $(SWEEP_OUT)/runs/$$(cat $<)/sampler.gguf $@.tmp && mv $@.tmp $@

# On-policy reward-driven fine-tuning (pipelines/rl.mk) of the imitation
# sampler on the training prompts, rewarded by the demo's labelling chain:
# $(OUT)/rl/, round 2's sampler unless DEMO_RL=0 (`make -f pipelines/demo.mk
# rl` makes it alone).
RL_MODEL   ?= $(BASE)
RL_INIT    ?= $(OUT)/sampler-imitation.gguf
RL_PROMPTS ?= $(OUT)/train-prompts.jsonl
RL_JUDGE   ?= $(REF)
RL_GEN_OPTS ?= -n $(MAX_NEW) --min-new-tokens $(MIN_NEW)
$(OUT)/train-prompts.jsonl: $(PROMPTS) | $(OUT)/.dir
	awk 'NR % 3 != 0' $(PROMPTS) > $@
include pipelines/rl.mk
