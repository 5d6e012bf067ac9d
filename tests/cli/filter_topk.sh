# filter_topk.sh — filter-topk against an independent Python computation of
# the reference's scoring (its process_and_score.py), its
# options, pairs, errors, and the schemas of what it writes.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
FT="$BIN/filter-topk"
V="$ROOT/tests/scripts/validate_schema.py"

# The input: 5 prompts x 3 seeds x 6 heuristics; quality as quality.bt,
# as the reference's bradley_terry_rating only, null or absent; checks
# under asn's and the reference's names; diversity absent now and then;
# verifiable rewards on prompt p2 (mixed) and p4 seed 1 (all failed).
$PY - > "$TMP/in.jsonl" <<'PYEOF'
import json, random
random.seed(5)
for p in range(5):
    for seed in range(3):
        for h in range(6):
            r = {"id": "p%d/%012x/%d" % (p, h, seed), "prompt_id": "p%d" % p, "prompt": "Prompt %d" % p,
                 "seed": seed, "heuristic": {"name": "h%d" % h, "id": "%012x" % h, "processors": []},
                 "generation": "answer %d %d %d" % (p, seed, h), "keep_me": [p, h, {"x": None}]}
            k = random.random()
            if k < 0.6:
                r["quality"] = {"bt": round(random.gauss(0, 1), 6), "games": 3}
                r["bradley_terry_rating"] = r["quality"]["bt"]
            elif k < 0.8:
                r["bradley_terry_rating"] = random.gauss(0, 1)
            elif k < 0.9:
                r["quality"] = {"bt": None}
            if p % 2 == 0:
                r["checks"] = {"diversity": True, "verifiable": p == 2, "factual": False}
            else:
                r["incidence_vector"] = {"check_diversity": p == 1, "check_ifeval_or_math_or_gsm8k": False}
            if random.random() < 0.85:
                r["diversity"] = {"self_bleu": -1.0, "embedding_entropy": random.gauss(0.5, 0.2), "sample_count": 3}
            if p == 2:
                r["verifiable_reward"] = random.choice([1, 1.0, 0, None])
            if p == 4 and seed == 1:
                r["verifiable_reward"] = 0
            print(json.dumps(r))
PYEOF

# The reference's computation, written from process_and_score.py (numpy for
# the statistics), reading asn's names and the reference's. Prints the
# expected output records, or pairs with --pairs; options: top-k, sort key
# or weights a,b,c, grouping, ignore-verifiable.
cat > "$TMP/ref.py" <<'PYEOF'
import itertools, json, sys
import numpy as np
args = dict(a.split("=", 1) for a in sys.argv[2:])
top_k = int(args.get("top_k", 5))
group_by = args.get("group", "seed")
ignore = args.get("ignore") == "1"
pairs = args.get("pairs") == "1"
A = [0.1, 0.3, 0.5, 0.7, 0.9]; B = [0.5, 0.6, 0.7, 0.8, 0.9]; C = [0.1, 0.3, 0.5, 0.7, 0.9]
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]

def quality(r):
    q = r.get("quality")
    return q["bt"] if isinstance(q, dict) and "bt" in q else r.get("bradley_terry_rating")

def div_check(r):
    if isinstance(r.get("checks"), dict):
        return bool(r["checks"].get("diversity"))
    return bool((r.get("incidence_vector") or {}).get("check_diversity"))

def entropy(r):
    d = r.get("diversity")
    return d.get("embedding_entropy") if isinstance(d, dict) else None

qs = [quality(r) for r in recs if quality(r) is not None]
ds = [entropy(r) for r in recs if div_check(r) and entropy(r) is not None]
qm, qsd = (np.mean(qs), np.std(qs)) if qs else (0.0, 0.0)
dm, dsd = (np.mean(ds), np.std(ds)) if ds else (0.0, 0.0)
qsd = qsd if qsd > 1e-6 else 1.0
rs = [r["reward"] for r in recs if r.get("reward") is not None]
rm, rsd = (np.mean(rs), np.std(rs)) if rs else (0.0, 0.0)
rsd = rsd if rsd > 1e-6 else 1.0
rw = float(args.get("reward", 0))
dsd = dsd if dsd > 1e-6 else 1.0
groups = {}
for r in recs:
    key = (r.get("prompt_id", r["prompt"]), r["seed"] if group_by == "seed" else None)
    groups.setdefault(key, []).append(r)

def combine(q, d, ver, a, b, c):
    total, divisor = b * q, b
    if d is not None:
        total += a * d; divisor += a
    if ver:
        total += c * 1.0; divisor += c
    return total / divisor if divisor > 0 else 0

w = [float(x) for x in args.get("weights", "0.1,0.9,0.9").split(",")]
for key, gens in groups.items():
    ver = any(g.get("verifiable_reward") is not None for g in gens)
    if ver and not ignore:
        gens = [g for g in gens if g.get("verifiable_reward") == 1.0]
    if not gens:
        continue
    scored = []
    for g in gens:
        q = ((quality(g) if quality(g) is not None else qm) - qm) / qsd
        d = None
        if div_check(g):
            d = ((entropy(g) if entropy(g) is not None else dm) - dm) / dsd
        comb = {}
        for b, a, c in itertools.product(B, A, C):
            comb[f"a{a}_b{b}_c{c}"] = combine(q, d, ver, a, b, c)
        final = combine(q, d, ver, *w)
        z = ((g["reward"] if g.get("reward") is not None else rm) - rm) / rsd
        if rw > 0:  # the reward term, added last
            total, divisor = w[1] * q, w[1]
            if d is not None:
                total += w[0] * d; divisor += w[0]
            if ver:
                total += w[2]; divisor += w[2]
            final = (total + rw * z) / (divisor + rw)
        scored.append((g, q, d, comb, final, z))
    scored.sort(key=lambda x: x[4], reverse=True)
    if pairs:
        if len(scored) >= 2 and scored[0][4] > scored[-1][4]:
            print(json.dumps({"prompt": scored[0][0]["prompt"], "chosen": scored[0][0]["generation"],
                              "rejected": scored[-1][0]["generation"], "chosen_id": scored[0][0].get("id"),
                              "rejected_id": scored[-1][0].get("id"), "margin": scored[0][4] - scored[-1][4]}))
        continue
    for rank, (g, q, d, comb, final, z) in enumerate(scored[:top_k if top_k > 0 else None], 1):
        g = dict(g)
        g["score"] = {"quality": q, "diversity": d, "verifiable": 1.0 if ver else None,
                      "weights": {"quality": w[1], "diversity": w[0], "verifiable": w[2]},
                      "final": final, "combined_scores": comb}
        if rw > 0:
            g["score"] = {"quality": q, "diversity": d, "verifiable": 1.0 if ver else None, "reward": z,
                          "weights": {"quality": w[1], "diversity": w[0], "verifiable": w[2], "reward": rw},
                          "final": final, "combined_scores": comb}
        g["rank"] = rank
        print(json.dumps(g))
PYEOF

# compare GOT EXPECTED: same records in the same order, same keys in the
# same order, numbers within 1e-9 (the statistics are summed differently).
cat > "$TMP/cmp.py" <<'PYEOF'
import json, math, sys
got = [json.loads(l) for l in open(sys.argv[1])]
exp = [json.loads(l) for l in open(sys.argv[2])]
assert len(got) == len(exp), ("records", len(got), len(exp))
def same(a, b, path):
    if isinstance(b, float) or isinstance(a, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-9 * max(1, abs(b)), (path, a, b)
    elif isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b), (path, list(a), list(b))
        for k in b:
            same(a[k], b[k], path + "/" + k)
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s/%d" % (path, i))
    else:
        assert a == b and type(a) == type(b), (path, a, b)
for i, (g, e) in enumerate(zip(got, exp)):
    same(g, e, "record %d" % i)
PYEOF

ref() { $PY "$TMP/ref.py" "$@"; }

expect_status "filter-topk runs" 0 "$FT" "$TMP/in.jsonl"
cp "$TMP/out" "$TMP/got.jsonl"
ref "$TMP/in.jsonl" > "$TMP/exp.jsonl"
check "filter-topk equals the reference's computation (default: top 5, a0.1_b0.9_c0.9)" $PY "$TMP/cmp.py" "$TMP/got.jsonl" "$TMP/exp.jsonl"
expect_stderr "filter-topk says once, with a count, that groups without a verified generation are left out" '^filter-topk: 1 of [0-9]+ groups left out: none of its generations was verified correct \(verifiable reward 0; the first: prompt "p4" seed 1, [^ ]*in\.jsonl:[0-9]+\); --ignore-verifiable-filtering keeps them$'
check "... not as a warning, on one line" test "$(grep -c . "$TMP/err")" = 1
check "filter-topk: keys a{a}_b{b}_c{c} print as Python prints the floats" $PY -c "
import json; r = json.loads(open('$TMP/got.jsonl').readline()); k = list(r['score']['combined_scores'])
assert len(k) == 125 and k[0] == 'a0.1_b0.5_c0.1' and k[-1] == 'a0.9_b0.9_c0.9' and 'a0.1_b0.9_c0.9' in k, k[:3]"
check "filter-topk: unknown fields pass through untouched" $PY -c "
import json; r = json.loads(open('$TMP/got.jsonl').readline()); assert r['keep_me'][2] == {'x': None} and r['quality']['games'] == 3, r"

"$FT" -k 2 --sort-key a0.7_b0.6_c0.3 "$TMP/in.jsonl" > "$TMP/got2.jsonl" 2>/dev/null
ref "$TMP/in.jsonl" top_k=2 weights=0.7,0.6,0.3 > "$TMP/exp2.jsonl"
check "filter-topk --top-k 2 --sort-key a0.7_b0.6_c0.3" $PY "$TMP/cmp.py" "$TMP/got2.jsonl" "$TMP/exp2.jsonl"
printf 'quality: 0.8\ndiversity: 0.4\nverifiable: 0.25\n' > "$TMP/w.yaml"
"$FT" --weights "$TMP/w.yaml" --top-k 0 --group prompt "$TMP/in.jsonl" > "$TMP/got3.jsonl" 2>/dev/null
ref "$TMP/in.jsonl" top_k=0 weights=0.4,0.8,0.25 group=prompt > "$TMP/exp3.jsonl"
check "filter-topk --weights FILE --top-k 0 (all) --group prompt" $PY "$TMP/cmp.py" "$TMP/got3.jsonl" "$TMP/exp3.jsonl"
# score-reward's reward as a fourth weighted term (some records without one)
$PY - "$TMP/in.jsonl" > "$TMP/inr.jsonl" <<'PYEOF'
import json, random, sys
random.seed(7)
for l in open(sys.argv[1]):
    r = json.loads(l)
    if random.random() < 0.85:
        r["reward"] = round(random.gauss(1.5, 2.0), 6)
    print(json.dumps(r))
PYEOF
printf 'quality: 0.8\ndiversity: 0.4\nverifiable: 0.25\nreward: 1.5\n' > "$TMP/wr.yaml"
"$FT" --weights "$TMP/wr.yaml" --top-k 3 "$TMP/inr.jsonl" > "$TMP/got5.jsonl" 2>/dev/null
ref "$TMP/inr.jsonl" top_k=3 weights=0.4,0.8,0.25 reward=1.5 > "$TMP/exp5.jsonl"
check "filter-topk --weights with reward: z-normalized reward, added last" $PY "$TMP/cmp.py" "$TMP/got5.jsonl" "$TMP/exp5.jsonl"
ref "$TMP/inr.jsonl" top_k=3 weights=0.4,0.8,0.25 > "$TMP/exp5b.jsonl"
check "  ... and the reward changes the ranking (the test can fail)" sh -c "! $PY '$TMP/cmp.py' '$TMP/got5.jsonl' '$TMP/exp5b.jsonl'"
"$FT" --weights "$TMP/w.yaml" --top-k 0 --group prompt "$TMP/inr.jsonl" > "$TMP/got6.jsonl" 2>/dev/null
check "  ... without a reward weight the rewards change nothing" $PY -c "
import json
a = [json.loads(l) for l in open('$TMP/got6.jsonl')]
b = [json.loads(l) for l in open('$TMP/got3.jsonl')]
for r in a:
    r.pop('reward', None)
assert a == b and len(a) > 10"
"$FT" --ignore-verifiable-filtering "$TMP/in.jsonl" > "$TMP/got4.jsonl" 2>"$TMP/err4"
ref "$TMP/in.jsonl" ignore=1 > "$TMP/exp4.jsonl"
check "filter-topk --ignore-verifiable-filtering" $PY "$TMP/cmp.py" "$TMP/got4.jsonl" "$TMP/exp4.jsonl"
check "filter-topk --ignore-verifiable-filtering skips no group" sh -c "! grep -q 'left out' '$TMP/err4'"

"$FT" --pairs "$TMP/in.jsonl" > "$TMP/pairs.jsonl" 2>"$TMP/perr"
ref "$TMP/in.jsonl" pairs=1 > "$TMP/pexp.jsonl"
check "filter-topk --pairs: best vs worst of each group, with the margin" $PY "$TMP/cmp.py" "$TMP/pairs.jsonl" "$TMP/pexp.jsonl"
check "filter-topk --pairs: TRL's prompt/chosen/rejected columns are strings" $PY -c "
import json
for l in open('$TMP/pairs.jsonl'):
    r = json.loads(l); assert all(isinstance(r[k], str) for k in ('prompt', 'chosen', 'rejected')) and r['margin'] > 0, r"

# the same through a pipe (standard input is spooled and read twice)
cat "$TMP/in.jsonl" | "$FT" > "$TMP/pipe.jsonl" 2>/dev/null
check "filter-topk: standard input through a pipe gives the same output" cmp "$TMP/pipe.jsonl" "$TMP/got.jsonl"
"$FT" < "$TMP/in.jsonl" > "$TMP/redir.jsonl" 2>/dev/null
check "filter-topk: standard input from a file gives the same output" cmp "$TMP/redir.jsonl" "$TMP/got.jsonl"
head -45 "$TMP/in.jsonl" > "$TMP/part1.jsonl"
tail -n +46 "$TMP/in.jsonl" > "$TMP/part2.jsonl"
"$FT" "$TMP/part1.jsonl" - < "$TMP/part2.jsonl" > "$TMP/two.jsonl" 2>/dev/null
check "filter-topk: a file and standard input read as one stream" cmp "$TMP/two.jsonl" "$TMP/got.jsonl"
"$FT" "$TMP/in.jsonl" > "$TMP/again.jsonl" 2>/dev/null
check "filter-topk: deterministic" cmp "$TMP/again.jsonl" "$TMP/got.jsonl"

# schemas
check "filter-topk output validates (annotations-score schema)" $PY "$V" -q annotations-score "$TMP/got.jsonl"
check "filter-topk --pairs output validates (annotations-pair schema)" $PY "$V" -q annotations-pair "$TMP/pairs.jsonl"

# edge cases: one record, ties, no scores at all, empty input
printf '{"prompt":"solo","seed":0,"generation":"g"}\n' > "$TMP/one.jsonl"
expect_status "filter-topk: a group of one record, without any score" 0 "$FT" "$TMP/one.jsonl"
check "filter-topk: ... is kept with normalized quality 0 and rank 1" $PY -c "
import json; r = json.loads(open('$TMP/out').read())
assert r['rank'] == 1 and r['score']['quality'] == 0 and r['score']['diversity'] is None and r['score']['final'] == 0, r"
expect_status "filter-topk --pairs: a group of one gives no pair" 0 "$FT" --pairs "$TMP/one.jsonl"
check "filter-topk --pairs: ... and says so" sh -c "[ ! -s '$TMP/out' ] && grep -q 'gave no pair' '$TMP/err'"
printf '{"prompt":"t","seed":0,"id":"x","bradley_terry_rating":0.5}\n{"prompt":"t","seed":0,"id":"y","bradley_terry_rating":0.5}\n{"prompt":"t","seed":0,"id":"z","bradley_terry_rating":0.5}\n' > "$TMP/ties.jsonl"
"$FT" -k 2 "$TMP/ties.jsonl" > "$TMP/ties.out" 2>/dev/null
check "filter-topk: equal scores keep the input order" $PY -c "
import json; ids = [json.loads(l)['id'] for l in open('$TMP/ties.out')]; assert ids == ['x', 'y'], ids"
printf '{"prompt":"t","seed":0,"id":"x","quality":{"bt":null}}\n{"prompt":"t","seed":0,"id":"y","quality":null,"bradley_terry_rating":null}\n' > "$TMP/nulls.jsonl"
expect_status "filter-topk: null (NaN) quality scores count as missing" 0 "$FT" "$TMP/nulls.jsonl"
check "filter-topk: ... normalized to 0" $PY -c "
import json; rs = [json.loads(l) for l in open('$TMP/out')]; assert [r['score']['quality'] for r in rs] == [0.0, 0.0], rs"
: > "$TMP/empty.jsonl"
expect_status "filter-topk: empty input" 0 "$FT" "$TMP/empty.jsonl"
check "filter-topk: empty input, empty output" test ! -s "$TMP/out"
expect_status "filter-topk: empty standard input" 0 sh -c "printf '' | '$FT'"

# errors: they name the file, line and field; nothing is written before them
printf '{"prompt":"a","seed":0,"bradley_terry_rating":1}\n{"prompt":"a","bradley_terry_rating":2}\n' > "$TMP/noseed.jsonl"
expect_status "filter-topk: a missing seed is an error" 1 "$FT" "$TMP/noseed.jsonl"
expect_stderr "filter-topk: ... naming file, line and field" 'noseed.jsonl:2: field "seed" is missing'
check "filter-topk: ... before anything is written" test ! -s "$TMP/out"
expect_status "filter-topk --group prompt needs no seed" 0 "$FT" --group prompt "$TMP/noseed.jsonl"
printf '{"prompt":"a","seed":0,"quality":{"bt":"high"}}\n' > "$TMP/badq.jsonl"
expect_status "filter-topk: a quality that is not a number is an error" 1 "$FT" "$TMP/badq.jsonl"
expect_stderr "filter-topk: ... naming it" 'badq.jsonl:1: field "quality.bt" must be a number or null, not string'
printf '{"prompt":"a","seed":0,"bradley_terry_rating":1}\n{"prompt":"a","seed":0,"verifiable_reward":"yes"}\n{"prompt":"b","seed":0}\n' > "$TMP/badv.jsonl"
expect_status "filter-topk --skip-invalid leaves bad records out" 0 "$FT" --skip-invalid "$TMP/badv.jsonl"
expect_stderr "filter-topk --skip-invalid: ... with a warning naming them" 'badv.jsonl:2: field "verifiable_reward"'
check "filter-topk --skip-invalid: the others are written" $PY -c "
import json; rs = [json.loads(l) for l in open('$TMP/out')]; assert [r['prompt'] for r in rs] == ['a', 'b'], rs"
printf '{"prompt":"a","seed":0}\n{"prompt":"b","seed":0}\n{"prompt":"a","seed":1}\n' > "$TMP/split.jsonl"
expect_status "filter-topk: a prompt's records need not be contiguous" 0 "$FT" "$TMP/split.jsonl"
check "filter-topk: ... they are grouped: a's records first, then b's" $PY -c "
import json; rs = [json.loads(l) for l in open('$TMP/out')]; assert [r['prompt'] for r in rs] == ['a', 'a', 'b'], rs"
printf '{"prompt":"a","seed":0,"generation":"x"}\n{"prompt":"a","seed":0}\n' > "$TMP/nogen.jsonl"
expect_status "filter-topk --pairs: a missing generation is an error" 1 "$FT" --pairs "$TMP/nogen.jsonl"
expect_stderr "filter-topk --pairs: ... naming it" 'nogen.jsonl:2: field "generation" is missing'
expect_status "filter-topk: unknown sort key" 2 "$FT" --sort-key a0.2_b0.9_c0.9 "$TMP/in.jsonl"
expect_stderr "filter-topk: ... says what a key looks like" 'not a combined score'
expect_status "filter-topk: --sort-key and --weights together" 2 "$FT" --sort-key a0.1_b0.9_c0.9 --weights "$TMP/w.yaml" "$TMP/in.jsonl"
printf 'quality: 0.8\nnovelty: 1\n' > "$TMP/badw.yaml"
expect_status "filter-topk: an unknown weight is an error" 1 "$FT" --weights "$TMP/badw.yaml" "$TMP/in.jsonl"
expect_stderr "filter-topk: ... naming file, line and key, and the weights there are" 'badw.yaml:2:[0-9]+: unknown key "novelty" \(the weights are quality, diversity, verifiable, reward\)$'
printf 'quality: 0.8\nself_bleu: 1\n' > "$TMP/badw2.yaml"
expect_status "filter-topk: a score that is not weighed (self_bleu) is not a weight" 1 "$FT" --weights "$TMP/badw2.yaml" "$TMP/in.jsonl"
expect_status "filter-topk: negative --top-k" 2 "$FT" -k -1 "$TMP/in.jsonl"
