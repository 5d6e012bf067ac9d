#!/bin/sh
# demo.sh — the quick start's pipeline (pipelines/demo.mk, what `make demo`
# runs) end to end on the demo models, smaller: two seeds, 16 new tokens, a
# small n-gram corpus. Both rounds must finish, verify must keep every
# prompt of both (round 2's include the learned sampler's records), and the
# held-out ranking must place the learned sampler (at this size it may
# keep none on the held-out prompts; the ranking says so). About a minute on 2 cores.
. "$(dirname "$0")/../lib/cli.sh"
if [ -n "${ASN_SANITIZED:-}" ]; then
    skip "pipelines/demo.mk end to end" "the sanitizer pass: checked in make test"
    exit 0
fi
mkdir -p "$TMP/corpus"
cp "$ROOT/tests/data/bpe/train.txt" "$TMP/corpus/train.txt"
D() { (cd "$ROOT" && make --no-print-directory -f pipelines/demo.mk OUT="$TMP/demo" BIN="$BIN" \
        CORPUS="$TMP/corpus" SEEDS=0-1 SEED_N=2 MAX_NEW=16 "$@"); }
expect_status "pipelines/demo.mk: both rounds, the sampler, the report" 0 D
check "verify keeps every prompt of both rounds (learned heuristics' ids included)" \
    [ "$(grep -c '^verify: .* 0 discarded' "$TMP/err")" = 2 ]
check "round 2 holds the learned sampler's records" grep -q '"name": *"learned ' "$TMP/demo/candidates.jsonl"
check "the held-out ranking places the learned sampler (or says it kept none there)" \
    grep -Eq '^(learned: rank [0-9]+ of [0-9]+|no learned sampler among the kept candidates)' \
    "$TMP/demo/heldout-rank.txt"
check "the report is written" test -s "$TMP/demo/report/report.html"
D > "$TMP/out2" 2>&1
check "a second run has nothing to do" grep -q "Nothing to be done\|is up to date" "$TMP/out2"

# the sweep's finalists in one more round on the training prompts
# (sweep-final): finalists in order of held-out KL, each one's mean final
# score over its candidates (recomputed here), the chosen one the highest
expect_status "pipelines/demo.mk sweep-final" 0 D SWEEP_ARCHS="EquivariantLocalTransform LocalProbabilityTransform" \
    SWEEP_HIDDEN=4 SWEEP_LRS="0.02 0.005" SWEEP_FINALISTS=3 sweep-final
check "final.tsv: the finalists by held-out KL, their mean final scores, the chosen one" \
    /usr/bin/python3 - "$TMP/demo" <<'PYEOF'
import json, sys
d = sys.argv[1]
sw = [l.split("\t") for l in open(d + "/sweep/sweep.tsv").read().splitlines()[1:]]
order = [r[0] for r in sorted((r for r in sw if r[5] != "null"), key=lambda r: float(r[5]))][:3]
lines = open(d + "/sweep/final/final.tsv").read().splitlines()
assert lines[0].split("\t") == ["config", "heldout_kl", "final", "candidates", "rank", "heuristics", "chosen"], lines[0]
rows = [l.split("\t") for l in lines[1:]]
assert [r[0] for r in rows] == order, (rows, order)
train = {json.loads(l)["id"] for l in open(d + "/train-prompts.jsonl")}
held = {json.loads(l)["id"] for l in open(d + "/heldout.jsonl")}
fin = {}
for l in open(d + "/sweep/final/scored-all.jsonl"):
    r = json.loads(l)
    assert r["prompt_id"] in train and r["prompt_id"] not in held, r["prompt_id"]
    fin.setdefault(r["heuristic"]["name"], []).append(r["score"]["final"])
mean = {h: sum(v) / len(v) for h, v in fin.items()}
for r in rows:
    h = "learned " + r[0]
    assert abs(float(r[2]) - mean[h]) < 1e-6 and int(r[3]) == len(fin[h]), (r, mean[h])
    assert int(r[4]) == 1 + sum(m > mean[h] for m in mean.values()) and int(r[5]) == len(mean), r
best = max(rows, key=lambda r: float(r[2]))
assert [r[0] for r in rows if r[6] == "1"] == [best[0]], rows
assert open(d + "/sweep/final/final-best.txt").read() == best[0] + "\n"
assert open(d + "/sweep/final/final-best.gguf", "rb").read() == \
    open("%s/sweep/runs/%s/sampler.gguf" % (d, best[0]), "rb").read()
PYEOF
