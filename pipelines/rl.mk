# rl.mk — on-policy reward-driven fine-tuning of a learned sampler, the way
# the reference project's RL script does it: rounds of rollouts drawn by the
# current sampler, rewarded, then one pass of train-sampler --rl from it.
#
#   make -f pipelines/rl.mk RL_MODEL=base.gguf RL_INIT=sampler.gguf \
#        RL_PROMPTS=prompts.jsonl RL_JUDGE=judge.gguf RL_OUT=out/rl [RL_ROUNDS=3]
#   make -f pipelines/demo.mk rl        (from the demo's imitation sampler)
#   make -f pipelines/rl.mk rl-help
#
# Round k (1 .. RL_ROUNDS), in $(RL_OUT)/round-k/:
#   policy.yaml     the heuristic "policy" = {name: learned, path: the
#                   sampler of round k-1} (round 1: RL_INIT)
#   rollouts.jsonl  gen-candidates with it: RL_GROUP seeds per prompt of
#                   RL_PROMPTS, new seeds every round ((k-1) RL_GROUP ...),
#                   RL_GEN_OPTS
#   scored.jsonl    the rollouts through RL_SCORE, which must give every
#                   record the reward field RL_REWARD (default: the
#                   labelling chain, rank-bt judged by RL_JUDGE's likelihood
#                   (one tournament per prompt: its RL_GROUP rollouts),
#                   score-diversity, score-verifiable, then filter-topk -k 0
#                   --group prompt, so that every record gets score.final)
#   sampler.gguf    train-sampler --rl --init (round k-1's sampler) on
#                   scored.jsonl, RL_TRAIN_OPTS: the records of a prompt are
#                   one group, the round's sampler is both the policy that
#                   drew the tokens and the reference of the KL term
#   log.jsonl       its log (pg, kl_ref, loss per log step)
# $(RL_OUT)/sampler.gguf is the last round's sampler. Every file is a make
# target: an interrupted run resumes at the round it stopped in.

BIN     ?= bin
THREADS ?= 0
RL_MODEL   ?= $(MODEL)
RL_INIT    ?=
RL_PROMPTS ?=
RL_JUDGE   ?=
RL_OUT     ?= out/rl
RL_ROUNDS  ?= 3
RL_GROUP   ?= 8
RL_REWARD  ?= score.final
RL_GEN_OPTS   ?= -n 48 --min-new-tokens 8
RL_SCORE      ?= $(BIN)/rank-bt --group prompt --judge reference-ll --judge-model $(RL_JUDGE) -t $(THREADS) \
                 | $(BIN)/score-diversity --embed-model $(RL_JUDGE) -t $(THREADS) \
                 | $(BIN)/score-verifiable -q \
                 | $(BIN)/filter-topk -k 0 --group prompt --ignore-verifiable-filtering
RL_TRAIN_OPTS ?= --num-epochs 1 --token-batch-size 32 --gradient-accumulation-steps 1 --learning-rate 0.01 \
                 --lr-scheduler-type constant --num-warmup-steps 0 --rl-beta 0.1 --rl-kl 0.1

.PHONY: rl rl-help
rl: $(RL_OUT)/sampler.gguf

rl-help:
	@sed -n '2,/^$$/s/^# \{0,1\}//p' $(lastword $(MAKEFILE_LIST))

ifeq ($(filter rl-help clean help,$(MAKECMDGOALS)),)
  $(foreach v,RL_MODEL RL_INIT RL_PROMPTS,$(if $($(v)),,$(error $(v) is required (make -f pipelines/rl.mk rl-help))))
  ifeq ($(shell expr 'x$(RL_ROUNDS)' : 'x[1-9][0-9]*$$'),0)
    $(error RL_ROUNDS: "$(RL_ROUNDS)" is not a positive integer)
  endif
endif

RL_PREV = $(if $(filter 1,$(1)),$(RL_INIT),$(RL_OUT)/round-$(shell expr $(1) - 1)/sampler.gguf)

# rl_round K
define rl_round
$(RL_OUT)/round-$(1)/policy.yaml: $(call RL_PREV,$(1))
	@mkdir -p $$(@D)
	printf 'sampling_pipelines:\n- name: policy\n  processors:\n  - name: learned\n    params:\n      path: %s\n' \
	  '$(call RL_PREV,$(1))' > $$@.tmp && mv $$@.tmp $$@
$(RL_OUT)/round-$(1)/rollouts.jsonl: $(RL_OUT)/round-$(1)/policy.yaml $(RL_PROMPTS) $(RL_MODEL)
	$(BIN)/gen-candidates -m $(RL_MODEL) -H $$< $(RL_GEN_OPTS) -t $(THREADS) \
	  --seeds $(shell expr $(1) \* $(RL_GROUP) - $(RL_GROUP))-$(shell expr $(1) \* $(RL_GROUP) - 1) \
	  -o $$@ --resume $(RL_PROMPTS)
$(RL_OUT)/round-$(1)/scored.jsonl: $(RL_OUT)/round-$(1)/rollouts.jsonl
	{ $(RL_SCORE); } < $$< > $$@.tmp && mv $$@.tmp $$@
$(RL_OUT)/round-$(1)/sampler.gguf: $(RL_OUT)/round-$(1)/scored.jsonl $(call RL_PREV,$(1))
	$(BIN)/train-sampler -m $(RL_MODEL) --init $(call RL_PREV,$(1)) --rl --reward $(RL_REWARD) $(RL_TRAIN_OPTS) \
	  -t $(THREADS) -q --save-steps 0 --log $$(@D)/log.jsonl -o $$@ $$<
endef
$(foreach k,$(shell seq 1 $(RL_ROUNDS)),$(eval $(call rl_round,$(k))))

$(RL_OUT)/sampler.gguf: $(RL_OUT)/round-$(RL_ROUNDS)/sampler.gguf
	cp $< $@.tmp && mv $@.tmp $@
