# models.mk — rebuilds the shipped demo models from scratch:
#
#   make demo-models            (from the top directory)
#
# corpus (public-domain Debian packages) -> byte-level BPE vocabulary ->
# demo-base (the generator) and demo-ref (the reference scorer and judge:
# larger, another seed, no shared weights). Training checkpoints every 200
# steps; after an interruption the same command resumes from the checkpoint
# (RESUME=1). Budget: about 90 minutes per model on 2 cores. One training
# thread by default: weights depend on the thread count, so THREADS is part
# of what makes a rebuild give the same files.

BIN     ?= bin
CORPUS  ?= build/corpus
MODELS  ?= examples/models
WORK    ?= build/models
THREADS ?= 1
STEPS   ?= 2400

VOCAB := $(CORPUS)/vocab.gguf
COMMON := -v $(VOCAB) --doc-sep '\n\n\n' -c 256 -b 16 --warmup 100 --eval-every 200 --valid $(CORPUS)/valid.txt \
          --eval-tokens 65536 --checkpoint-every 200 -t $(THREADS) -n $(STEPS)

.PHONY: all
all: $(MODELS)/demo-base.gguf $(MODELS)/demo-ref.gguf

$(CORPUS)/train.txt:
	sh scripts/build-corpus.sh $(CORPUS)

$(VOCAB): $(CORPUS)/train.txt
	$(BIN)/train-bpe --check -o $@ $<

# resume from a checkpoint when one is there
ckpt = $(if $(wildcard $(WORK)/$(1).ckpt.gguf),--resume $(WORK)/$(1).ckpt.gguf)

$(MODELS)/demo-base.gguf: $(VOCAB)
	@mkdir -p $(WORK) $(MODELS)
	$(BIN)/train-lm $(COMMON) -o $(WORK)/demo-base.gguf --name demo-base --dim 128 --layers 4 \
	  --heads 4 --lr 0.002 -s 1 $(call ckpt,demo-base) $(CORPUS)/train.txt
	cp $(WORK)/demo-base.gguf $(WORK)/demo-base.log.jsonl $(MODELS)/

$(MODELS)/demo-ref.gguf: $(VOCAB)
	@mkdir -p $(WORK) $(MODELS)
	$(BIN)/train-lm $(COMMON) -o $(WORK)/demo-ref.gguf --name demo-ref --dim 192 --layers 6 \
	  --heads 6 --lr 0.0015 -s 2 $(call ckpt,demo-ref) $(CORPUS)/train.txt
	cp $(WORK)/demo-ref.gguf $(WORK)/demo-ref.log.jsonl $(MODELS)/
