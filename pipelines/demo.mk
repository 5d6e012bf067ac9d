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
GRID     ?= configs/heuristics/demo-grid.yaml
SEEDS    ?= 0-3
SEED_N   ?= 4
MAX_NEW  ?= 48
MIN_NEW  ?= 8
CORPUS   ?= build/corpus
THREADS  ?= 0

HEUR     := $(OUT)/heuristics.yaml

.PHONY: all report clean
.DELETE_ON_ERROR:
all: $(OUT)/report/report.html

$(OUT)/.dir:
	@mkdir -p $(OUT) && touch $@

# 1. heuristics: the demo grid, no model-family defaults (base models)
$(HEUR): $(GRID) | $(OUT)/.dir
	$(BIN)/gen-heuristics --grid $(GRID) --family none -o $@

# 2. candidates: every prompt x heuristic x seed (resumable)
$(OUT)/candidates.jsonl: $(BASE) $(HEUR) $(PROMPTS)
	$(BIN)/gen-candidates -m $(BASE) -H $(HEUR) --seeds $(SEEDS) -n $(MAX_NEW) \
	  --min-new-tokens $(MIN_NEW) -t $(THREADS) -o $@.part --resume $(PROMPTS)
	mv $@.part $@

# 3. integrity, with a few replays
$(OUT)/verified.jsonl: $(OUT)/candidates.jsonl
	$(BIN)/verify --expected-seeds $(SEED_N) -H $(HEUR) -m $(BASE) --replay 8 \
	  --report $(OUT)/verify-report.json $< > $@

# 4. quality: Swiss tournament judged by the reference model's likelihood
$(OUT)/ranked.jsonl: $(OUT)/verified.jsonl $(REF)
	$(BIN)/rank-bt --judge reference-ll --judge-model $(REF) -t $(THREADS) $< > $@

# 5. diversity across seeds, embeddings from the reference model
$(OUT)/diverse.jsonl: $(OUT)/ranked.jsonl $(REF)
	$(BIN)/score-diversity --embed-model $(REF) -t $(THREADS) $< > $@

# 6. n-gram coverage of the demo corpus
$(OUT)/ngram.idx: $(CORPUS)/train.txt
	$(BIN)/score-ngram build -o $@ $<
$(OUT)/ngram.jsonl: $(OUT)/diverse.jsonl $(OUT)/ngram.idx
	$(BIN)/score-ngram --index $(OUT)/ngram.idx $< > $@

# 7. verifiable rewards
$(OUT)/scored.jsonl: $(OUT)/ngram.jsonl
	$(BIN)/score-verifiable -q $< > $@

# 8. the best of each group, and preference pairs
$(OUT)/filtered.jsonl: $(OUT)/scored.jsonl
	$(BIN)/filter-topk --top-k 2 $< > $@
$(OUT)/pairs.jsonl: $(OUT)/scored.jsonl
	$(BIN)/filter-topk --pairs $< > $@

# 9. the index: every stage upserted into one database
$(OUT)/index.db: $(OUT)/scored.jsonl $(OUT)/filtered.jsonl $(OUT)/pairs.jsonl
	rm -f $@ $@-wal $@-shm
	$(BIN)/index --db $@ $(OUT)/scored.jsonl $(OUT)/filtered.jsonl $(OUT)/pairs.jsonl

# 10. the report
$(OUT)/report/report.html: $(OUT)/index.db
	$(BIN)/report --db $< -o $(OUT)/report

$(CORPUS)/train.txt:
	sh scripts/build-corpus.sh $(CORPUS)

clean:
	rm -rf $(OUT)
