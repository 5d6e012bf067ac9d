# train_sampler_rl.sh — train-sampler --rl on the demo model with a tiny
# budget (a reward that prefers one of two heuristics, fine-tuning an
# imitation-trained EquivariantLocalTransform): the run is deterministic for
# a seed and thread count, resumes to the same bytes, changes the weights,
# and rejects records without the reward or with a reward that is not a
# number.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/examples/models/demo-base.gguf"
D="$ROOT/tests/data/sampler"
PY=/usr/bin/python3
cat > "$TMP/h.yaml" <<'YEOF'
sampling_pipelines:
  - name: cold
    processors:
      - {name: temperature, params: {temperature: 0.5}}
      - {name: top_k, params: {top_k: 8}}
  - name: hot
    processors:
      - {name: temperature, params: {temperature: 1.3}}
YEOF
"$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" -n 16 --min-new-tokens 16 --seeds 0-1 "$D/train_prompts.jsonl" > "$TMP/c.jsonl" 2>/dev/null
"$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" -n 16 --min-new-tokens 16 --seeds 0 "$D/heldout_prompts.jsonl" > "$TMP/held.jsonl" 2>/dev/null
# the reward: 1 for cold, 0 for hot (filter-topk's field), none on one record
$PY - "$TMP/c.jsonl" "$TMP/r.jsonl" "$TMP/held.jsonl" "$TMP/cold.jsonl" "$TMP/hot.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
with open(sys.argv[2], "w") as f:
    for i, r in enumerate(rows):
        if i != 3:
            r["score"] = {"final": 1.0 if r["heuristic"]["name"] == "cold" else 0.0}
        f.write(json.dumps(r) + "\n")
held = [json.loads(l) for l in open(sys.argv[3])]
for name, path in (("cold", sys.argv[4]), ("hot", sys.argv[5])):
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in held if r["heuristic"]["name"] == name)
PYEOF
T() { "$BIN/train-sampler" -m "$M" -q -b 8 --gradient-accumulation-steps 1 --num-warmup-steps 0 --save-steps 0 "$@"; }
expect_status "EquivariantLocalTransform imitates the mixture" 0 T -a EquivariantLocalTransform -c "$ROOT/configs/samplers/equivariant.yaml" --learning-rate 0.02 -o "$TMP/init.gguf" "$TMP/c.jsonl"
RL="--init $TMP/init.gguf --rl --learning-rate 0.002 --max-steps 12 --lr-scheduler-type constant"
expect_status "--rl fine-tunes from --init" 0 T $RL -t 2 -o "$TMP/rl.gguf" "$TMP/r.jsonl"
check "--rl logs the policy-gradient term" $PY -c "
import json; l = [json.loads(x) for x in open('$TMP/rl.log.jsonl')]; assert l and all('pg' in x for x in l), l"
expect_status "--rl again" 0 T $RL -t 2 -o "$TMP/rl2.gguf" "$TMP/r.jsonl"
check "--rl is deterministic (same seed and threads: same bytes)" cmp "$TMP/rl.gguf" "$TMP/rl2.gguf"
T $RL -t 2 -o "$TMP/part.gguf" --save-steps 4 --stop-at 5 "$TMP/r.jsonl" 2>/dev/null
T $RL -t 2 -o "$TMP/part.gguf" --save-steps 4 --resume "$TMP/part.ckpt.gguf" "$TMP/r.jsonl" 2>/dev/null
check "--rl stopped and resumed = uninterrupted, byte for byte" cmp "$TMP/rl.gguf" "$TMP/part.gguf"
check "--rl changes the weights" sh -c "! cmp -s '$TMP/init.gguf' '$TMP/rl.gguf'"
expect_status "--rl without any reward in the records" 1 T $RL --reward verifiable_reward -o "$TMP/x.gguf" "$TMP/r.jsonl"
expect_stderr "says which field is missing" 'no record has a reward "verifiable_reward"'
printf '%s\n' "$(head -1 "$TMP/r.jsonl" | $PY -c "import json,sys; r=json.loads(sys.stdin.read()); r['score']={'final':'high'}; print(json.dumps(r))")" > "$TMP/bad.jsonl"
expect_status "--rl with a reward that is not a number" 1 T $RL -o "$TMP/x.gguf" "$TMP/bad.jsonl"
expect_stderr "names file, line and field" 'bad.jsonl:1: field "score.final": not a finite number'
