# model_tools.sh — perplexity and generate on a small model with a real
# tokenizer (tests/data/models/tiny-spm-q8_0.gguf: random weights, llama.cpp's
# SPM test vocabulary), against the PyTorch reference of
# tests/fixtures/make_model_fixtures.py.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
PY=/usr/bin/python3

# perplexity: tokens as llama.cpp tokenizes (plus BOS), log-probabilities as
# PyTorch: to 1e-4 with the exact path (the model's Q8_0 weights in f32), to
# 0.25 with the default integer path (activations in 8 bits; this random
# model's logits span +-20, so its log-probabilities move by ~0.1)
printf 'ied 4 \302\275 months' > "$TMP/t.txt"
for mode in exact integer; do
    if [ $mode = exact ]; then export ASN_EXACT_MATMUL=1 tol=1e-4; else unset ASN_EXACT_MATMUL; tol=0.25; fi
    expect_status "perplexity --text runs ($mode)" 0 "$BIN/perplexity" -m "$M" --text "$TMP/t.txt"
    cp "$TMP/out" "$TMP/ppl.json"
    check "perplexity tokens and logprobs match llama.cpp's tokenizer and PyTorch ($mode, $tol)" $PY - "$TMP/ppl.json" "$ROOT/tests/data/models/tiny-spm-q8_0.json" $tol <<'PYEOF'
import json, math, sys
got = json.load(open(sys.argv[1])); exp = json.load(open(sys.argv[2])); tol = float(sys.argv[3])
assert got["tokens"] == exp["tokens"], (got["tokens"], exp["tokens"])
assert got["logprobs"][0] is None
for g, e in zip(got["logprobs"][1:], exp["logprobs"][1:]):
    assert abs(g - e) <= tol, (g, e)
lp = exp["logprobs"][1:]
assert abs(got["nll"] + sum(lp) / len(lp)) <= tol and got["n_vocab"] == 32000
assert abs(math.log(got["ppl"]) - got["nll"]) < 1e-9
PYEOF
done
unset ASN_EXACT_MATMUL

printf '{"id":"a","text":"Hello world","keep":[1,2]}\n{"id":"b","text":"ied 4 \302\275 months"}\n' > "$TMP/in.jsonl"
expect_status "perplexity reads JSONL" 0 "$BIN/perplexity" -m "$M" "$TMP/in.jsonl"
check "perplexity passes other fields through, one record per line" $PY - "$TMP/out" <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert [r["id"] for r in recs] == ["a", "b"] and recs[0]["keep"] == [1, 2]
assert recs[1]["tokens"] == [1, 474, 287, 29871, 29946, 29871, 30226, 7378]
assert all(len(r["logprobs"]) == len(r["tokens"]) for r in recs)
PYEOF
printf '{"id":"a","text":"fine"}\n{"id":"b","txt":"oops"}\n' > "$TMP/bad.jsonl"
expect_status "perplexity: missing field is an error" 1 "$BIN/perplexity" -m "$M" "$TMP/bad.jsonl"
expect_stderr "perplexity: the error names file, line and field" "bad.jsonl:2: field \"text\" is missing"
expect_stdout "perplexity: records before the error are written" '"id":"a"'
expect_status "perplexity: a text longer than --ctx is an error" 1 "$BIN/perplexity" -m "$M" -c 4 --text "$TMP/t.txt"
expect_stderr "perplexity: the context error says so" "exceeds the context of 4"
printf '' > "$TMP/empty.jsonl"
expect_status "perplexity: empty input" 0 "$BIN/perplexity" -m "$M" "$TMP/empty.jsonl"
expect_status "perplexity: missing model file" 1 "$BIN/perplexity" -m "$TMP/nope.gguf" "$TMP/in.jsonl"
expect_stderr "perplexity: the missing file is named" "nope.gguf"
expect_status "perplexity: a model without a tokenizer is an error" 1 "$BIN/perplexity" -m "$ROOT/tests/data/models/llama-gqa-f32.gguf" "$TMP/in.jsonl"

# generate: deterministic, seeded, streaming, stops
expect_status "generate runs" 0 "$BIN/generate" -m "$M" -n 12 --seed 3 "Once upon a time"
cp "$TMP/out" "$TMP/g1"
"$BIN/generate" -m "$M" -n 12 --seed 3 "Once upon a time" > "$TMP/g2" 2>/dev/null
check "generate: same seed, same text" cmp "$TMP/g1" "$TMP/g2"
"$BIN/generate" -m "$M" -n 12 --seed 3 -t 1 "Once upon a time" > "$TMP/g3" 2>/dev/null
check "generate: same text with 1 thread" cmp "$TMP/g1" "$TMP/g3"
for s in 4 5 6 7; do "$BIN/generate" -m "$M" -n 12 --seed $s "Once upon a time" 2>/dev/null; done > "$TMP/gs"
check "generate: other seeds give other texts" $PY -c "import sys; a=open('$TMP/g1').read(); b=open('$TMP/gs').read().split('\n'); sys.exit(0 if any(x and x+'\n'!=a for x in b) else 1)"
"$BIN/generate" -m "$M" -n 8 --greedy "Once upon a time" > "$TMP/gr1" 2>/dev/null
"$BIN/generate" -m "$M" -n 8 --greedy --seed 99 "Once upon a time" > "$TMP/gr2" 2>/dev/null
check "generate --greedy ignores the seed" cmp "$TMP/gr1" "$TMP/gr2"
echo "Once upon a time" > "$TMP/p.txt"
"$BIN/generate" -m "$M" -n 12 --seed 3 -f "$TMP/p.txt" > "$TMP/gf" 2>/dev/null
"$BIN/generate" -m "$M" -n 12 --seed 3 < "$TMP/p.txt" > "$TMP/gi" 2>/dev/null
check "generate: prompt from -f and from stdin agree" cmp "$TMP/gf" "$TMP/gi"
stop=$($PY -c "import sys; t=open('$TMP/g1').read().strip(); print(t[len(t)//2:len(t)//2+3] if len(t)>6 else 'zz')")
"$BIN/generate" -m "$M" -n 12 --seed 3 --stop "$stop" "Once upon a time" > "$TMP/gstop" 2>/dev/null
check "generate --stop cuts before the stop text" $PY -c "
a=open('$TMP/g1').read(); b=open('$TMP/gstop').read().rstrip('\n'); s='''$stop'''
assert s not in b and a.startswith(b) and len(b) < len(a.rstrip('\n')), (a, b, s)"
expect_status "generate with a heuristic from a file" 0 "$BIN/generate" -m "$M" -n 6 --heuristics "$ROOT/configs/heuristics/qwen.yaml" --heuristic "min_p 0.1 temp 0.7" "Hi"
expect_status "generate: unknown heuristic name" 1 "$BIN/generate" -m "$M" --heuristics "$ROOT/configs/heuristics/qwen.yaml" --heuristic "nope" "Hi"
expect_status "generate: bad inline value" 2 "$BIN/generate" -m "$M" --top-p 1.5 "Hi"
expect_stderr "generate: the bad value is named" "top_p"
expect_status "generate: unknown chat template" 1 "$BIN/generate" -m "$M" --chat-template nosuch "Hi"
expect_status "generate: chatml template" 0 "$BIN/generate" -m "$M" -n 3 --chat-template chatml --system "Be brief." -v "Hi"
expect_stderr "generate -v shows the chatml prompt" "<\|im_start\|>system"
expect_status "generate: --model is required" 2 "$BIN/generate" "Hi"
