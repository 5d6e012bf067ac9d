# score_diversity.sh — score-diversity on hand-made candidates
# (tests/data/diversity/, written by make_candidates.py there): grouping by
# (prompt, heuristic), groups of one, pass-through, the reference's record
# format, determinism, schemas, and the errors. The numbers themselves are
# checked against sacrebleu and numpy in tests/unit/test_diversity.c.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$DATA/models/tiny-spm-q8_0.gguf"
SD="$BIN/score-diversity"
D="$DATA/diversity"
PY=/usr/bin/python3
V="$ROOT/tests/scripts/validate_schema.py"

expect_status "score-diversity runs" 0 "$SD" -m "$M" "$D/candidates.jsonl"
cp "$TMP/out" "$TMP/c.jsonl"
expect_stderr "score-diversity counts the groups of one on stderr" "1 group of one record: diversity null"
check "output is valid against diversity.schema.json" $PY "$V" diversity "$TMP/c.jsonl"
check "output is still a valid candidate record" $PY "$V" candidate "$TMP/c.jsonl"
check "groups by (prompt, heuristic) across seeds, every other field and the order unchanged" $PY - "$D/candidates.jsonl" "$TMP/c.jsonl" <<'PYEOF'
import json, math, sys
inp = [json.loads(l) for l in open(sys.argv[1])]
out = [json.loads(l) for l in open(sys.argv[2])]
assert len(inp) == len(out)
for a, b in zip(inp, out):
    d = b.pop("diversity")
    assert a == b, (a, b)
    a["diversity"] = d
groups = {}
for r in inp:
    groups.setdefault((r["prompt_id"], r["heuristic"]["id"]), []).append(r)
sizes = sorted(len(g) for g in groups.values())
assert sizes == [1, 2, 2, 3], sizes
for g in groups.values():
    ds = [r["diversity"] for r in g]
    assert all(d == ds[0] for d in ds), ds
    if len(g) == 1:
        assert ds[0] is None
    else:
        assert ds[0]["sample_count"] == len(g)
# identical generations: BLEU 100, one eigenvalue (entropy 0 -> log floor)
same = [g for g in groups.values() if len(g) == 2 and g[0]["prompt_id"] == "p1"][0][0]["diversity"]
assert abs(same["self_bleu"] - math.log(100)) < 1e-9 and abs(same["embedding_entropy"] - math.log(1e-9)) < 1e-9, same
assert same["distinct_1"] == 0.5
# "" vs "hi there": no match, log(1e-9); no 3-grams at all
p2 = [r for r in inp if r["prompt_id"] == "p2"][0]["diversity"]
assert abs(p2["self_bleu"] - math.log(1e-9)) < 1e-9 and p2["distinct_3"] is None and p2["distinct_1"] == 1.0, p2
three = [g for g in groups.values() if len(g) == 3][0][0]["diversity"]
assert -20.8 < three["embedding_entropy"] <= math.log(math.log2(3)) + 1e-9, three
PYEOF

# the same numbers whatever the threads and the batching of embeddings
"$SD" -m "$M" -t 1 "$D/candidates.jsonl" > "$TMP/t1.jsonl" 2>/dev/null
"$SD" -m "$M" -t 2 --batch-tokens 1 "$D/candidates.jsonl" > "$TMP/t2.jsonl" 2>/dev/null
check "deterministic: same bytes with 1 or 2 threads, one text or all per batch" cmp "$TMP/t1.jsonl" "$TMP/t2.jsonl"
check "deterministic: same bytes as the first run" cmp "$TMP/t1.jsonl" "$TMP/c.jsonl"
# the eigenvalues come from OpenBLAS's LAPACK, which would split them across
# its own threads (as many as cores, or OPENBLAS_NUM_THREADS) and round differently
OPENBLAS_NUM_THREADS=8 "$SD" -m "$M" "$D/candidates.jsonl" > "$TMP/ob8.jsonl" 2>/dev/null
OPENBLAS_NUM_THREADS=1 "$SD" -m "$M" "$D/candidates.jsonl" > "$TMP/ob1.jsonl" 2>/dev/null
check "deterministic: same bytes whatever OpenBLAS's own thread count" cmp "$TMP/ob8.jsonl" "$TMP/ob1.jsonl"
"$SD" -m "$M" < "$D/candidates.jsonl" > "$TMP/stdin.jsonl" 2>/dev/null
check "reads stdin" cmp "$TMP/stdin.jsonl" "$TMP/c.jsonl"
head -n 6 "$D/candidates.jsonl" > "$TMP/part1.jsonl"
tail -n 2 "$D/candidates.jsonl" > "$TMP/part2.jsonl"
"$SD" -m "$M" "$TMP/part1.jsonl" "$TMP/part2.jsonl" > "$TMP/parts.jsonl" 2>/dev/null
check "several input files are one stream" cmp "$TMP/parts.jsonl" "$TMP/c.jsonl"
expect_status "--ctx cuts texts for the embedding" 0 "$SD" -m "$M" --ctx 3 "$D/candidates.jsonl"
check "--ctx changes the entropy only" $PY - "$TMP/c.jsonl" "$TMP/out" <<'PYEOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert any(x["diversity"] and x["diversity"]["embedding_entropy"] != y["diversity"]["embedding_entropy"] for x, y in zip(a, b))
for x, y in zip(a, b):
    if x["diversity"]:
        x["diversity"].pop("embedding_entropy"), y["diversity"].pop("embedding_entropy")
    assert x == y
PYEOF

# the reference's own records: grouped by prompt text and sampler_info
expect_status "reads the reference's record format" 0 "$SD" -m "$M" "$D/reference.jsonl"
check "reference records: sampler_info groups, the single one gets null" $PY -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert r[0]["diversity"] == r[1]["diversity"] and r[0]["diversity"]["sample_count"] == 2
assert r[2]["diversity"] is None and r[2]["seed"] == "0"' "$TMP/out"

# errors
printf '' > "$TMP/empty.jsonl"
expect_status "empty input" 0 "$SD" -m "$M" "$TMP/empty.jsonl"
check "empty input gives empty output" test ! -s "$TMP/out"
head -n 2 "$D/candidates.jsonl" > "$TMP/one.jsonl"
expect_status "a prompt of groups of one" 0 "$SD" -m "$M" "$TMP/one.jsonl"
expect_stderr "both groups of one are counted" "2 groups of one record"
check "groups of one all pass through with null" $PY -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 2 and all(x["diversity"] is None for x in r)' "$TMP/out"

tail -n 2 "$D/candidates.jsonl" > "$TMP/bad.jsonl"
head -n 3 "$D/candidates.jsonl" | sed '3s/"generation"/"gen"/' >> "$TMP/bad.jsonl"
expect_status "missing generation is an error" 1 "$SD" -m "$M" "$TMP/bad.jsonl"
expect_stderr "the error names file, line and field" 'bad\.jsonl:5: field "generation" is missing'
check "records of the prompts before the error are written" test "$(grep -c '"prompt_id":"p2"' "$TMP/out")" = 2
expect_status "--skip-invalid leaves the bad record out" 0 "$SD" -m "$M" --skip-invalid "$TMP/bad.jsonl"
expect_stderr "--skip-invalid warns with file and line" 'warning: .*bad\.jsonl:5: field "generation" is missing'
check "--skip-invalid writes the other records" test "$(grep -c . "$TMP/out")" = 4
head -n 2 "$D/candidates.jsonl" | sed '2s/"generation": "[^"]*"/"generation": 17/' > "$TMP/num.jsonl"
expect_status "a generation that is not a string is an error" 1 "$SD" -m "$M" "$TMP/num.jsonl"
expect_stderr "the type error names the field" 'num\.jsonl:2: field "generation" must be a string'
head -n 2 "$D/candidates.jsonl" | sed '1s/"heuristic"/"heur"/' > "$TMP/noh.jsonl"
expect_status "missing heuristic is an error" 1 "$SD" -m "$M" "$TMP/noh.jsonl"
expect_stderr "the error names the heuristic field" 'noh\.jsonl:1: field "heuristic" is missing'
{ head -n 1 "$D/candidates.jsonl"; tail -n 1 "$D/candidates.jsonl"; head -n 1 "$D/candidates.jsonl"; } > "$TMP/split.jsonl"
{ head -n 1 "$D/candidates.jsonl"; head -n 1 "$D/candidates.jsonl" | sed 's/"seed": *[0-9]*/"seed": 99/'; tail -n 1 "$D/candidates.jsonl"; } > "$TMP/joined.jsonl"
{ head -n 1 "$D/candidates.jsonl"; tail -n 1 "$D/candidates.jsonl"; head -n 1 "$D/candidates.jsonl" | sed 's/"seed": *[0-9]*/"seed": 99/'; } > "$TMP/split.jsonl"
expect_status "a prompt whose records are not contiguous: grouped" 0 "$SD" -m "$M" "$TMP/split.jsonl"
mv "$TMP/out" "$TMP/split.out"
"$SD" -m "$M" "$TMP/joined.jsonl" > "$TMP/joined.out" 2> /dev/null
check "... the same records out as from the file with them together" cmp "$TMP/split.out" "$TMP/joined.out"
printf '{"prompt_id":"x",\n' > "$TMP/broken.jsonl"
expect_status "malformed JSON is an error" 1 "$SD" -m "$M" "$TMP/broken.jsonl"
expect_stderr "the JSON error names file and line" 'broken\.jsonl:1'
expect_status "--embed-model is required" 2 "$SD" "$D/candidates.jsonl"
expect_status "a missing model file is an error" 1 "$SD" -m "$TMP/nope.gguf" "$D/candidates.jsonl"
expect_stderr "the missing model is named" "nope\.gguf"
expect_status "--help" 0 "$SD" --help
expect_stdout "--help describes the output fields" "embedding_entropy"

# A BERT embedder (the research pipeline's is all-MiniLM-L6-v2): WordPiece
# tokens as llama.cpp's, [CLS] ... [SEP], mean-pooled last layer. The
# reference: the mean-pooled states a PyTorch float64 BERT forward pass
# gives for llama.cpp's tokens of the same texts
# (tests/fixtures/make_arch_fixtures.py), through numpy's eigenvalues.
B="$DATA/models/tiny-bert-q8_0.gguf"
$PY - "$TMP/bert.jsonl" <<'PYEOF'
import json, sys
texts = ["ied 4 \u00bd months", "\u00c4pfel", "Hello world", " Hello World!",
         "Hello, world!", " this is \U0001f999.cpp", "w048 7tuijk dsdfhu"]
with open(sys.argv[1], "w") as f:
    for i, t in enumerate(texts):
        f.write(json.dumps({"prompt_id": "p", "heuristic": {"id": "h%d" % (i // 4)}, "seed": i, "generation": t}) + "\n")
PYEOF
ASN_EXACT_MATMUL=1 expect_status "score-diversity with a BERT embedder" 0 "$SD" -m "$B" "$TMP/bert.jsonl"
check "its embedding entropy is the float64 reference's (1e-5)" $PY - "$TMP/out" "$DATA/models/tiny-bert-q8_0.json" <<'PYEOF'
import json, math, sys
import numpy as np
out = [json.loads(l) for l in open(sys.argv[1])]
emb = np.array([e["embed"] for e in json.load(open(sys.argv[2]))["embedded"]])
def entropy(x):
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    w = np.linalg.eigvalsh(u @ u.T)
    w = w[w > 1e-9]
    p = w / w.sum()
    p = p[p > 1e-9]
    h = -(p * np.log2(p)).sum()
    return math.log(max(h, 1e-9))
for group, rows in (("h0", slice(0, 4)), ("h1", slice(4, 7))):
    got = [r["diversity"]["embedding_entropy"] for r in out if r["heuristic"]["id"] == group]
    want = entropy(emb[rows])
    assert all(abs(g - want) <= 1e-5 for g in got), (group, got, want)
PYEOF
