# rank_bt.sh — rank-bt end to end. No instruction-tuned judge exists here,
# so the pairwise machinery runs on tiny judges whose answers are known
# (tests/data/rank/, written by tests/fixtures/make_bt_fixtures.py): one
# that always answers "A" and one that prefers answers with more "!". The
# reference-likelihood judge runs on tiny-spm-q8_0 and is checked against
# bin/perplexity's numbers.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
RB="$BIN/rank-bt"
V="$ROOT/tests/scripts/validate_schema.py"
JA="$ROOT/tests/data/rank/judge-always-a.gguf"
JB="$ROOT/tests/data/rank/judge-bang.gguf"
JN="$ROOT/tests/data/rank/judge-no-b.gguf"
JNAN="$ROOT/tests/data/rank/judge-nan.gguf"
TINY="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"

# candidates: 2 prompts x 2 seeds x 7 heuristics; heuristic h answers with
# h "!" then dots, all six characters long
$PY - > "$TMP/bang.jsonl" <<'PYEOF'
import json
for p in range(2):
    for seed in (3, 8):
        for h in (4, 0, 6, 2, 5, 1, 3):
            print(json.dumps({"id": "p%d/%012x/%d" % (p, h, seed), "prompt_id": "p%d" % p,
                              "prompt": "Say something, %d." % p, "seed": seed,
                              "heuristic": {"name": "h%d" % h, "id": "%012x" % h, "processors": []},
                              "generation": "!" * h + "." * (6 - h), "bangs": h, "extra": {"keep": [1, None]}}))
PYEOF

# --------------------------------------------------------- pairwise judges

expect_status "rank-bt pairwise with an always-A judge" 0 "$RB" -j pairwise -m "$JA" "$TMP/bang.jsonl"
check "rank-bt: position debiasing: a judge that always says A scores every game 0.5" $PY - "$TMP/out" <<'PYEOF'
import json, math, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert len(rs) == 28
rounds = math.ceil(math.log2(7)) + 1  # every round: a game worth 0.5 or a bye worth 0.5
for r in rs:
    q = r["quality"]
    assert q["swiss_points"] == 0.5 * rounds, q
    assert q["bt"] == 0 and r["bradley_terry_rating"] == 0, q
    assert q["judge"]["kind"] == "pairwise" and q["judge"]["model"] == "judge-always-a" and q["judge"]["template"] == "built-in", q
PYEOF

expect_status "rank-bt pairwise with the '!' judge" 0 "$RB" -j pairwise -m "$JB" --extra-rounds 2 -v "$TMP/bang.jsonl"
cp "$TMP/out" "$TMP/bang.out"
check "rank-bt: the ratings order each group by its judge's preference (more '!')" $PY - "$TMP/bang.out" <<'PYEOF'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in rs:
    groups.setdefault((r["prompt_id"], r["seed"]), []).append((r["bangs"], r["quality"]["bt"]))
assert len(groups) == 4
for k, g in groups.items():
    g.sort()
    bts = [b for _, b in g]
    assert all(x < y for x, y in zip(bts, bts[1:])), (k, g)
    assert abs(sum(bts)) < 1e-9, (k, "not mean-centered", sum(bts))
PYEOF
expect_stderr "rank-bt -v reports judge and rating times" 'judge: [0-9]+ pairs judged in [0-9.]+ s; pairing and ratings: [0-9.]+ s'
check "rank-bt: records keep their order and unknown fields" $PY -c "
import json
a = [json.loads(l) for l in open('$TMP/bang.jsonl')]; b = [json.loads(l) for l in open('$TMP/bang.out')]
assert [x['id'] for x in a] == [x['id'] for x in b]
for x, y in zip(a, b):
    assert {k: v for k, v in y.items() if k not in ('quality', 'bradley_terry_rating')} == x, y"
check "rank-bt output validates (annotations-quality schema)" $PY "$V" -q --format jsonl annotations-quality "$TMP/bang.out"

# determinism: threads, batch size, repeated runs
"$RB" -j pairwise -m "$JB" --extra-rounds 2 -t 1 -b 1 "$TMP/bang.jsonl" > "$TMP/bang1.out" 2>/dev/null
check "rank-bt: the same output with 1 thread and batch 1" cmp "$TMP/bang.out" "$TMP/bang1.out"
"$RB" -j pairwise -m "$JB" --extra-rounds 2 -b 5 "$TMP/bang.jsonl" > "$TMP/bang2.out" 2>/dev/null
check "rank-bt: the same output with batch 5" cmp "$TMP/bang.out" "$TMP/bang2.out"
cat "$TMP/bang.jsonl" | "$RB" -j pairwise -m "$JB" --extra-rounds 2 > "$TMP/bang3.out" 2>/dev/null
check "rank-bt: the same output from standard input" cmp "$TMP/bang.out" "$TMP/bang3.out"
"$RB" -j pairwise -m "$JB" --extra-rounds 2 --seed 5 "$TMP/bang.jsonl" > "$TMP/seed5.out" 2>/dev/null
"$RB" -j pairwise -m "$JB" --extra-rounds 2 --seed 5 "$TMP/bang.jsonl" > "$TMP/seed5b.out" 2>/dev/null
check "rank-bt: the same --seed, the same output" cmp "$TMP/seed5.out" "$TMP/seed5b.out"
check "rank-bt: another --seed pairs round 1 differently" sh -c "! cmp -s '$TMP/bang.out' '$TMP/seed5.out'"

# the template: the shipped file is the built-in one; a custom one is used
"$RB" -j pairwise -m "$JB" --extra-rounds 2 --judge-template "$ROOT/configs/judges/pairwise.txt" "$TMP/bang.jsonl" > "$TMP/tf.out" 2>/dev/null
check "rank-bt: --judge-template configs/judges/pairwise.txt rates as the built-in template" $PY -c "
import json
a = [json.loads(l)['quality'] for l in open('$TMP/bang.out')]; b = [json.loads(l)['quality'] for l in open('$TMP/tf.out')]
assert all(x['bt'] == y['bt'] and y['judge']['template'] == 'pairwise.txt' for x, y in zip(a, b))"
printf 'Which is better?\n{input}\nA: {response_a}\nB: {response_b}\nAnswer A or B.\n' > "$TMP/t.txt"
expect_status "rank-bt: a custom template" 0 "$RB" -j pairwise -m "$JB" --judge-template "$TMP/t.txt" "$TMP/bang.jsonl"
check "rank-bt: ... changes the judge's input (other ratings)" sh -c "! cmp -s '$TMP/out' '$TMP/bang.out'"
printf 'Which?\n{input}\n{response_a}\n{answer_b}\n' > "$TMP/bad.txt"
expect_status "rank-bt: a template with an unknown placeholder" 1 "$RB" -j pairwise -m "$JB" --judge-template "$TMP/bad.txt" "$TMP/bang.jsonl"
expect_stderr "rank-bt: ... names the file, line and placeholder" 'bad.txt:4: unknown placeholder "\{answer_b\}"'
expect_status "rank-bt: a judge whose vocabulary has no token \"B\"" 1 "$RB" -j pairwise -m "$JN" "$TMP/bang.jsonl"
expect_stderr "rank-bt: ... says so" 'no single token "B"'

# NaN scores: a judge whose outputs are not numbers decides no game
expect_status "rank-bt: a judge with NaN outputs" 0 "$RB" -j pairwise -m "$JNAN" "$TMP/bang.jsonl"
expect_stderr "rank-bt: ... leaves its games out, with a warning" '[0-9]+ games left out: the judge.s outputs were not finite'
check "rank-bt: ... so nobody has a rating or points from games" $PY -c "
import json
for l in open('$TMP/out'):
    r = json.loads(l); q = r['quality']
    assert q['games'] == 0 and q['bt'] is None and 'bradley_terry_rating' not in r and q['swiss_points'] % 0.5 == 0, q"

# --group prompt: one tournament of 14 players per prompt
expect_status "rank-bt --group prompt" 0 "$RB" -j pairwise -m "$JA" --group prompt "$TMP/bang.jsonl"
check "rank-bt --group prompt: ceil(log2 14) + 1 rounds for every player" $PY -c "
import json
assert all(json.loads(l)['quality']['swiss_points'] == 0.5 * 5 for l in open('$TMP/out'))"

# ----------------------------------------------------- reference likelihood

# candidate records whose tokens continue the prompt "Hello world": what
# perplexity says of the whole text is what reference-ll must find
printf '{"text":"Hello world"}\n{"text":"Hello world, how are you today?"}\n{"text":"Hello world. The end"}\n' \
    | "$BIN/perplexity" -m "$TINY" > "$TMP/ppl.jsonl"
$PY - "$TMP/ppl.jsonl" > "$TMP/ll.jsonl" <<'PYEOF'
import json, sys
p, a, b = [json.loads(l) for l in open(sys.argv[1])]
k = len(p["tokens"])
assert a["tokens"][:k] == p["tokens"] and b["tokens"][:k] == p["tokens"], "the prompt's tokens must be a prefix"
def cand(h, toks, lps, seed=0, **kw):
    r = {"id": "hw/%012x/%d" % (h, seed), "prompt_id": "hw", "prompt": "Hello world", "system": None,
         "heuristic": {"name": "h%d" % h, "id": "%012x" % h, "processors": []}, "seed": seed,
         "generation": "text %d" % h, "tokens": toks, "n_tokens": len(toks), "finish": "length",
         "model": {"name": "tiny", "sha256": "0" * 64},
         "settings": {"system": None, "chat_template": "none", "min_new_tokens": 0, "max_new_tokens": 16, "stop": []},
         "expect": sum(lps) / len(lps) if lps else None}
    r.update(kw)
    return r
print(json.dumps(cand(1, a["tokens"][k:], a["logprobs"][k:], generation=", how are you today?")))
print(json.dumps(cand(2, b["tokens"][k:], b["logprobs"][k:], generation=". The end")))
print(json.dumps(cand(3, a["tokens"][k:k + 2], a["logprobs"][k:k + 2], generation=", how")))
print(json.dumps(cand(4, [], [], generation="")))  # an empty answer
PYEOF
expect_status "rank-bt reference-ll" 0 "$RB" -j reference-ll -m "$TINY" --tau 10 "$TMP/ll.jsonl"
cp "$TMP/out" "$TMP/ll.out"
# (perplexity's log-softmax is in double; the judge's sums float exps in
# double, as the sampling library: they agree to ~1e-7 of the magnitude)
check "rank-bt reference-ll: mean log-likelihoods equal perplexity's numbers (1e-6 relative)" $PY - "$TMP/ll.out" <<'PYEOF'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
for r in rs:
    m, e = r["quality"]["mean_logprob"], r["expect"]
    assert (m is None and e is None) or abs(m - e) <= 1e-6 * max(1, abs(e)), (m, e)
PYEOF
check "rank-bt reference-ll: tokens that spell their generation raise no warning" test ! -s "$TMP/err"
$PY -c "
import json; r = json.loads(open('$TMP/ll.jsonl').readline()); r['generation'] = 'something else'; print(json.dumps(r))" > "$TMP/misspelt.jsonl"
expect_status "rank-bt reference-ll: tokens that do not spell the generation" 0 "$RB" -j reference-ll -m "$TINY" "$TMP/misspelt.jsonl"
expect_stderr "rank-bt reference-ll: ... are scored, with one warning in plain words" '^rank-bt: warning: 1 record: the judge model.s tokenizer reads its "tokens" as another text than its "generation"'
# a generation cut inside a character by the token limit: gen-candidates
# wrote the cut bytes as U+FFFD (Python's decode "replace"); not a mismatch
$PY -c "
import json; r = json.loads(open('$TMP/ll.jsonl').readline())
r['tokens'] = $("$BIN/tokenize" -m "$TINY" --no-bos "a 𝄞")[:-1]; r['generation'] = 'a \\ufffd'; r['n_tokens'] = len(r['tokens']); r['finish'] = 'length'
print(json.dumps(r))" > "$TMP/cut.jsonl"
expect_status "rank-bt reference-ll: a generation cut inside a character" 0 "$RB" -j reference-ll -m "$TINY" "$TMP/cut.jsonl"
check "... raises no warning (its tokens spell it as written)" test ! -s "$TMP/err"
check "rank-bt reference-ll: an empty answer (no likelihood) loses every game" $PY -c "
import json
rs = [json.loads(l)['quality'] for l in open('$TMP/ll.out')]
q = rs[3]; assert q['mean_logprob'] is None and q['bt'] == min(r['bt'] for r in rs), rs"
check "rank-bt reference-ll: ratings follow the likelihoods" $PY -c "
import json
rs = [json.loads(l)['quality'] for l in open('$TMP/ll.out')][:3]
order = sorted(range(3), key=lambda i: rs[i]['mean_logprob']); bts = [rs[i]['bt'] for i in order]
assert bts == sorted(bts), rs"
check "rank-bt reference-ll output validates (candidate and annotations-quality schemas)" \
    sh -c "$PY '$V' -q --format jsonl candidate '$TMP/ll.out' && $PY '$V' -q --format jsonl annotations-quality '$TMP/ll.out'"

# two players: two games of score s = sigmoid((s_a - s_b) / tau) each
head -2 "$TMP/ll.jsonl" > "$TMP/two.jsonl"
for method in mle reference; do
    "$RB" -j reference-ll -m "$TINY" --tau 10 --bt-method $method "$TMP/two.jsonl" > "$TMP/two.$method" 2>/dev/null
done
check "rank-bt reference-ll, two players: Swiss points, and the ratings of both fits" $PY - "$TMP/two.mle" "$TMP/two.reference" <<'PYEOF'
import json, math, sys
a, b = [json.loads(l)["quality"] for l in open(sys.argv[1])]
s = 1 / (1 + math.exp(-(a["mean_logprob"] - b["mean_logprob"]) / 10))
assert a["games"] == b["games"] == 2 and abs(a["swiss_points"] - 2 * s) < 1e-12 and abs(b["swiss_points"] - 2 * (1 - s)) < 1e-12
sig = lambda x: 1 / (1 + math.exp(-x))
# the MLE with the prior (0.1 pseudo-games drawn against rating 0): symmetric, gradient 0
r = a["bt"]
assert abs(b["bt"] + r) < 1e-12 and abs(2 * (s - sig(2 * r)) + 0.1 * (0.5 - sig(r))) < 1e-9, (a, b)
# the reference's 1000 gradient steps, transcribed
ra, rb = 0.0, 0.0
for _ in range(1000):
    g = 2 * (s - sig(max(-35, min(35, ra - rb))))
    ra, rb = ra + 0.05 * g, rb - 0.05 * g
m = (ra + rb) / 2
a, b = [json.loads(l)["quality"] for l in open(sys.argv[2])]
assert a["bt_method"] == "reference" and abs(a["bt"] - (ra - m)) < 1e-12 and abs(b["bt"] - (rb - m)) < 1e-12, (a, ra - m)
PYEOF

# without tokens (or with --retokenize) the generation is tokenized alone
$PY - "$TMP/ll.jsonl" > "$TMP/notok.jsonl" <<'PYEOF'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
r["generation"] = "how are you"
del r["tokens"]
print(json.dumps(r))
PYEOF
"$BIN/tokenize" -m "$TINY" --no-bos "how are you" > "$TMP/gen.ids"
$PY -c "
import json
r = json.loads(open('$TMP/notok.jsonl').read()); r['tokens'] = json.load(open('$TMP/gen.ids')); r['id'] = 'hw/000000000009/0'
print(json.dumps(r)); r['tokens'] = [5, 6]; r['id'] = 'hw/00000000000a/0'; print(json.dumps(r))" > "$TMP/withtok.jsonl"
"$RB" -j reference-ll -m "$TINY" "$TMP/notok.jsonl" > "$TMP/notok.out" 2>/dev/null
"$RB" -j reference-ll -m "$TINY" "$TMP/withtok.jsonl" > "$TMP/withtok.out" 2>/dev/null
"$RB" -j reference-ll -m "$TINY" --retokenize "$TMP/withtok.jsonl" > "$TMP/retok.out" 2>/dev/null
check "rank-bt reference-ll: a record without tokens is scored on its tokenized generation; --retokenize ignores tokens" $PY -c "
import json
a = json.loads(open('$TMP/notok.out').read())['quality']['mean_logprob']
b, c = [json.loads(l)['quality']['mean_logprob'] for l in open('$TMP/withtok.out')]
d, e = [json.loads(l)['quality']['mean_logprob'] for l in open('$TMP/retok.out')]
assert a == b == d == e and c != b, (a, b, c, d, e)"

# ------------------------------------------------------------ edge cases

printf '{"prompt":"alone","seed":0,"generation":"only one","keep":true}\n' > "$TMP/one.jsonl"
expect_status "rank-bt: a group of one record" 0 "$RB" -j pairwise -m "$JA" "$TMP/one.jsonl"
check "rank-bt: ... plays no game: bt null, no bradley_terry_rating" $PY -c "
import json; r = json.loads(open('$TMP/out').read()); q = r['quality']
assert q['bt'] is None and q['games'] == 0 and q['swiss_points'] == 0 and 'bradley_terry_rating' not in r and r['keep'], r"
check "rank-bt: ... and validates" $PY "$V" -q --format jsonl annotations-quality "$TMP/out"
: > "$TMP/empty.jsonl"
expect_status "rank-bt: empty input" 0 "$RB" -j pairwise -m "$JA" "$TMP/empty.jsonl"
check "rank-bt: empty input, empty output" test ! -s "$TMP/out"

printf '{"prompt":"q","seed":0,"generation":"a"}\n{"prompt":"q","seed":0,"generation":"b"}\n{"prompt":"q","seed":0}\n' > "$TMP/nogen.jsonl"
expect_status "rank-bt: a missing generation is an error" 1 "$RB" -j pairwise -m "$JA" "$TMP/nogen.jsonl"
expect_stderr "rank-bt: ... naming the file, line and field" 'nogen.jsonl:3: field "generation" is missing'
check "rank-bt: ... and nothing half-done is written" test ! -s "$TMP/out"
expect_status "rank-bt --skip-invalid leaves it out" 0 "$RB" -j pairwise -m "$JA" --skip-invalid "$TMP/nogen.jsonl"
check "rank-bt --skip-invalid: the others are rated" $PY -c "
import json; rs = [json.loads(l) for l in open('$TMP/out')]; assert [r['generation'] for r in rs] == ['a', 'b'] and rs[0]['quality']['games'] == 2, rs"
printf '{"prompt":"q","seed":0,"generation":"a"}\n{"prompt":"q","generation":"b"}\n' > "$TMP/noseed.jsonl"
expect_status "rank-bt: a missing seed is an error" 1 "$RB" -j pairwise -m "$JA" "$TMP/noseed.jsonl"
expect_stderr "rank-bt: ... naming it" 'noseed.jsonl:2: field "seed" is missing'
expect_status "rank-bt --group prompt needs no seed" 0 "$RB" -j pairwise -m "$JA" --group prompt "$TMP/noseed.jsonl"
printf '{"prompt_id":"x","seed":0,"generation":"a"}\n' > "$TMP/noprompt.jsonl"
expect_status "rank-bt: a missing prompt text is an error" 1 "$RB" -j pairwise -m "$JA" "$TMP/noprompt.jsonl"
expect_stderr "rank-bt: ... naming it" 'noprompt.jsonl:1: field "prompt" is missing'
$PY -c "
import json; r = json.loads(open('$TMP/ll.jsonl').readline()); r['tokens'] = [1, 99999]; print(json.dumps(r))" > "$TMP/badtok.jsonl"
expect_status "rank-bt reference-ll: a token id outside the judge's vocabulary" 1 "$RB" -j reference-ll -m "$TINY" "$TMP/badtok.jsonl"
expect_stderr "rank-bt reference-ll: ... names the line and field" 'badtok.jsonl:1: field "tokens": 99999 is not a token id'
$PY -c "
import json; r = json.loads(open('$TMP/ll.jsonl').readline()); r['settings']['chat_template'] = 'nosuch'; print(json.dumps(r))" > "$TMP/badct.jsonl"
expect_status "rank-bt reference-ll: an unknown chat template in the settings" 1 "$RB" -j reference-ll -m "$TINY" "$TMP/badct.jsonl"
expect_stderr "rank-bt reference-ll: ... names it" 'badct.jsonl:1: field "settings.chat_template": unknown chat template "nosuch"'
$PY -c "
import json; r = json.loads(open('$TMP/ll.jsonl').readline()); r['tokens'] = r['tokens'] * 60; print(json.dumps(r))" > "$TMP/long.jsonl"
expect_status "rank-bt reference-ll: an answer longer than the judge's context" 1 "$RB" -j reference-ll -m "$TINY" "$TMP/long.jsonl"
expect_stderr "rank-bt reference-ll: ... says so" "long.jsonl:1: prompt and answer are [0-9]+ tokens, more than the judge model's context of 256"
printf '{"prompt":"a","seed":0,"generation":"x"}\n{"prompt":"b","seed":0,"generation":"y"}\n{"prompt":"a","seed":0,"generation":"z"}\n' > "$TMP/split.jsonl"
expect_status "rank-bt: a prompt's records need not be contiguous" 0 "$RB" -j pairwise -m "$JA" "$TMP/split.jsonl"
check "rank-bt: ... they are grouped (a, a, b) and a's two play each other" $PY -c "
import json; rs = [json.loads(l) for l in open('$TMP/out')]
assert [r['generation'] for r in rs] == ['x', 'z', 'y'], rs
assert rs[0]['quality']['games'] >= 1 and rs[2]['quality']['bt'] is None, rs"

expect_status "rank-bt: --judge is required" 2 "$RB" -m "$JA" "$TMP/one.jsonl"
expect_status "rank-bt: an unknown judge" 2 "$RB" -j oracle -m "$JA" "$TMP/one.jsonl"
expect_status "rank-bt: --judge-model is required" 2 "$RB" -j pairwise "$TMP/one.jsonl"
expect_status "rank-bt: --tau must be positive" 2 "$RB" -j reference-ll -m "$TINY" --tau 0 "$TMP/one.jsonl"
expect_status "rank-bt: --judge-template is for the pairwise judge" 2 "$RB" -j reference-ll -m "$TINY" --judge-template "$TMP/t.txt" "$TMP/one.jsonl"
expect_status "rank-bt: an unknown --bt-method" 2 "$RB" -j pairwise -m "$JA" --bt-method newton "$TMP/one.jsonl"
expect_status "rank-bt: a missing judge model file" 1 "$RB" -j pairwise -m "$TMP/nope.gguf" "$TMP/one.jsonl"
expect_stderr "rank-bt: ... is named" "nope.gguf"
