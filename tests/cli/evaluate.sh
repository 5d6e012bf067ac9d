#!/bin/sh
# evaluate: the few-shot prompts of `evaluate prompts` against a Python
# construction from the documented rule (SHA-256 of "SEED:LINE"); the table
# against accuracies counted in Python from score-verifiable's records and
# Wilson's interval from the published formula; pipelines/eval.mk on the
# demo model with two heuristics and a learned sampler, checked the same
# way; errors.
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
EV="$BIN/evaluate"
MODEL="$ROOT/examples/models/demo-base.gguf"

# ---- a tiny GSM8K-style train and test split, a MATH one, an IFEval one
$PY - "$TMP" <<'PYEOF'
import json, sys
d = sys.argv[1]
with open(d + "/train.jsonl", "w") as f:
    for i in range(1, 8):
        f.write(json.dumps({"question": "Train question %d?" % i,
                            "answer": "%d + %d = %d\n#### %d" % (i, i, 2 * i, 2 * i)}) + "\n")
        if i == 3:
            f.write("\n")  # a blank line: line numbers count it
with open(d + "/test.jsonl", "w") as f:
    for i in range(1, 5):
        rec = {"question": "How many | things %d?" % i, "answer": "#### %d" % (10 * i)}
        if i == 2:
            rec["id"] = "named"
        f.write(json.dumps(rec) + "\n")
with open(d + "/math.jsonl", "w") as f:
    f.write(json.dumps({"problem": "1/2 + 0?", "solution": "It is $\\boxed{\\frac{1}{2}}$."}) + "\n")
    f.write(json.dumps({"problem": "x?", "solution": "no box", "answer": "3"}) + "\n")
with open(d + "/ifeval.jsonl", "w") as f:
    for i, (ids, kw) in enumerate([
            (["punctuation:no_comma"], [{}]),
            (["change_case:english_lowercase"], [{}]),
            (["length_constraints:number_words"], [{"relation": "less than", "num_words": 12}]),
            (["keywords:existence"], [{"keywords": ["the"]}])]):
        f.write(json.dumps({"key": i, "prompt": "Write about the king%d." % i,
                            "instruction_id_list": ids, "kwargs": kw}) + "\n")
PYEOF

# ---- 1. few-shot prompts: the documented choice and layout, built in Python
cat > "$TMP/shots.py" <<'PYEOF'
import hashlib, json, sys
train, test, out, seed, k, first = sys.argv[1:7]
seed, k = int(seed), int(k)
rows = []
for n, line in enumerate(open(train), 1):
    if line.strip():
        rows.append((hashlib.sha256(("%d:%d" % (seed, n)).encode()).hexdigest(), n, json.loads(line)))
if first != "1":
    rows.sort(key=lambda r: (r[0], r[1]))
shots = "".join("Question: %s\nAnswer: %s\n\n" % (r[2]["question"], r[2]["answer"]) for r in rows[:k])
want = []
for i, line in enumerate(open(test), 1):
    t = json.loads(line)
    want.append({"id": t.get("id", "gsm8k-%d" % i), "prompt": shots + "Question: %s\nAnswer:" % t["question"],
                 "dataset": "gsm8k", "ground_truth": t["answer"]})
got = [json.loads(l) for l in open(out)]
assert got == want, (got, want)
PYEOF
expect_status "evaluate prompts: gsm8k, 3 shots, seed 7" 0 "$EV" prompts -d gsm8k --train "$TMP/train.jsonl" \
    --shots 3 --shot-seed 7 -o "$TMP/p7.jsonl" "$TMP/test.jsonl"
check "prompts = the 3 smallest SHA-256(\"7:LINE\") in that order, then the question" \
    $PY "$TMP/shots.py" "$TMP/train.jsonl" "$TMP/test.jsonl" "$TMP/p7.jsonl" 7 3 0
"$EV" prompts -d gsm8k --train "$TMP/train.jsonl" --shots 3 --shot-seed 8 -o "$TMP/p8.jsonl" "$TMP/test.jsonl"
check "another seed: its own choice, still the rule" \
    $PY "$TMP/shots.py" "$TMP/train.jsonl" "$TMP/test.jsonl" "$TMP/p8.jsonl" 8 3 0
check "another seed changes the prompts" sh -c "! cmp -s '$TMP/p7.jsonl' '$TMP/p8.jsonl'"
"$EV" prompts -d gsm8k --train "$TMP/train.jsonl" --shots 5 --first-shots -o "$TMP/pf.jsonl" "$TMP/test.jsonl"
check "--first-shots: the first 5 train records in file order (the reference)" \
    $PY "$TMP/shots.py" "$TMP/train.jsonl" "$TMP/test.jsonl" "$TMP/pf.jsonl" 0 5 1
"$EV" prompts -d gsm8k --train "$TMP/train.jsonl" --shots 3 --shot-seed 7 -n 2 "$TMP/test.jsonl" > "$TMP/p2.jsonl"
check "-n 2: the first two prompts, the same bytes" sh -c "head -2 '$TMP/p7.jsonl' | cmp -s - '$TMP/p2.jsonl'"
"$EV" prompts -d math --shots 0 "$TMP/math.jsonl" > "$TMP/pm.jsonl"
check "math: ground truth from the last boxed answer, else \"answer\"" $PY - "$TMP/pm.jsonl" <<'PYEOF'
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
assert [g["ground_truth"] for g in got] == ["\\frac{1}{2}", "3"], got
assert got[0]["prompt"] == "Problem: 1/2 + 0?\nSolution:" and got[0]["id"] == "math-1", got
PYEOF
"$EV" prompts -d ifeval "$TMP/ifeval.jsonl" > "$TMP/pi.jsonl"
check "ifeval: the prompt alone, instructions copied" $PY - "$TMP/ifeval.jsonl" "$TMP/pi.jsonl" <<'PYEOF'
import json, sys
src = [json.loads(l) for l in open(sys.argv[1])]
got = [json.loads(l) for l in open(sys.argv[2])]
assert got == [{"id": "ifeval-%d" % (i + 1), "prompt": s["prompt"], "dataset": "ifeval",
                "instruction_id_list": s["instruction_id_list"], "kwargs": s["kwargs"]}
               for i, s in enumerate(src)], got
PYEOF

# ---- 2. the table against Python's count and the published formula
cat > "$TMP/table.py" <<'PYEOF'
import json, math, sys
scored, js, tsv = sys.argv[1:4]
z = 1.959963984540054
groups = {}
for line in open(scored):
    r = json.loads(line)
    v = r["verifiable"]
    if v is None:
        continue
    key = (r["heuristic"]["name"], v["dataset"].split("/")[-1].lower())
    g = groups.setdefault(key, {"n": 0, "correct": 0, "no_answer": 0, "unscored": 0, "prompts": set()})
    if r["verifiable_reward"] is None:
        g["unscored"] += 1
        continue
    g["n"] += 1
    g["correct"] += r["verifiable_reward"]
    g["no_answer"] += key[1] != "ifeval" and v.get("extracted") is None
    g["prompts"].add(r["prompt_id"])
def wilson(k, n):  # Wilson (1927); Agresti & Coull (1998), eq. 3
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # exactly 0 at k = 0 and 1 at k = n (rounding leaves a few ulps there)
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))
got = json.load(open(js))
assert got["interval"] == "wilson" and got["z"] == z
rows = got["rows"]
assert [(r["heuristic"], r["dataset"]) for r in rows] == list(groups), (rows, list(groups))
for r in rows:
    g = groups[(r["heuristic"], r["dataset"])]
    for f in ("n", "correct", "no_answer", "unscored"):
        assert r[f] == g[f], (f, r, g)
    assert r["prompts"] == len(g["prompts"])
    if g["n"]:
        lo, hi = wilson(g["correct"], g["n"])
        assert abs(r["accuracy"] - g["correct"] / g["n"]) < 1e-15, r
        assert abs(r["ci_low"] - lo) < 1e-12 and abs(r["ci_high"] - hi) < 1e-12, (r, lo, hi)
        assert r["ci_low"] <= r["accuracy"] <= r["ci_high"]
    else:
        assert r["accuracy"] is None and r["ci_low"] is None
lines = open(tsv).read().split("\n")
assert lines[-1] == "" and lines[0].split("\t") == ["heuristic", "dataset", "n", "correct", "accuracy",
    "ci_low", "ci_high", "no_answer", "unscored", "prompts"], lines[0]
assert len(lines) == len(rows) + 2
for line, r in zip(lines[1:], rows):
    c = line.split("\t")
    assert len(c) == 10 and c[0] == r["heuristic"] and int(c[2]) == r["n"], c
    if r["n"]:
        assert float(c[4]) == r["accuracy"] and float(c[5]) == r["ci_low"] and float(c[6]) == r["ci_high"], c
print(len(rows), "rows", sum(r["n"] for r in rows), "records")
PYEOF
"$BIN/score-verifiable" -q "$DATA/verifiable/candidates.jsonl" > "$TMP/sv.jsonl"
expect_status "evaluate --format json on score-verifiable's records" 0 "$EV" --format json -o "$TMP/sv.json" "$TMP/sv.jsonl"
"$EV" < "$TMP/sv.jsonl" > "$TMP/sv.tsv"
check "hand-made records: n, correct, accuracy and Wilson bounds as Python counts them" \
    $PY "$TMP/table.py" "$TMP/sv.jsonl" "$TMP/sv.json" "$TMP/sv.tsv"
check "hand-made records: the known accuracies (gsm8k 2/3, math 3/4, ifeval 2/3)" $PY - "$TMP/sv.json" <<'PYEOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert [(r["dataset"], r["correct"], r["n"]) for r in rows] == [("gsm8k", 2, 3), ("math", 3, 4), ("ifeval", 2, 3)], rows
PYEOF
"$EV" --format markdown "$TMP/sv.jsonl" > "$TMP/sv.md"
check "markdown: a header, a rule and a row per group, rates with 4 decimals" \
    sh -c "[ \$(grep -c '^| ' '$TMP/sv.md') = 4 ] && grep -q '^|---|' '$TMP/sv.md' && grep -q '| math | 4 | 3 | 0.7500 | 0.3006 | 0.9544 |' '$TMP/sv.md'"

# ---- 3. pipelines/eval.mk on the demo model: two heuristics and a sampler
cat > "$TMP/h.yaml" <<'EOF'
sampling_pipelines:
- name: greedy
  weight: 1
  processors:
  - {name: top_k, params: {top_k: 1}}
- name: temp 1.0
  weight: 1
  processors:
  - {name: temperature, params: {temperature: 1.0}}
EOF
cp "$ROOT/tests/data/sampler/equivariant.gguf" "$TMP/equi.gguf"
for ds in ifeval gsm8k; do
    if [ $ds = gsm8k ]; then set -- TEST="$TMP/test.jsonl" TRAIN="$TMP/train.jsonl" SHOTS=2; else set -- TEST="$TMP/ifeval.jsonl"; fi
    expect_status "eval.mk $ds: runs on the demo model" 0 timeout 120 make -s -C "$ROOT" -f pipelines/eval.mk BIN="$BIN" \
        OUT="$TMP/ev-$ds" MODEL="$MODEL" DATASET=$ds "$@" HEURISTICS="$TMP/h.yaml" SAMPLERS="$TMP/equi.gguf" \
        SEEDS=0-2 MAX_NEW_TOKENS=12 THREADS=1
    check "eval.mk $ds: eval.json and eval.tsv agree with Python's count of scored.jsonl" \
        $PY "$TMP/table.py" "$TMP/ev-$ds/scored.jsonl" "$TMP/ev-$ds/eval.json" "$TMP/ev-$ds/eval.tsv"
    check "eval.mk $ds: a row per heuristic and the sampler, 3 seeds x prompts each" $PY - "$TMP/ev-$ds/eval.json" $ds <<'PYEOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
n = 4 * 3
assert [(r["heuristic"], r["dataset"], r["n"], r["prompts"]) for r in rows] == [
    (h, sys.argv[2], n, 4) for h in ("greedy", "temp 1.0", "learned equi")], rows
PYEOF
done
check "eval.mk ifeval: some instructions followed, some not (the numbers are not trivial)" $PY - "$TMP/ev-ifeval/eval.json" <<'PYEOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
c = sum(r["correct"] for r in rows)
assert 0 < c < sum(r["n"] for r in rows), rows
PYEOF
check "eval.mk: the markdown table has the same rows" sh -c "[ \$(grep -c '^| ' '$TMP/ev-ifeval/eval.md') = 4 ]"

# ---- 4. errors
printf '{"question": 3, "answer": "#### 1"}\n' > "$TMP/bad.jsonl"
expect_status "a question that is not a string: exit 1" 1 "$EV" prompts -d gsm8k --shots 0 "$TMP/bad.jsonl"
expect_stderr "  ... naming file, line and field" 'bad.jsonl:1: .*"question"'
expect_status "shots without --train: exit 2" 2 "$EV" prompts -d gsm8k "$TMP/test.jsonl"
expect_status "more shots than train records: exit 1" 1 "$EV" prompts -d gsm8k --train "$TMP/train.jsonl" --shots 8 "$TMP/test.jsonl"
expect_stderr "  ... says how many there are" '7 records, fewer than --shots 8'
expect_status "an unknown dataset: exit 2" 2 "$EV" prompts -d nope "$TMP/test.jsonl"
expect_status "a record not scored: exit 1" 1 "$EV" "$DATA/verifiable/candidates.jsonl"
expect_stderr "  ... naming file, line and field" 'candidates.jsonl:1: field "verifiable_reward" is missing'
sed '2s/"verifiable_reward":[01]/"verifiable_reward":2/' "$TMP/sv.jsonl" > "$TMP/bad2.jsonl"
expect_status "a reward other than 0, 1 or null: exit 1" 1 "$EV" "$TMP/bad2.jsonl"
expect_stderr "  ... naming line 2" 'bad2.jsonl:2: field "verifiable_reward" must be 0, 1 or null'
expect_status "an unknown --format: exit 2" 2 "$EV" --format csv "$TMP/sv.jsonl"
printf '' > "$TMP/empty.jsonl"
expect_status "no records: the header alone" 0 "$EV" "$TMP/empty.jsonl"
check "  ... one line" sh -c "[ \$(wc -l < '$TMP/out') = 1 ]"
