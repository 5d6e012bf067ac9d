# judge_server.sh — rank-bt --judge-server against serve on loopback: the
# pairwise and reference-likelihood judges give --judge-model's ratings byte
# for byte (the demo's judge model), with two servers; serve's prompt
# log-probabilities ("echo") agree with perplexity's double-precision
# numbers; kinds without prompt log-probabilities are refused.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/examples/models/demo-base.gguf"
REF="$ROOT/examples/models/demo-ref.gguf"
TINY="$DATA/models/tiny-spm-q8_0.gguf"
PY=/usr/bin/python3
RB="$BIN/rank-bt"

# candidates of the demo: 4 prompts, 2 seeds, a sixth of the grid
"$BIN/gen-heuristics" --grid "$ROOT/configs/heuristics/demo-grid.yaml" --family none -o "$TMP/all.yaml"
$PY - "$TMP/all.yaml" "$TMP/h.yaml" <<'PYEOF'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
d["sampling_pipelines"] = d["sampling_pipelines"][::6]
yaml.safe_dump(d, open(sys.argv[2], "w"))
PYEOF
head -4 "$ROOT/examples/prompts/demo.jsonl" > "$TMP/p.jsonl"
"$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" --seeds 0-1 -n 24 --min-new-tokens 4 -t 1 "$TMP/p.jsonl" > "$TMP/c.jsonl" 2>/dev/null
check "the candidates are there" test "$(wc -l < "$TMP/c.jsonl")" -ge 20

start_serve ref "$REF"
S="http://127.0.0.1:$(cat "$TMP/ref.port")"

# reference likelihood (the demo's judge)
"$RB" -j reference-ll -m "$REF" -t 1 "$TMP/c.jsonl" > "$TMP/ll.local" 2>/dev/null
expect_status "rank-bt reference-ll --judge-server against serve runs" 0 "$RB" -j reference-ll --judge-server "$S" -m "$REF" "$TMP/c.jsonl"
check "reference-ll: the server's ratings are --judge-model's, byte for byte" cmp "$TMP/ll.local" "$TMP/out"
check "  ... and they are not all alike (the test can fail)" $PY -c "
import json, sys
v = {json.loads(l)['quality']['mean_logprob'] for l in open('$TMP/out')}
assert len(v) > 10, v"

# the pairwise judge, with a question short enough for the demo model's context
printf 'Q: {input}\nA: {response_a}\nB: {response_b}\nBetter:' > "$TMP/t.txt"
"$RB" -j pairwise -m "$REF" --judge-template "$TMP/t.txt" -t 1 "$TMP/c.jsonl" > "$TMP/pw.local" 2>/dev/null
"$RB" -j pairwise --judge-template "$TMP/t.txt" --judge-server "$S" --judge-server "$S" --max-inflight 3 -m "$REF" \
    "$TMP/c.jsonl" > "$TMP/pw.remote" 2> "$TMP/pw.err"
check "pairwise: two servers' ratings are --judge-model's, byte for byte" cmp "$TMP/pw.local" "$TMP/pw.remote"
check "  ... and the games were not all draws" $PY -c "
import json
v = {json.loads(l)['quality']['swiss_points'] for l in open('$TMP/pw.remote')}
assert len(v) > 3, v"
check "--tokenizer stands for --judge-model" sh -c "'$RB' -j pairwise --judge-template '$TMP/t.txt' --judge-server '$S' --tokenizer '$REF' '$TMP/c.jsonl' | cmp - '$TMP/pw.local'"

# serve's prompt log-probabilities against perplexity (double log-softmax)
start_serve tiny "$TINY"
T="http://127.0.0.1:$(cat "$TMP/tiny.port")"
printf '{"text":"Hello world, how are you today?"}\n' | "$BIN/perplexity" -m "$TINY" > "$TMP/ppl.jsonl"
check "serve's echo log-probabilities equal perplexity's (1e-6 relative), the top 3 sorted and consistent" $PY - "$T" "$TMP/ppl.jsonl" <<'PYEOF'
import json, sys, urllib.request
url, ppl = sys.argv[1], json.loads(open(sys.argv[2]).readline())
body = json.dumps({"prompt": ppl["tokens"], "echo": True, "logprobs": 3, "max_tokens": 0}).encode()
r = json.load(urllib.request.urlopen(urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"}), timeout=30))
c = r["choices"][0]
lp, top = c["logprobs"]["token_logprobs"], c["logprobs"]["top_logprobs"]
assert len(lp) == len(ppl["tokens"]) and lp[0] is None and top[0] is None and c["finish_reason"] == "length"
for i in range(1, len(lp)):
    assert abs(lp[i] - ppl["logprobs"][i]) <= 1e-6 * abs(ppl["logprobs"][i]), (i, lp[i], ppl["logprobs"][i])
    vals = list(top[i].values())
    assert len(vals) == 4 and vals[:3] == sorted(vals[:3], reverse=True) and vals[0] <= 0, top[i]
    assert vals[3] == lp[i] and lp[i] <= vals[2], (lp[i], vals)   # the prompt token, below the top 3 here
assert r["usage"] == {"prompt_tokens": len(lp), "completion_tokens": 0, "total_tokens": len(lp)}
PYEOF
check "echo with stream is a client error (400), saying so" $PY - "$T" <<'PYEOF'
import json, sys, urllib.request, urllib.error
body = json.dumps({"prompt": "Hi", "echo": True, "stream": True}).encode()
try:
    urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/v1/completions", body), timeout=30)
    raise SystemExit("accepted")
except urllib.error.HTTPError as e:
    assert e.code == 400 and "does not go with" in json.load(e)["error"]["message"]
PYEOF

# refused up front
expect_status "llama-server (no prompt log-probabilities) is refused" 2 "$RB" -j reference-ll --judge-server "$S" --server-kind llama-server -m "$REF" "$TMP/c.jsonl"
expect_stderr "  ... saying why" 'llama-server returns no log-probabilities of prompt tokens'
expect_status "--judge-server without a tokenizer is a usage error" 2 "$RB" -j reference-ll --judge-server "$S" "$TMP/c.jsonl"
expect_status "--tokenizer without --judge-server is a usage error" 2 "$RB" -j reference-ll -m "$REF" --tokenizer "$REF" "$TMP/c.jsonl"
expect_status "no server listening: the run fails after its retries" 1 "$RB" -j reference-ll --judge-server http://127.0.0.1:1 --retries 1 -m "$REF" "$TMP/c.jsonl"
