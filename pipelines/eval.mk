# eval.mk — answer accuracy of a model under each heuristic and learned
# sampler on a verifiable test set (GSM8K, MATH or IFEval), with Wilson 95%
# intervals: the research pipeline's benchmarks/gsm8k_*.py for any sampler.
#
#   make -f pipelines/eval.mk MODEL=m.gguf DATASET=gsm8k TEST=test.jsonl \
#        TRAIN=train.jsonl HEURISTICS=h.yaml [SAMPLERS="a.gguf b.gguf"] OUT=out/eval
#   make -f pipelines/eval.mk help
#
# Steps (each a file in $(OUT), rebuilt when its inputs change):
#   prompts.jsonl     evaluate prompts: SHOTS examples of TRAIN (chosen by
#                     SHOT_SEED; see evaluate prompts --help) before each
#                     of the first QUESTIONS records of TEST
#   samplers.yaml     one heuristic per sampler of SAMPLERS ("learned NAME",
#                     NAME the file name without .gguf)
#   candidates.jsonl  gen-candidates: every prompt x heuristic x seed, under
#                     HEURISTICS, then under samplers.yaml, as a base model
#                     continues a few-shot text (no chat template by
#                     default: CHAT_TEMPLATE=none, no system message)
#   scored.jsonl      score-verifiable: the answer checked
#   eval.tsv eval.md eval.json
#                     evaluate: per heuristic and dataset n, correct,
#                     accuracy, Wilson 95% interval, answers not found

SELF       := $(lastword $(MAKEFILE_LIST))
BIN        ?= bin
OUT        ?= out/eval
MODEL      ?=
DATASET    ?= gsm8k
TEST       ?=
TRAIN      ?=
# examples per prompt (empty: the dataset's default, 5 gsm8k, 4 math, 0
# ifeval); FIRST_SHOTS=1 takes the first SHOTS of TRAIN (the reference's way)
SHOTS      ?=
SHOT_SEED  ?= 0
FIRST_SHOTS ?=
# the first QUESTIONS records of TEST (0: all; the reference uses 200)
QUESTIONS  ?= 0
HEURISTICS ?=
SAMPLERS   ?=
SEEDS      ?= 0
MAX_NEW_TOKENS ?= 256
MIN_NEW_TOKENS ?= 0
# the reference stops at the next question
STOP       ?= Question: Problem:
CHAT_TEMPLATE ?= none
THREADS    ?= 0
GEN_FLAGS  ?=

SHELL := /bin/sh
.DELETE_ON_ERROR:
.SUFFIXES:
.PHONY: all clean help

ifeq ($(filter clean help,$(MAKECMDGOALS)),)
  ifeq ($(MODEL),)
    $(error MODEL is required (see make -f pipelines/eval.mk help))
  endif
  ifeq ($(TEST),)
    $(error TEST (the test split, JSONL) is required)
  endif
  ifeq ($(HEURISTICS)$(SAMPLERS),)
    $(error HEURISTICS (a heuristics YAML) or SAMPLERS (sampler GGUFs) is required)
  endif
endif

all: $(OUT)/eval.tsv $(OUT)/eval.md $(OUT)/eval.json

$(OUT)/.dir:
	@mkdir -p $(OUT) && touch $@

$(OUT)/prompts.jsonl: $(TEST) $(TRAIN) | $(OUT)/.dir
	$(BIN)/evaluate prompts -d $(DATASET) $(if $(TRAIN),--train $(TRAIN)) $(if $(SHOTS),--shots $(SHOTS)) \
	  --shot-seed $(SHOT_SEED) $(if $(FIRST_SHOTS),--first-shots) -n $(QUESTIONS) -o $@ $(TEST)

# one "learned NAME" pipeline per sampler of SAMPLERS
$(OUT)/samplers.yaml: $(SAMPLERS) | $(OUT)/.dir
	{ echo 'sampling_pipelines:'; for s in $(SAMPLERS); do \
	    printf -- '- name: learned %s\n  weight: 1\n  processors:\n  - name: learned\n    params:\n      path: %s\n' \
	      "$$(basename $$s .gguf)" "$$s"; done; } > $@.tmp && mv $@.tmp $@

# generation under HEURISTICS and under the samplers, one file after the other
GEN_OPTS = -m $(MODEL) --seeds $(SEEDS) -n $(MAX_NEW_TOKENS) --min-new-tokens $(MIN_NEW_TOKENS) \
  --chat-template $(CHAT_TEMPLATE) --no-system $(foreach s,$(STOP),--stop '$(s)') -t $(THREADS) $(GEN_FLAGS)
PARTS := $(if $(HEURISTICS),$(OUT)/candidates-heuristics.jsonl) $(if $(SAMPLERS),$(OUT)/candidates-samplers.jsonl)
$(OUT)/candidates-heuristics.jsonl: $(OUT)/prompts.jsonl $(HEURISTICS) $(MODEL)
	$(BIN)/gen-candidates $(GEN_OPTS) -H $(HEURISTICS) -o $@ --resume $<
$(OUT)/candidates-samplers.jsonl: $(OUT)/prompts.jsonl $(OUT)/samplers.yaml $(MODEL)
	$(BIN)/gen-candidates $(GEN_OPTS) -H $(OUT)/samplers.yaml -o $@ --resume $<
$(OUT)/candidates.jsonl: $(PARTS)
	cat $^ > $@.tmp && mv $@.tmp $@

$(OUT)/scored.jsonl: $(OUT)/candidates.jsonl
	$(BIN)/score-verifiable -q $< > $@.tmp && mv $@.tmp $@

$(OUT)/eval.tsv: $(OUT)/scored.jsonl
	$(BIN)/evaluate --format tsv -o $@ $<
$(OUT)/eval.md: $(OUT)/scored.jsonl
	$(BIN)/evaluate --format markdown -o $@ $<
$(OUT)/eval.json: $(OUT)/scored.jsonl
	$(BIN)/evaluate --format json -o $@ $<

clean:
	rm -rf $(OUT)

help:
	@sed '/^$$/q' $(SELF) | sed 's/^# \{0,1\}//'
	@echo
	@echo 'Variables: MODEL DATASET=$(DATASET) TEST TRAIN SHOTS SHOT_SEED=$(SHOT_SEED) FIRST_SHOTS QUESTIONS=$(QUESTIONS)'
	@echo '  HEURISTICS SAMPLERS SEEDS=$(SEEDS) MAX_NEW_TOKENS=$(MAX_NEW_TOKENS) MIN_NEW_TOKENS=$(MIN_NEW_TOKENS)'
	@echo '  STOP="$(STOP)" CHAT_TEMPLATE=$(CHAT_TEMPLATE) THREADS=$(THREADS) GEN_FLAGS OUT=$(OUT)'
