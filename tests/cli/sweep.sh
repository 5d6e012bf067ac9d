#!/bin/sh
# pipelines/sweep.mk on demo-model candidates: 2 architectures x 2 hidden
# sizes x 2 learning rates; the split by prompt, the table's form, the chosen
# row (the smallest held-out KL of the runs' own analyze-sampler summaries,
# found in Python), best.gguf, every run's history.tsv and history.svg
# against its log;
# full.mk's SWEEP=1 hook; bad settings.
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
MODEL="$ROOT/examples/models/demo-base.gguf"
cat > "$TMP/h.yaml" <<'EOF'
sampling_pipelines:
- name: min_p 0.1 temp 0.7
  weight: 1
  processors:
  - {name: temperature, params: {temperature: 0.7}}
  - {name: min_p, params: {min_p: 0.1}}
- name: top_k 8
  weight: 1
  processors:
  - {name: top_k, params: {top_k: 8}}
EOF
"$BIN/gen-candidates" -m "$MODEL" -H "$TMP/h.yaml" -n 16 --min-new-tokens 4 --seeds 0-1 -t 1 \
    "$ROOT/tests/data/sampler/train_prompts.jsonl" > "$TMP/c.jsonl" 2> /dev/null

SW="$TMP/sw"
sweep() {
    timeout 300 make -s -C "$ROOT" -f pipelines/sweep.mk BIN="$BIN" THREADS=1 SWEEP_MODEL="$MODEL" \
        SWEEP_DATA="$TMP/c.jsonl" SWEEP_HIDDEN="4 8" SWEEP_LRS="0.02 0.005" SWEEP_SEEDS=1 \
        SWEEP_OPTS="--num-epochs 2 --token-batch-size 8 --gradient-accumulation-steps 2 --num-warmup-steps 2 --loss-gamma 1 --log-every 1" \
        "$@"
}
expect_status "sweep.mk runs on demo-model candidates" 0 sweep SWEEP_OUT="$SW" sweep

check "the split: every 3rd distinct prompt held out, records in order" $PY - "$TMP/c.jsonl" "$SW" <<'PYEOF'
import json, sys
recs = open(sys.argv[1]).read().splitlines(True)
order = {}
for l in recs:
    order.setdefault(json.loads(l)["prompt_id"], len(order) + 1)
held = [l for l in recs if order[json.loads(l)["prompt_id"]] % 3 == 0]
train = [l for l in recs if order[json.loads(l)["prompt_id"]] % 3 != 0]
assert open(sys.argv[2] + "/heldout.jsonl").read().splitlines(True) == held
assert open(sys.argv[2] + "/train.jsonl").read().splitlines(True) == train
assert len(held) == 16 and len(train) == 32, (len(held), len(train))
PYEOF

check "sweep.tsv: the header, a row per configuration, the chosen one the smallest held-out KL" \
    $PY - "$SW" <<'PYEOF'
import json, sys
d = sys.argv[1]
lines = open(d + "/sweep.tsv").read().split("\n")
assert lines[-1] == "", "no final newline"
head, rows = lines[0].split("\t"), [l.split("\t") for l in lines[1:-1]]
assert head == ["config", "arch", "hidden", "lr", "seed", "heldout_kl", "heldout_mass", "chosen"], head
want = [(a, h, l, "1") for a in ("EquivariantLocalTransform", "LocalProbabilityTransform")
        for h in ("4", "8") for l in ("0.02", "0.005")]
assert [tuple(r[1:5]) for r in rows] == want, rows
assert all(len(r) == 8 and r[0] == "%s-h%s-lr%s-s%s" % tuple(r[1:5]) for r in rows), rows
# the held-out KL of each run, read from its own analyze-sampler summary
kl = {}
for r in rows:
    s = json.loads(open("%s/runs/%s/heldout.json" % (d, r[0])).read())["summary"]
    assert s["records"] == 16, s
    kl[r[0]] = s["kl_learned"]
    assert float(r[5]) == s["kl_learned"] and float(r[6]) == s["mass_learned"], (r, s)
best = min(kl, key=lambda k: (kl[k], [x[0] for x in rows].index(k)))
assert [r[0] for r in rows if r[7] == "1"] == [best], (rows, best)
assert all(r[7] in ("0", "1") for r in rows)
assert len(set(kl.values())) > 1, "every run has the same KL: the settings did not reach train-sampler"
assert open(d + "/best.txt").read() == best + "\n"
assert open(d + "/best.gguf", "rb").read() == open("%s/runs/%s/sampler.gguf" % (d, best), "rb").read()
PYEOF

check "the hidden size reaches each run's configuration" sh -c \
    "grep -qx 'hidden_dims: 4' '$SW/runs/LocalProbabilityTransform-h4-lr0.02-s1/config.yaml' && grep -qx 'hidden_dims: 8' '$SW/runs/EquivariantLocalTransform-h8-lr0.005-s1/config.yaml'"

check "history.tsv of every run: its log.jsonl as a table" $PY - "$SW" <<'PYEOF'
import glob, json, sys
runs = sorted(glob.glob(sys.argv[1] + "/runs/*/"))
assert len(runs) == 8, runs
cols = ["step", "epoch", "rows", "loss", "kl", "penalty", "lr", "grad_norm"]
for r in runs:
    log = [json.loads(l) for l in open(r + "log.jsonl")]
    t = open(r + "history.tsv").read().split("\n")
    assert t[0].split("\t") == cols and t[-1] == "" and len(t) == len(log) + 2 and len(log) > 1, r
    for line, rec in zip(t[1:], log):
        assert [float(x) for x in line.split("\t")] == [float(rec[c]) for c in cols], (r, line, rec)
PYEOF

check "history.svg of every run: a polyline per series, a point per log line, x increasing" $PY - "$SW" <<'PYEOF'
import glob, json, sys
import xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
runs = sorted(glob.glob(sys.argv[1] + "/runs/*/"))
assert len(runs) == 8, runs
for r in runs:
    steps = [json.loads(l)["step"] for l in open(r + "log.jsonl")]
    assert steps == sorted(set(steps)) and len(steps) > 1, (r, steps)
    root = ET.parse(r + "history.svg").getroot()
    assert root.tag == NS + "svg", root.tag
    lines = root.findall(".//" + NS + "polyline")
    assert [p.get("class") for p in lines] == ["series loss", "series kl"], r
    for p in lines:
        xs = [float(q.split(",")[0]) for q in p.get("points").split()]
        assert len(xs) == len(steps) and all(a < b for a, b in zip(xs, xs[1:])), (r, xs)
PYEOF

# the same sweep again in another folder: the same table, byte for byte
sweep SWEEP_OUT="$TMP/sw2" sweep > /dev/null 2>&1
check "the same settings give the same sweep.tsv" cmp "$SW/sweep.tsv" "$TMP/sw2/sweep.tsv"
check "  ... and the same history.svg" cmp "$SW/runs/LocalProbabilityTransform-h4-lr0.02-s1/history.svg" \
    "$TMP/sw2/runs/LocalProbabilityTransform-h4-lr0.02-s1/history.svg"

# full.mk's hook: SWEEP=1 adds the sweep's outputs to the sampler targets
printf '{"id": "p", "prompt": "x"}\n' > "$TMP/p.jsonl"
expect_status "full.mk SWEEP=1: the sweep in the sampler targets" 0 make -n -C "$ROOT" -f pipelines/full.mk \
    MODEL="$MODEL" PROMPTS="$TMP/p.jsonl" HEURISTICS="$TMP/h.yaml" OUT="$TMP/full" SWEEP=1 SWEEP_HIDDEN=4 SWEEP_LRS=0.01 samplers
expect_stdout "  ... training on the merged top-k candidates" "train-sampler .*-a EquivariantLocalTransform .*$TMP/full/sweep/train.jsonl"
expect_stdout "  ... split from filtered.jsonl" "$TMP/full/filtered.jsonl > $TMP/full/sweep/heldout.jsonl.tmp"

# bad settings
expect_status "an unknown architecture: make fails" 2 sweep SWEEP_OUT="$TMP/sw3" SWEEP_ARCHS=Nope sweep
expect_stderr "  ... naming it" 'unknown architecture "Nope"'
expect_status "a hidden size that is not a number: make fails" 2 sweep SWEEP_OUT="$TMP/sw3" SWEEP_HIDDEN=x sweep
expect_stderr "  ... naming it" 'SWEEP_HIDDEN: "x"'
head -4 "$TMP/c.jsonl" > "$TMP/two.jsonl"
expect_status "fewer prompts than SWEEP_HOLDOUT: make fails" 2 timeout 60 make -s -C "$ROOT" -f pipelines/sweep.mk \
    BIN="$BIN" SWEEP_MODEL="$MODEL" SWEEP_DATA="$TMP/two.jsonl" SWEEP_OUT="$TMP/sw4" sweep
expect_stderr "  ... saying so" 'no held-out prompts'
