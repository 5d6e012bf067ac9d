# nucleus.sh — the nucleus size (tokens a heuristic keeps per step): what
# gen-candidates --nucleus records, report's column and analyze-sampler's
# summary; top_k k keeps k, greedy 1, top_k 5 then min_p 1 (only the
# largest logit's ties) 1.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
cat > "$TMP/h.yaml" <<'YEOF'
sampling_pipelines:
  - name: k5
    processors: [{name: top_k, params: {top_k: 5}}]
  - name: k17
    processors: [{name: temperature, params: {temperature: 0.7}}, {name: top_k, params: {top_k: 17}}]
  - name: greedy
    processors: [{name: greedy, params: {}}]
  - name: k5-minp1
    processors: [{name: top_k, params: {top_k: 5}}, {name: min_p, params: {min_p: 1.0}}]
YEOF
printf '%s\n' '{"prompt": "Once upon a time"}' '{"prompt": "The"}' > "$TMP/p.jsonl"
expect_status "gen-candidates --nucleus" 0 "$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" --seeds 0-2 -n 12 --min-new-tokens 0 --nucleus "$TMP/p.jsonl"
cp "$TMP/out" "$TMP/c.jsonl"
check "nucleus = k for top_k, 1 for greedy and min_p 1" $PY - "$TMP/c.jsonl" <<'PYEOF'
import json, sys
want = {"k5": 5, "k17": 17, "greedy": 1, "k5-minp1": 1}
n = 0
for r in map(json.loads, open(sys.argv[1])):
    assert r["nucleus"] == want[r["heuristic"]["name"]], r
    n += 1
assert n == 24, n
PYEOF
expect_status "--nucleus refused with --server" 2 "$BIN/gen-candidates" --server http://127.0.0.1:9 --tokenizer "$M" -H "$TMP/h.yaml" --nucleus "$TMP/p.jsonl"
"$BIN/index" --db "$TMP/run.db" "$TMP/c.jsonl" > /dev/null 2>&1
expect_status "report" 0 "$BIN/report" --db "$TMP/run.db" -o "$TMP/rep"
check "summary.txt has the nucleus column" $PY - "$TMP/rep/summary.txt" <<'PYEOF'
import re, sys
t = open(sys.argv[1]).read()
assert re.search(r"tokens +nucleus\n", t), t
got = {m.group(1): m.group(2) for m in re.finditer(r"^. +\d+  (\S+) .* (\S+)$", t, re.M) if m.group(1) in ("k5", "k17", "greedy", "k5-minp1")}
assert got == {"k5": "5.0", "k17": "17.0", "greedy": "1.0", "k5-minp1": "1.0"}, got
PYEOF
check "report.html has the nucleus column" grep -q '>nucleus<span class="unit">tokens' "$TMP/rep/report.html"
expect_status "analyze-sampler --json on the candidates" 0 "$BIN/analyze-sampler" -m "$M" --json \
    --candidates "$TMP/c.jsonl"
check "analyze-sampler's summary gives the mean nucleus" $PY - "$TMP/out" "$TMP/c.jsonl" <<'PYEOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = [l for l in lines if "step" in l]
s = lines[-1]["summary"]
recs = [json.loads(l) for l in open(sys.argv[2])]
# the records' own nucleus, weighted by their steps, is the summary's mean
want = sum(r["nucleus"] * r["n_tokens"] for r in recs) / sum(r["n_tokens"] for r in recs)
assert abs(s["kept"] - want) < 1e-6 and s["steps"] == len(steps), (s, want)
PYEOF
