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

$PY -c "
import json, sys
for l in open('$TMP/r.jsonl'):
    r = json.loads(l); r['score'] = {'final': 0.5}; print(json.dumps(r))" > "$TMP/flat.jsonl"
expect_status "--rl with rewards equal within every prompt" 0 T $RL -o "$TMP/x.gguf" "$TMP/flat.jsonl"
expect_stderr "warns that every advantage is 0" 'every advantage is 0'

# On-policy rounds (pipelines/rl.mk). The reward, computed from the text
# alone: the share of words outside the 100 most frequent words of the
# demo's prompts' style (the raw model at temperature 1 scores about 0.56 on
# it, the imitation-trained sampler about 0.38). Each round draws 8 rollouts
# per training prompt with the current sampler and trains from it. What a
# round must do: raise its own objective, sum over records of A * sum over
# steps of log p(drawn token), advantages recomputed here from the rewards
# (per prompt, population deviation), log-probabilities from analyze-sampler.
cat > "$TMP/rare.py" <<'PYEOF'
import json, math, subprocess, sys
COMMON = set("""the and of to that in he shall unto for i his a lord they be is him not them it with
all thou was which my me said but ye have their will thee from as are when this out were upon man by
you israel king son up there hath then people came had house into on her come one we children before
your also day land men against shalt if down hand god go even no made let went at do so because what
may she or things saith every after over us our should behold""".split())
def reward(text):
    w = [x.strip(".,;:!?'\"()").lower() for x in text.split()]
    w = [x for x in w if x]
    return 1 - sum(x in COMMON for x in w) / max(len(w), 1)
if sys.argv[1] == "score":
    for line in sys.stdin:
        r = json.loads(line)
        r["score"] = {"final": reward(r["generation"])}
        print(json.dumps(r))
elif sys.argv[1] == "objective":  # BIN MODEL SAMPLER RECORDS
    rows = [json.loads(l) for l in open(sys.argv[5])]
    groups = {}
    for r in rows:
        groups.setdefault(r["prompt_id"], []).append(r["score"]["final"])
    adv = {}
    for r in rows:
        g = groups[r["prompt_id"]]
        m = sum(g) / len(g)
        sd = (sum((x - m) ** 2 for x in g) / len(g)) ** 0.5
        adv[r["id"]] = (r["score"]["final"] - m) / sd if sd > 1e-12 else 0.0
    out = subprocess.run([sys.argv[2] + "/analyze-sampler", "-m", sys.argv[3], "-S", sys.argv[4], "--candidates",
                          sys.argv[5], "--json", "-t", "2"], capture_output=True, text=True, check=True).stdout
    steps = [json.loads(l) for l in out.splitlines()]
    steps = [s for s in steps if "summary" not in s]
    assert len(steps) == sum(r["n_tokens"] for r in rows), (len(steps), len(rows))
    print(sum(adv[s["id"]] * math.log(s["p_learned"]) for s in steps) / len(steps))
else:
    xs = [reward(json.loads(l)["generation"]) for l in open(sys.argv[1])]
    m = sum(xs) / len(xs)
    print("%.4f +- %.4f" % (m, (sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs)) ** 0.5))
PYEOF
# rl.mk runs in $TMP with relative paths (a learned heuristic's id, and so
# its draws, follows the sampler file's bytes, wherever it lies)
cp "$TMP/init.gguf" "$TMP/imitation.gguf"
RLMK() { make -s --no-print-directory -C "$TMP" -f "$ROOT/pipelines/rl.mk" BIN="$BIN" RL_MODEL="$M" \
    RL_INIT=imitation.gguf RL_PROMPTS="$D/train_prompts.jsonl" RL_GROUP=8 RL_GEN_OPTS="-n 24 --min-new-tokens 24" \
    RL_SCORE="$PY $TMP/rare.py score" THREADS=2 "$@"; }
objective() { (cd "$TMP" && $PY rare.py objective "$BIN" "$M" "$1" "$2"); }
expect_status "pipelines/rl.mk: two on-policy rounds" 0 RLMK RL_OUT=onp RL_ROUNDS=2
check "each round logs its KL to the sampler that drew the rollouts" \
    $PY -c "import json; l = [json.loads(x) for x in open('$TMP/onp/round-2/log.jsonl')]; assert l and all(x['kl_ref'] >= 0 for x in l), l"
# the policy-gradient term alone, full-batch steps (every rollout of the
# round in one step, 3 epochs): the round's objective must rise
FULL="--num-epochs 3 --token-batch-size 96 --gradient-accumulation-steps 24 --learning-rate 0.01 --lr-scheduler-type constant --num-warmup-steps 0"
expect_status "one round, policy gradient alone, full-batch steps" 0 RLMK RL_OUT=full RL_ROUNDS=1 \
    RL_TRAIN_OPTS="$FULL --rl-beta 0 --rl-kl 0"
o0=$(objective imitation.gguf full/round-1/scored.jsonl); o1=$(objective full/round-1/sampler.gguf full/round-1/scored.jsonl)
check "it raises the round's objective, mean A log p over its rollouts ($o0 -> $o1)" $PY -c "assert $o1 > $o0, ($o0, $o1)"
# PPO's ratio clip at 0.2 stops a per-token network after a few updates: the
# ratio of rare tokens leaves [0.8, 1.2] at once. With the default small
# steps, the first round clipped moves its objective clearly less far than
# unclipped (why the default is the reference project's unclipped term):
# 0.6 as far on these draws, under 0.5 on others; the bound is 3/4
SMALL="--num-epochs 1 --token-batch-size 32 --gradient-accumulation-steps 1 --learning-rate 0.01 --lr-scheduler-type constant --num-warmup-steps 0 --rl-beta 0.1 --rl-kl 0.1"
expect_status "the first round with --rl-clip 0.2" 0 RLMK RL_OUT=clip RL_ROUNDS=1 RL_TRAIN_OPTS="$SMALL --rl-clip 0.2"
o0=$(objective imitation.gguf onp/round-1/scored.jsonl); o1=$(objective onp/round-1/sampler.gguf onp/round-1/scored.jsonl)
oc=$(objective clip/round-1/sampler.gguf onp/round-1/scored.jsonl)
check "clipped, it gains at most 3/4 as much ($o0 -> $oc; unclipped $o1)" \
    $PY -c "assert $o1 > $o0 and $oc - $o0 < ($o1 - $o0) * 3 / 4, ($o0, $oc, $o1)"
# the reward itself on fresh generations (held-out prompts, unseen seeds):
# printed, not asserted (two rounds of 96 rollouts move it by about as much
# as its sampling error)
held_reward() { # SAMPLER (relative to $TMP, for the same draws every run)
    printf 'sampling_pipelines:\n- name: p\n  processors:\n  - name: learned\n    params:\n      path: %s\n' "$1" > "$TMP/p.yaml"
    (cd "$TMP" && "$BIN/gen-candidates" -m "$M" -H p.yaml -n 24 --min-new-tokens 24 --seeds 1000-1031 -t 2 \
        "$D/heldout_prompts.jsonl" 2>/dev/null > held-gen.jsonl && $PY rare.py held-gen.jsonl)
}
echo "# held-out reward of 128 generations: imitation $(held_reward imitation.gguf), after two rounds $(held_reward onp/sampler.gguf)"
