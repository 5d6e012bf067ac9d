# shard_labels.sh — --shard K/N and --merge of the labelling tools (rank-bt,
# score-diversity, score-ngram, score-verifiable, score-reward): each shard holds the
# prompts whose id hashes to it (SHA-256 in Python, the reference), the same
# prompts as gen-candidates --shard, and the merged shard outputs are byte
# for byte the unsharded output.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$DATA/models/tiny-spm-q8_0.gguf"
H="$DATA/reference-configs/custom_logit_processors_test.yaml"
PY=/usr/bin/python3
cp "$DATA/reference-configs/test_prompts.jsonl" "$TMP/prompts.jsonl"
cat >> "$TMP/prompts.jsonl" <<'EOF2'
{"id": "math-1", "prompt": "Tom has 3 apples and buys 4 more. How many apples does he have?", "dataset": "gsm8k", "ground_truth": "7"}
{"prompt": "Tell me a joke about compilers.", "system": "You are a comedian."}
EOF2
G() { "$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 10 --min-new-tokens 2 -t 1 "$@" "$TMP/prompts.jsonl"; }
G > "$TMP/cand.jsonl" 2>/dev/null
"$BIN/score-ngram" build -o "$TMP/ngram.idx" "$DATA/ngram/corpus_a.txt" 2>/dev/null

# each tool: NAME and its command line (input last)
T_rank="$BIN/rank-bt --judge reference-ll --judge-model $M -t 1"
T_div="$BIN/score-diversity --embed-model $M -t 1"
T_ngram="$BIN/score-ngram --index $TMP/ngram.idx"
T_verif="$BIN/score-verifiable -q"
T_reward="$BIN/score-reward -m $DATA/models/tiny-rm-q8_0.gguf --chat-template none -t 1"
for t in rank div ngram verif reward; do
    eval "cmd=\$T_$t"
    $cmd "$TMP/cand.jsonl" > "$TMP/$t.all" 2>/dev/null
    for k in 1 2 3; do $cmd --shard $k/3 "$TMP/cand.jsonl" > "$TMP/$t.$k" 2>/dev/null; done
    expect_status "$t: --merge of the 3 shards (in any order)" 0 $cmd --merge "$TMP/$t.3" --merge "$TMP/$t.1" --merge "$TMP/$t.2" "$TMP/cand.jsonl"
    check "$t: ... is byte-identical to the unsharded output" sh -c "test -s '$TMP/$t.all' && cmp '$TMP/$t.all' '$TMP/out'"
done
check "each shard holds the prompts whose id hashes to it (first 8 bytes of SHA-256 mod 3)" $PY - "$TMP" <<'PYEOF'
import hashlib, json, sys
d = sys.argv[1]
def shard(pid): return int.from_bytes(hashlib.sha256(pid.encode()).digest()[:8], "big") % 3 + 1
want = {}
for l in open(d + "/cand.jsonl"):
    pid = json.loads(l)["prompt_id"]
    want.setdefault(shard(pid), []).append(pid)
assert len(want) == 3, "the test needs every shard non-empty: %r" % want
for t in ("rank", "div", "ngram", "verif", "reward"):
    for k in (1, 2, 3):
        got = [json.loads(l)["prompt_id"] for l in open("%s/%s.%d" % (d, t, k))]
        assert got == want[k], (t, k, got, want[k])
PYEOF
for k in 1 2 3; do G --shard $k/3 > "$TMP/gen.$k" 2>/dev/null; done
check "the shards are gen-candidates --shard's" sh -c "for k in 1 2 3; do
    $T_verif '$TMP/gen.'\$k | cmp - '$TMP/verif.'\$k || exit 1; done"

# errors
expect_status "--shard 0/3 is a usage error" 2 $T_verif --shard 0/3 "$TMP/cand.jsonl"
expect_stderr "... that says what is expected" "K/N with 1 <= K <= N"
expect_status "--shard 2/3x is a usage error" 2 $T_rank --shard 2/3x "$TMP/cand.jsonl"
expect_status "--merge with --shard is a usage error" 2 $T_div --shard 1/3 --merge "$TMP/div.1" "$TMP/cand.jsonl"
head -c -20 "$TMP/ngram.2" > "$TMP/cut.jsonl"
expect_status "a shard output cut short is not merged" 1 $T_ngram --merge "$TMP/ngram.1" --merge "$TMP/cut.jsonl" --merge "$TMP/ngram.3" "$TMP/cand.jsonl"
expect_stderr "... the error names the file and line" "cut.jsonl:[0-9]+: the last line is cut short"
expect_status "a shard given twice is an error" 1 $T_verif --merge "$TMP/verif.1" --merge "$TMP/verif.1" "$TMP/cand.jsonl"
expect_stderr "... that says so" "verif.1:[0-9]+: prompt .* is also in"
printf '{"id": "x", "generation": "hi"}\n' > "$TMP/nokey.jsonl"
expect_status "--shard on a record without a prompt id is an error" 1 $T_verif --shard 1/2 "$TMP/nokey.jsonl"
expect_stderr "... naming file and line" "nokey.jsonl:1: --shard: the record has no \"prompt_id\""
