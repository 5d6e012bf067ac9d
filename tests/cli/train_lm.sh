#!/bin/sh
# train-lm on a tiny model and a small text with a small byte-level BPE
# vocabulary (tests/fixtures/lm/vocab.gguf): two runs with the same options
# write identical bytes; a run stopped at a checkpoint and resumed ends with
# the bytes of an uninterrupted run; the model loads in perplexity, generate
# and tokenize; the log has one JSON line per log step; the token cache is
# reused; bad arguments and inputs get clear errors and exit codes.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
TL="$BIN/train-lm"
VOCAB="$ROOT/tests/fixtures/lm/vocab.gguf"

# Genesis 1-2 (King James Version, public domain), a few times over
cat > "$TMP/part.txt" <<'EOF'
In the beginning God created the heaven and the earth. And the earth was without
form, and void; and darkness was upon the face of the deep. And the Spirit of God
moved upon the face of the waters. And God said, Let there be light: and there was
light. And God saw the light, that it was good: and God divided the light from the
darkness. And God called the light Day, and the darkness he called Night. And the
evening and the morning were the first day.

And God said, Let there be a firmament in the midst of the waters, and let it divide
the waters from the waters. And God made the firmament, and divided the waters which
were under the firmament from the waters which were above the firmament: and it was
so. And God called the firmament Heaven. And the evening and the morning were the
second day.

And God said, Let the waters under the heaven be gathered together unto one place,
and let the dry land appear: and it was so. And God called the dry land Earth; and
the gathering together of the waters called he Seas: and God saw that it was good.
EOF
for i in 1 2 3 4; do cat "$TMP/part.txt"; done > "$TMP/corpus.txt"
cat > "$TMP/valid.txt" <<'EOF'
Thus the heavens and the earth were finished, and all the host of them. And on the
seventh day God ended his work which he had made; and he rested on the seventh day
from all his work which he had made.
EOF

# tiny: 2 layers, grouped-query heads, gradient accumulation, warmup + cosine
OPTS="-v $VOCAB --name tiny --dim 16 --layers 2 --heads 2 --kv-heads 1 --ffn 24 --ctx 24
      --batch 3 --accum 2 --steps 12 --warmup 3 --lr 3e-3 --seed 7 --threads 2
      --log-every 2 --eval-every 6 --checkpoint-every 4 --valid $TMP/valid.txt"

# ------------------------------------------------------------ a full run

expect_status "train-lm: a tiny run exits 0" 0 $TL $OPTS -o "$TMP/a.gguf" "$TMP/corpus.txt"
if [ -s "$TMP/a.gguf" ]; then ok "train-lm: writes the model"; else not_ok "train-lm: writes the model" "no $TMP/a.gguf"; fi
expect_stderr "train-lm: reports the parameter count" "9056 parameters \(dim 16, layers 2, heads 2/1, ffn 24, vocab 321, ctx 24\)"
expect_stderr "train-lm: reports the validation perplexity" "wrote .*a.gguf \(12 steps, 1728 tokens, validation loss [0-9.]+, perplexity [0-9.]+\)"
expect_stderr "train-lm: a log line per log step on stderr (not a terminal)" "step 12/12 loss [0-9.]+ val [0-9.]+"
check "train-lm: the log has one JSON line per log step, with the fields" $PY - "$TMP/a.log.jsonl" <<'PYEOF'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [2, 4, 6, 8, 10, 12], [r["step"] for r in rows]
for r in rows:
    assert set(r) >= {"step", "tokens", "loss", "val_loss", "lr", "time", "grad_norm", "tokens_per_s"}, r
    assert r["tokens"] == r["step"] * 3 * 2 * 24 and math.isfinite(r["loss"]) and r["loss"] > 0
assert [r["val_loss"] is not None for r in rows] == [False, False, True, False, False, True]
# warmup 3 then cosine to 0 at step 12 (transformers' semantics, 0-based updates)
assert abs(rows[0]["lr"] - 3e-3 * 1 / 3) < 1e-9 and rows[-1]["lr"] < 3e-3 * 0.05, [r["lr"] for r in rows]
assert rows[-1]["loss"] < rows[0]["loss"], "the loss went down"
PYEOF

expect_status "perplexity loads the model (tokenizer included)" 0 "$BIN/perplexity" -m "$TMP/a.gguf" -c 256 --text "$TMP/valid.txt"
expect_stdout "perplexity: a finite perplexity" '"ppl":[0-9]'
expect_status "generate runs on the model" 0 "$BIN/generate" -m "$TMP/a.gguf" -n 8 --temperature 0.8 "And God"
expect_status "tokenize uses the model's tokenizer" 0 "$BIN/tokenize" -m "$TMP/a.gguf" "the earth"
check "the model is a llama GGUF with the vocab's tokenizer and tied output" $PY - "$TMP/a.gguf" <<'PYEOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
assert d[:4] == b"GGUF"
for key in (b"general.architecture", b"llama", b"llama.context_length", b"llama.attention.head_count_kv",
            b"llama.attention.layer_norm_rms_epsilon", b"tokenizer.ggml.merges", b"token_embd.weight",
            b"blk.1.ffn_down.weight", b"output_norm.weight"):
    assert key in d, key
assert struct.pack("<Q", 13) + b"output.weight" not in d and b"adam.m." not in d
PYEOF

# ------------------------------------------------------------ determinism

cp "$TMP/a.gguf" "$TMP/a1.gguf"
expect_status "train-lm: the same run again" 0 $TL $OPTS -o "$TMP/a.gguf" "$TMP/corpus.txt"
expect_stderr "train-lm: the second run reads the token cache" "corpus.txt: 2109 tokens \(cached in .*a.train.tokens\)"
check "train-lm: same options and threads, identical bytes" cmp "$TMP/a1.gguf" "$TMP/a.gguf"
expect_status "train-lm: the same run, another output name" 0 $TL $OPTS -o "$TMP/b.gguf" "$TMP/corpus.txt"
check "train-lm: identical bytes again (tokenized afresh)" cmp "$TMP/a.gguf" "$TMP/b.gguf"
expect_status "train-lm: another seed" 0 $TL $OPTS --seed 8 -o "$TMP/s.gguf" "$TMP/corpus.txt"
if cmp -s "$TMP/a.gguf" "$TMP/s.gguf"; then not_ok "train-lm: another seed, other weights" "identical files"
else ok "train-lm: another seed, other weights"; fi

# ------------------------------------------------------------ stop and resume

expect_status "train-lm --stop-at 5: exits 0" 0 $TL $OPTS --stop-at 5 -o "$TMP/c.gguf" "$TMP/corpus.txt"
expect_stderr "train-lm --stop-at: says how to continue" "stopped at step 5 of 12.*--resume"
if [ -e "$TMP/c.gguf" ]; then not_ok "train-lm --stop-at: no model yet" "c.gguf exists"; else ok "train-lm --stop-at: no model yet"; fi
expect_status "train-lm --resume: exits 0" 0 $TL $OPTS --resume "$TMP/c.ckpt.gguf" -o "$TMP/c.gguf" "$TMP/corpus.txt"
check "train-lm: resumed run = uninterrupted run, byte for byte" cmp "$TMP/a.gguf" "$TMP/c.gguf"
check "train-lm --resume: the log continues from step 6" $PY - "$TMP/c.log.jsonl" <<'PYEOF'
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1])]
assert steps == [2, 4, 6, 8, 10, 12], steps
PYEOF
expect_status "train-lm --resume from the final checkpoint: exits 0" 0 $TL $OPTS --resume "$TMP/c.ckpt.gguf" -o "$TMP/f.gguf" "$TMP/corpus.txt"
expect_stderr "train-lm --resume at the end: no step, the model and its validation loss" "wrote .*f.gguf \(12 steps, 1728 tokens, validation loss"
check "train-lm --resume at the end: the same model" cmp "$TMP/a.gguf" "$TMP/f.gguf"
expect_status "the checkpoint loads as a model too" 0 "$BIN/perplexity" -m "$TMP/c.ckpt.gguf" -c 256 --text "$TMP/valid.txt"

expect_status "resume with another model shape: exit 1" 1 $TL $OPTS --dim 32 --resume "$TMP/c.ckpt.gguf" -o "$TMP/d.gguf" "$TMP/corpus.txt"
expect_stderr "resume with another model shape: names the difference" "the checkpoint has dim 16, the model 32"
expect_status "resume with another seed: warns, runs" 0 $TL $OPTS --seed 9 --resume "$TMP/c.ckpt.gguf" -o "$TMP/d.gguf" "$TMP/corpus.txt"
expect_stderr "resume with another seed: the warning" "warning: .*seed was 7, now 9"
expect_status "resume from a model without optimizer state: exit 1" 1 $TL $OPTS --resume "$TMP/a.gguf" -o "$TMP/d.gguf" "$TMP/corpus.txt"
expect_stderr "resume from a model: says what is missing" "adam.m.token_embd.weight is missing"

# ------------------------------------------------------------ documents

expect_status "train-lm --doc-sep: documents with BOS/EOS" 0 $TL $OPTS --doc-sep '\n\n' --steps 2 --no-cache -o "$TMP/e.gguf" "$TMP/corpus.txt"

# ------------------------------------------------------------ errors

expect_status "--help exits 0" 0 $TL --help
expect_stdout "--help names the options" "--resume FILE.*checkpoint"
expect_status "no --vocab: usage error" 2 $TL -o "$TMP/x.gguf" "$TMP/corpus.txt"
expect_stderr "no --vocab: says so" "--vocab is required"
expect_status "no corpus: usage error" 2 $TL -v "$VOCAB" -o "$TMP/x.gguf"
expect_stderr "no corpus: says so" "CORPUS file is required"
expect_status "dim not a multiple of heads: usage error" 2 $TL -v "$VOCAB" -o "$TMP/x.gguf" --dim 30 --heads 4 "$TMP/corpus.txt"
expect_stderr "dim not a multiple of heads: says so" "dim \(30\) must be a multiple of heads \(4\)"
expect_status "heads not a multiple of kv heads: usage error" 2 $TL -v "$VOCAB" -o "$TMP/x.gguf" --dim 16 --heads 2 --kv-heads 3 "$TMP/corpus.txt"
expect_status "unknown schedule: usage error" 2 $TL -v "$VOCAB" -o "$TMP/x.gguf" --schedule cosin "$TMP/corpus.txt"
expect_stderr "unknown schedule: lists the known ones" "cosine_with_restarts"
expect_status "zero learning rate: usage error" 2 $TL -v "$VOCAB" -o "$TMP/x.gguf" --lr 0 "$TMP/corpus.txt"
expect_status "negative steps: usage error" 2 $TL -v "$VOCAB" -o "$TMP/x.gguf" --steps -3 "$TMP/corpus.txt"
expect_stderr "negative steps: says so" "--steps must be at least 1"
expect_status "missing corpus file: exit 1" 1 $TL -v "$VOCAB" -o "$TMP/x.gguf" "$TMP/nope.txt"
expect_stderr "missing corpus file: names it" "nope.txt: No such file"
expect_status "vocab that is not a GGUF: exit 1" 1 $TL -v "$TMP/corpus.txt" -o "$TMP/x.gguf" "$TMP/corpus.txt"
expect_stderr "vocab that is not a GGUF: names it" "corpus.txt"
expect_status "corpus shorter than a window: exit 1" 1 $TL -v "$VOCAB" -o "$TMP/x.gguf" --ctx 4096 "$TMP/valid.txt"
expect_stderr "corpus shorter than a window: says so" "fewer than --ctx"
if [ -e "$TMP/x.gguf" ]; then not_ok "failed runs write no model" "x.gguf exists"; else ok "failed runs write no model"; fi
