#!/bin/sh
# Two-way compatibility with the research pipeline asn re-designs
# (NavneelSinghal/Adaptive-Sampling-Networks).
#  1. Its files in: small files in its formats (tests/scripts/reference_files.py,
#     written from its documented formats) go through asn's stages as they
#     are: verify, rank-bt, score-verifiable, score-diversity, filter-topk,
#     train-sampler; each says it reads the research pipeline's records.
#  2. Its formats out: asn's candidates (gen-candidates --sources on its
#     sources YAML, paths from the working directory as there) and labels,
#     through convert-records --to reference, hold every field its readers
#     use (the field contract, from its source), and, when a checkout of its
#     source is named by ASN_REFERENCE_SRC, its own reader functions run on
#     them with /usr/bin/python3 (they need PyYAML, numpy and tqdm, no GPU):
#     src/verify_datagen_and_transform.verify_and_filter_dataset keeps every
#     prompt, and src/data_labelling/process_and_score.process_and_score_data
#     keeps the records asn's filter-topk keeps, with the same combined scores.
#     Without ASN_REFERENCE_SRC those checks are skipped (the project does not
#     copy its code).
#  3. Its files converted: convert-records --to asn turns its generation and
#     labelled records into asn's (ids checked against SHA-256 in Python),
#     which verify and filter-topk take as asn's; and asn's filtered records
#     through --to reference and back give every field back but those its
#     format cannot carry (rank, score's final, weights and verifiable).
#  4. The judge: the shipped template rendered by Python's str.format is the
#     recorded question tests/unit/test_bt.c holds asn's to.
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
TINY="$DATA/models/tiny-spm-q8_0.gguf"
JUDGE="$DATA/rank/judge-bang.gguf"
REFSRC=${ASN_REFERENCE_SRC:-}
W="$TMP/w"
mkdir -p "$W"
(cd "$W" && $PY "$ROOT/tests/scripts/reference_files.py") || not_ok "its files" "reference_files.py failed"
NOTE="reading the research pipeline's records"

# ------------------------------------------------------------ 1. its files in
expect_status "verify reads its generation records" 0 "$BIN/verify" --expected-seeds 2 -H "$W/heuristics.yaml" "$W/generations.jsonl"
expect_stderr "... says which it reads" "$NOTE"
expect_stderr "... keeps its 3 prompts (grouped by prompt text, records not contiguous)" "3 prompts read, 0 discarded, 3 written \\(18 records\\)"
expect_status "verify applies its rules: a (seed, sampler) twice discards the prompt" 1 sh -c \
    'cat "$1" "$1" | "$2" --expected-seeds 2 | grep -q .' sh "$W/generations.jsonl" "$BIN/verify"
expect_status "rank-bt rates its records" 0 "$BIN/rank-bt" -j pairwise -m "$JUDGE" "$W/generations.jsonl"
cp "$TMP/out" "$W/rated.jsonl"
expect_stderr "... says which it reads" "$NOTE"
expect_status "score-verifiable" 0 "$BIN/score-verifiable" "$W/rated.jsonl"
cp "$TMP/out" "$W/verified.jsonl"
expect_status "score-diversity" 0 "$BIN/score-diversity" -m "$TINY" "$W/verified.jsonl"
cp "$TMP/out" "$W/labelled.jsonl"
expect_stderr "... says which it reads" "$NOTE"
check "its records labelled: bradley_terry_rating, verifiable_reward (gsm8k), diversity (stories), own fields kept" $PY - "$W/labelled.jsonl" <<'PYEOF'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert len(rs) == 18
for r in rs:
    assert isinstance(r["bradley_terry_rating"], float) and "sampler_info" in r and r["system_prompt"]
    if r.get("dataset") == "gsm8k":
        assert r["verifiable_reward"] in (0, 1), r
    else:
        assert r["verifiable_reward"] is None and isinstance(r["diversity"]["embedding_entropy"], float), r
assert sum(1 for r in rs if r.get("source_id") == "s-2") == 6
PYEOF
expect_status "filter-topk" 0 "$BIN/filter-topk" -k 2 "$W/labelled.jsonl"
cp "$TMP/out" "$W/asn-filtered.jsonl"
expect_stderr "... says which it reads" "$NOTE"
expect_status "train-sampler trains on its records" 0 "$BIN/train-sampler" -m "$TINY" -q -b 4 -t 1 --max-steps 2 \
    --save-steps 0 -a LocalProbabilityTransform -c "$ROOT/configs/samplers/local.yaml" -o "$W/s.gguf" "$W/asn-filtered.jsonl"
check "... and writes a sampler" test -s "$W/s.gguf"

# ---------------------------------------------------------- 2. its formats out
expect_status "gen-candidates --sources its YAML (paths from the working directory)" 0 sh -c \
    'cd "$1" && "$2" -m "$3" -H heuristics.yaml --seeds 0-1 -n 12 --min-new-tokens 2 -t 1 --system "You are a helpful assistant." --sources sources.yaml' \
    sh "$W" "$BIN/gen-candidates" "$TINY"
cp "$TMP/out" "$W/asn-gen.jsonl"
expect_status "convert-records --to reference" 0 "$BIN/convert-records" "$W/asn-gen.jsonl"
cp "$TMP/out" "$W/asn-gen-ref.jsonl"
# the fields its readers use (from its source): verify_datagen_and_transform
# (prompt, seed, sampler_info), train_supervised (prompt, generation,
# sampler_info.config), process_and_score (prompt, seed, incidence_vector,
# bradley_terry_rating, diversity.embedding_entropy, verifiable_reward)
check "field contract: its generation records" $PY - "$W/asn-gen-ref.jsonl" "$W/heuristics.yaml" <<'PYEOF'
import json, sys, yaml
pipes = {p["name"]: p["processors"] for p in yaml.safe_load(open(sys.argv[2]))["sampling_pipelines"]}
rs = [json.loads(l) for l in open(sys.argv[1])]
assert len(rs) == 18, len(rs)
for r in rs:
    assert isinstance(r["prompt"], str) and isinstance(r["generation"], str) and isinstance(r["seed"], int)
    assert set(r["sampler_info"]) == {"name", "config"} and r["sampler_info"]["config"] == pipes[r["sampler_info"]["name"]], r
    assert r["system_prompt"] == "You are a helpful assistant."
    assert set(r["incidence_vector"]) == {"check_factual", "check_ifeval_or_math_or_gsm8k", "check_diversity"}
    assert not {"prompt_id", "heuristic", "checks", "id"} & set(r), sorted(r)
assert {r["source_id"] for r in rs if "source_id" in r} == {"s-2"}
PYEOF
expect_status "asn reads the converted records back as the research pipeline's" 0 "$BIN/verify" --expected-seeds 2 "$W/asn-gen-ref.jsonl"
expect_stderr "... (detected)" "$NOTE"
# asn's labels, then filter-topk, and the same labels converted
"$BIN/rank-bt" -j pairwise -m "$JUDGE" "$W/asn-gen.jsonl" 2> /dev/null | "$BIN/score-verifiable" -q |
    "$BIN/score-diversity" -m "$TINY" > "$W/asn-labelled.jsonl" 2> /dev/null
"$BIN/filter-topk" -k 2 "$W/asn-labelled.jsonl" > "$W/asn-kept.jsonl" 2> /dev/null
"$BIN/convert-records" "$W/asn-labelled.jsonl" > "$W/asn-labelled-ref.jsonl"
"$BIN/convert-records" "$W/asn-kept.jsonl" > "$W/asn-kept-ref.jsonl"
check "field contract: its rating and filtered records" $PY - "$W/asn-labelled-ref.jsonl" "$W/asn-kept-ref.jsonl" <<'PYEOF'
import json, sys
lab = [json.loads(l) for l in open(sys.argv[1])]
kept = [json.loads(l) for l in open(sys.argv[2])]
assert len(lab) == 18 and 0 < len(kept) <= 12
for r in lab:
    assert isinstance(r["bradley_terry_rating"], float) and "verifiable_reward" in r
    if r["incidence_vector"]["check_diversity"]:
        assert isinstance(r["diversity"]["embedding_entropy"], float)
for r in kept:
    assert isinstance(r["normalized_quality"], float) and len(r["combined_scores"]) == 125
    assert ("normalized_diversity" in r) == r["incidence_vector"]["check_diversity"]
PYEOF

if [ -z "$REFSRC" ] || [ ! -f "$REFSRC/src/data_labelling/process_and_score.py" ]; then
    skip "its readers on asn's output" "set ASN_REFERENCE_SRC to a checkout of NavneelSinghal/Adaptive-Sampling-Networks"
elif ! $PY -c 'import yaml, numpy, tqdm' 2> /dev/null; then
    skip "its readers on asn's output" "its readers need python3-yaml, python3-numpy and python3-tqdm"
else
    check "its verify_and_filter_dataset keeps every prompt of asn's converted candidates" $PY - "$REFSRC" "$W" <<'PYEOF'
import io, contextlib, sys
sys.path.insert(0, sys.argv[1])
from src.verify_datagen_and_transform import verify_and_filter_dataset
w = sys.argv[2]
with contextlib.redirect_stdout(io.StringIO()) as out:
    verify_and_filter_dataset(w + "/asn-gen-ref.jsonl", w + "/its-verified.jsonl", w + "/heuristics.yaml", 2)
assert "All prompts are clean" in out.getvalue(), out.getvalue()
assert len(open(w + "/its-verified.jsonl").readlines()) == 18
PYEOF
    check "its verify_and_filter_dataset on its own records keeps them too" $PY - "$REFSRC" "$W" <<'PYEOF'
import io, contextlib, sys
sys.path.insert(0, sys.argv[1])
from src.verify_datagen_and_transform import verify_and_filter_dataset
w = sys.argv[2]
with contextlib.redirect_stdout(io.StringIO()) as out:
    verify_and_filter_dataset(w + "/generations.jsonl", w + "/its-verified2.jsonl", w + "/heuristics.yaml", 2)
assert "All prompts are clean" in out.getvalue(), out.getvalue()
PYEOF
    for pair in "asn-labelled-ref.jsonl:asn-kept-ref.jsonl" "labelled.jsonl:asn-filtered.jsonl"; do
        check "its process_and_score_data on ${pair%%:*} keeps what filter-topk kept, same combined scores" \
            $PY - "$REFSRC" "$W" "${pair%%:*}" "${pair#*:}" <<'PYEOF'
import io, contextlib, json, sys
sys.path.insert(0, sys.argv[1])
from src.data_labelling.process_and_score import process_and_score_data
w, src, asn_out = sys.argv[2], sys.argv[3], sys.argv[4]
A = [0.1, 0.3, 0.5, 0.7, 0.9]; B = [0.5, 0.6, 0.7, 0.8, 0.9]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    process_and_score_data(w + "/" + src, w + "/its-kept.jsonl", A, B, A, 2, "a0.1_b0.9_c0.9", False)
its = [json.loads(l) for l in open(w + "/its-kept.jsonl")]
ours = [json.loads(l) for l in open(w + "/" + asn_out)]
key = lambda r: (r["prompt"], r["seed"], json.dumps(r["sampler_info"], sort_keys=True), r["generation"])
assert [key(r) for r in its] == [key(r) for r in ours], ([key(r)[2] for r in its], [key(r)[2] for r in ours])
for a, b in zip(its, ours):
    cs = b["combined_scores"] if "combined_scores" in b else b["score"]["combined_scores"]
    assert set(a["combined_scores"]) == set(cs)
    for k, v in a["combined_scores"].items():
        assert abs(v - cs[k]) <= 1e-9 * max(1.0, abs(v)), (k, v, cs[k])
PYEOF
    done
fi

# ------------------------------------------------------ 3. its files converted
expect_status "convert-records --to asn: its generation records" 0 "$BIN/convert-records" --to asn "$W/generations.jsonl"
cp "$TMP/out" "$W/gen-asn.jsonl"
check "... asn's fields: ids from SHA-256 of the texts, heuristic from sampler_info, checks from incidence_vector" \
    $PY - "$W/generations.jsonl" "$W/gen-asn.jsonl" <<'PYEOF'
import hashlib, json, sys
its = [json.loads(l) for l in open(sys.argv[1])]
ours = [json.loads(l) for l in open(sys.argv[2])]
assert len(its) == len(ours) == 18
sha = lambda s: hashlib.sha256(s.encode()).hexdigest()
for a, b in zip(its, ours):
    pid = sha((a.get("system_prompt") or "") + "\x1f" + a["prompt"])[:16]
    procs = [{"name": p["name"], "params": p.get("params", {})} for p in a["sampler_info"]["config"]]
    hid = sha(json.dumps({"name": a["sampler_info"]["name"], "processors": procs}, sort_keys=True,
                         separators=(",", ":")))[:12]
    assert b["prompt_id"] == pid and b["heuristic"] == {"name": a["sampler_info"]["name"], "id": hid, "processors": procs}, b
    assert b["id"] == "%s/%s/%d" % (pid, hid, a["seed"]) and b["system"] == a["system_prompt"], b
    iv = a["incidence_vector"]
    assert b["checks"] == {"diversity": iv["check_diversity"], "verifiable": iv["check_ifeval_or_math_or_gsm8k"],
                           "factual": iv["check_factual"]} and b["incidence_vector"] == iv
    assert not {"sampler_info", "system_prompt"} & set(b)
    for k in set(a) - {"sampler_info", "system_prompt"}:
        assert b[k] == a[k], k
PYEOF
expect_status "verify takes them as asn's (3 prompts kept)" 0 "$BIN/verify" --expected-seeds 2 -H "$W/heuristics.yaml" "$W/gen-asn.jsonl"
check "... as asn's, not as the research pipeline's" sh -c '! grep -q "research pipeline" "$1"' sh "$TMP/err"
expect_stderr "... all kept" "3 prompts read, 0 discarded, 3 written \\(18 records\\)"
$PY -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); del r["finish"]; print(json.dumps(r))' "$W/asn-gen.jsonl" > "$W/no-finish.jsonl"
expect_status "verify: asn's generated records still need every generation field (finish dropped)" 0 "$BIN/verify" --expected-seeds 2 "$W/no-finish.jsonl"
expect_stderr "... discarded" "3 prompts read, 3 discarded, 0 written"
expect_stderr "... saying why" "lacks the string field \"finish\""
"$BIN/convert-records" --to asn "$W/labelled.jsonl" > "$W/labelled-asn.jsonl"
expect_status "filter-topk takes its labelled records converted" 0 "$BIN/filter-topk" -k 2 "$W/labelled-asn.jsonl"
check "... and keeps what it kept of them unconverted" $PY - "$W/asn-filtered.jsonl" "$TMP/out" <<'PYEOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b) > 0
for x, y in zip(a, b):
    assert (x["prompt"], x["seed"], x["generation"]) == (y["prompt"], y["seed"], y["generation"])
    assert x["score"] == y["score"] and x["rank"] == y["rank"], (x["score"], y["score"])
PYEOF
"$BIN/convert-records" "$W/asn-kept.jsonl" | "$BIN/convert-records" --to asn > "$W/kept-back.jsonl"
check "asn -> reference -> asn gives back every field its format carries" $PY - "$W/asn-kept.jsonl" "$W/kept-back.jsonl" <<'PYEOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b) > 0
for x, y in zip(a, b):
    x.pop("rank")
    s = x.pop("score")
    assert y.pop("score") == {"quality": s["quality"], "diversity": s["diversity"], "combined_scores": s["combined_scores"]}
    assert x == y, sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
PYEOF
expect_status "--to asn: a record without sampler_info is an error naming file and line" 1 sh -c \
    'echo "{\"prompt\":\"p\",\"generation\":\"g\",\"seed\":0}" > "$1/bad.jsonl" && "$2" --to asn "$1/bad.jsonl"' sh "$W" "$BIN/convert-records"
expect_stderr "... the message" "bad.jsonl:1: field \"sampler_info\" is missing"
expect_status "--to must be reference or asn" 2 "$BIN/convert-records" --to json "$W/bad.jsonl"

# ----------------------------------------------------------------- 4. the judge
check "the shipped judge template, filled by Python's str.format, is the recorded question" $PY -c "
import sys
d = sys.argv[1] + '/compat/'
t = open(sys.argv[2]).read()
q = t.format(input=open(d + 'judge-input.txt').read(), response_a=open(d + 'judge-a.txt').read(),
             response_b=open(d + 'judge-b.txt').read())
assert q == open(d + 'judge-question.txt').read()" "$DATA" "$ROOT/configs/judges/pairwise.txt"
