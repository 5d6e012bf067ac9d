# sweep.mk — a training sweep of learned samplers: every architecture x
# hidden size x learning rate x seed trained with train-sampler on the same
# candidates, each scored by its KL on held-out prompts, the best chosen.
#
#   make -f pipelines/sweep.mk SWEEP_MODEL=m.gguf SWEEP_DATA=filtered.jsonl SWEEP_OUT=out/sweep
#   make -f pipelines/full.mk ... SWEEP=1        (the same on $(OUT)/filtered.jsonl)
#   make -f pipelines/demo.mk sweep              (on the demo's training candidates)
#   make -f pipelines/sweep.mk sweep-help
#
# Steps, in $(SWEEP_OUT):
#   train.jsonl heldout.jsonl  SWEEP_DATA split by prompt: the records of
#                     every SWEEP_HOLDOUT-th distinct prompt_id (in order of
#                     first appearance: the 3rd, 6th, ... for 3) are held out
#   runs/NAME/        one run per configuration, NAME = ARCH-hH-lrLR-sSEED:
#     config.yaml     the architecture's configs/samplers file with its hidden
#                     size set to H (hidden_dims; SamplingNetwork: d_model H
#                     and d_ff 2H)
#     sampler.gguf    train-sampler -a ARCH -c config.yaml --learning-rate LR
#                     --seed SEED $(SWEEP_OPTS) on train.jsonl
#     log.jsonl train.log  its log (one JSON line per log step) and stderr
#     history.tsv     the log as a table: step epoch rows loss kl penalty lr
#                     grad_norm (gnuplot, a spreadsheet, ... can plot it)
#     history.svg     the log as a chart (report --history): loss and KL
#                     against the step
#     heldout.json    analyze-sampler's summary over heldout.jsonl:
#                     kl_learned, the mean over held-out steps of
#                     KL(target || sampler) on the tokens the target keeps
#                     (the loss's KL term), mass_learned (mass the sampler
#                     puts on tokens the target removed), kl_raw
#   sweep.tsv         config arch hidden lr seed heldout_kl heldout_mass
#                     chosen: a row per run in the order of the variables
#                     (arch, then hidden, lr, seed); chosen is 1 on the row of
#                     the smallest heldout_kl (the first of equal ones; a
#                     null KL, infinite, is never smaller), 0 elsewhere
#   best.gguf best.txt  the chosen sampler and its NAME

BIN     ?= bin
THREADS ?= 0
SWEEP_SELF := $(lastword $(MAKEFILE_LIST))

SWEEP_MODEL   ?= $(MODEL)
SWEEP_DATA    ?=
SWEEP_OUT     ?= out/sweep
SWEEP_ARCHS   ?= EquivariantLocalTransform LocalProbabilityTransform
SWEEP_HIDDEN  ?= 8 16
SWEEP_LRS     ?= 0.01 0.002
SWEEP_SEEDS   ?= 42
SWEEP_HOLDOUT ?= 3
# where each architecture's base configuration is
SWEEP_CONFIGS ?= configs/samplers
# every run's other train-sampler options (the same for all)
SWEEP_OPTS    ?= --num-epochs 1 --token-batch-size 8 --gradient-accumulation-steps 4 \
                 --num-warmup-steps 10 --loss-gamma 1 --log-every 1
SWEEP_ANALYZE_FLAGS ?=

SWEEP_BASE_LocalProbabilityTransform        := local.yaml
SWEEP_BASE_SimpleDistributionAwareTransform := dist.yaml
SWEEP_BASE_SamplingNetwork                  := network.yaml
SWEEP_BASE_EquivariantLocalTransform        := equivariant.yaml

ifeq ($(filter sweep-help clean help,$(MAKECMDGOALS)),)
  ifeq ($(SWEEP_MODEL),)
    $(error SWEEP_MODEL is required: the base model GGUF the candidates were generated with)
  endif
  ifeq ($(SWEEP_DATA),)
    $(error SWEEP_DATA is required: the candidate records to train on (JSONL))
  endif
endif
$(foreach a,$(SWEEP_ARCHS),$(if $(SWEEP_BASE_$(a)),,$(error SWEEP_ARCHS: unknown architecture "$(a)")))
$(foreach h,$(SWEEP_HIDDEN),$(if $(shell expr 'x$(h)' : 'x[1-9][0-9]*$$' | grep -v '^0$$'),,$(error SWEEP_HIDDEN: "$(h)" is not a positive integer)))

# the runs' names, in table order, and each one's settings
SWEEP_RUNS := $(foreach a,$(SWEEP_ARCHS),$(foreach h,$(SWEEP_HIDDEN),$(foreach l,$(SWEEP_LRS),$(foreach s,$(SWEEP_SEEDS),$(a)-h$(h)-lr$(l)-s$(s)))))
SR := $(SWEEP_OUT)/runs

.PHONY: sweep sweep-help
sweep: $(SWEEP_OUT)/sweep.tsv $(SWEEP_OUT)/best.gguf

# ---- the split ----------------------------------------------------------------
# awk: a record's prompt is its "prompt_id" string; held out (want 1) when
# the prompt's place among the distinct ids is a multiple of SWEEP_HOLDOUT
SWEEP_SPLIT = awk -v k=$(SWEEP_HOLDOUT) -v want=$(1) \
  'match($$0, /"prompt_id": *"([^"\\]|\\.)*"/) { id = substr($$0, RSTART, RLENGTH); \
     if (!(id in o)) o[id] = ++n; if ((o[id] % k == 0) == want) print; next } \
   { printf "%s:%d: no \"prompt_id\" string\n", FILENAME, FNR > "/dev/stderr"; exit 1 }'
$(SWEEP_OUT)/train.jsonl: $(SWEEP_DATA)
	@mkdir -p $(@D)
	$(call SWEEP_SPLIT,0) $(SWEEP_DATA) > $@.tmp && mv $@.tmp $@
$(SWEEP_OUT)/heldout.jsonl: $(SWEEP_DATA)
	@mkdir -p $(@D)
	$(call SWEEP_SPLIT,1) $(SWEEP_DATA) > $@.tmp && mv $@.tmp $@
	@[ -s $@ ] || { echo "sweep: no held-out prompts in $(SWEEP_DATA) (fewer than SWEEP_HOLDOUT=$(SWEEP_HOLDOUT) prompts)" >&2; rm -f $@; exit 1; }

# ---- one run ------------------------------------------------------------------
# sweep_run NAME ARCH HIDDEN LR SEED
define sweep_run
$(SR)/$(1)/config.yaml: $(SWEEP_CONFIGS)/$(SWEEP_BASE_$(2))
	@mkdir -p $$(@D)
	sed -e 's/^hidden_dims:.*/hidden_dims: $(3)/' -e 's/^d_model:.*/d_model: $(3)/' \
	  -e 's/^d_ff:.*/d_ff: $(shell expr 2 \* $(3))/' $$< > $$@.tmp && mv $$@.tmp $$@
$(SR)/$(1)/sampler.gguf: $(SR)/$(1)/config.yaml $(SWEEP_OUT)/train.jsonl $(SWEEP_MODEL)
	$(BIN)/train-sampler -m $(SWEEP_MODEL) -a $(2) -c $$< --learning-rate $(4) --seed $(5) $(SWEEP_OPTS) \
	  -t $(THREADS) --save-steps 0 --log $$(@D)/log.jsonl -o $$@ $(SWEEP_OUT)/train.jsonl 2> $$(@D)/train.log \
	  || { tail -3 $$(@D)/train.log >&2; exit 1; }
$(SR)/$(1)/heldout.json: $(SR)/$(1)/sampler.gguf $(SWEEP_OUT)/heldout.jsonl
	$(BIN)/analyze-sampler -m $(SWEEP_MODEL) -S $$< --candidates $(SWEEP_OUT)/heldout.jsonl --json \
	  -t $(THREADS) $(SWEEP_ANALYZE_FLAGS) | tail -n 1 > $$@.tmp
	grep -q '^{"summary":' $$@.tmp && mv $$@.tmp $$@
$(SR)/$(1)/row.tsv: $(SR)/$(1)/heldout.json
	sed -e 's/.*"kl_learned":\([^,}]*\).*"mass_learned":\([^,}]*\).*/$(1)	$(2)	$(3)	$(4)	$(5)	\1	\2/' \
	  $$< > $$@.tmp && mv $$@.tmp $$@
endef
$(foreach a,$(SWEEP_ARCHS),$(foreach h,$(SWEEP_HIDDEN),$(foreach l,$(SWEEP_LRS),$(foreach s,$(SWEEP_SEEDS),\
  $(eval $(call sweep_run,$(a)-h$(h)-lr$(l)-s$(s),$(a),$(h),$(l),$(s)))))))

# the log as a table (history.tsv of every run, built with the table)
$(SR)/%/history.tsv: $(SR)/%/sampler.gguf
	awk 'BEGIN { n = split("step epoch rows loss kl penalty lr grad_norm", f, " "); \
	       for (i = 1; i <= n; i++) printf "%s%s", f[i], i < n ? "\t" : "\n" } \
	     { for (i = 1; i <= n; i++) { v = ""; if (match($$0, "\"" f[i] "\":[^,}]*")) \
	       v = substr($$0, RSTART + length(f[i]) + 3, RLENGTH - length(f[i]) - 3); \
	       printf "%s%s", v, i < n ? "\t" : "\n" } }' $(@D)/log.jsonl > $@.tmp && mv $@.tmp $@

# the log as a chart (history.svg of every run, built with the table)
$(SR)/%/history.svg: $(SR)/%/sampler.gguf
	$(BIN)/report --history $(@D)/log.jsonl -o $@ > /dev/null

# ---- the table and the choice ---------------------------------------------------
$(SWEEP_OUT)/sweep.tsv: $(foreach r,$(SWEEP_RUNS),$(SR)/$(r)/row.tsv $(SR)/$(r)/history.tsv $(SR)/$(r)/history.svg)
	{ printf 'config\tarch\thidden\tlr\tseed\theldout_kl\theldout_mass\tchosen\n'; \
	  cat $(foreach r,$(SWEEP_RUNS),$(SR)/$(r)/row.tsv) | awk -F '\t' -v OFS='\t' \
	    '{ row[NR] = $$0; if ($$6 != "null" && (best == 0 || $$6 + 0 < min)) { min = $$6 + 0; best = NR } } \
	     END { for (i = 1; i <= NR; i++) print row[i], (i == best ? 1 : 0) }'; } > $@.tmp && mv $@.tmp $@
$(SWEEP_OUT)/best.txt: $(SWEEP_OUT)/sweep.tsv
	awk -F '\t' '$$8 == 1 { print $$1 }' $< > $@.tmp
	@[ -s $@.tmp ] || { echo "sweep: no run has a finite held-out KL" >&2; rm -f $@.tmp; exit 1; }
	mv $@.tmp $@
$(SWEEP_OUT)/best.gguf: $(SWEEP_OUT)/best.txt
	cp $(SR)/$$(cat $<)/sampler.gguf $@.tmp && mv $@.tmp $@

sweep-help:
	@sed '/^$$/q' $(SWEEP_SELF) | sed 's/^# \{0,1\}//'
	@echo
	@echo 'Variables: SWEEP_MODEL=$(SWEEP_MODEL) SWEEP_DATA=$(SWEEP_DATA) SWEEP_OUT=$(SWEEP_OUT)'
	@echo '  SWEEP_ARCHS=$(SWEEP_ARCHS) SWEEP_HIDDEN=$(SWEEP_HIDDEN) SWEEP_LRS=$(SWEEP_LRS) SWEEP_SEEDS=$(SWEEP_SEEDS)'
	@echo '  SWEEP_HOLDOUT=$(SWEEP_HOLDOUT) SWEEP_CONFIGS=$(SWEEP_CONFIGS) SWEEP_OPTS=$(SWEEP_OPTS)'
	@echo '  $(words $(SWEEP_RUNS)) runs'
