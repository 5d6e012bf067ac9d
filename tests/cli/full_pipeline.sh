# full_pipeline.sh — pipelines/full.mk on a tiny model: three shards under
# make -j3, one shard, and the multi-host flow (prepare, shard-K one by one,
# then the merge) give byte-identical merged datasets and the same index
# rows; the merged candidates are those of one plain gen-candidates run;
# gen-candidates --merge refuses what it cannot order.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
H="$ROOT/tests/data/reference-configs/custom_logit_processors_test.yaml"
PY=/usr/bin/python3
# a sub-make must not inherit the flags or variables of a make running the suite
unset MAKEFLAGS MFLAGS MAKELEVEL MODEL PROMPTS SOURCES HEURISTICS OUT SHARDS

# prompts: ids derived from the default system (given below, with a quote in
# it) and the prompt, a record's own system, explicit ids, non-ASCII text,
# and a verifiable item
cp "$ROOT/tests/data/reference-configs/test_prompts.jsonl" "$TMP/prompts.jsonl"
cat >> "$TMP/prompts.jsonl" <<'EOF'
{"id": "math-1", "prompt": "Tom has 3 apples and buys 4 more. How many apples does he have?", "dataset": "gsm8k", "ground_truth": "7"}
{"prompt": "Tell me a joke about compilers.", "system": "You are a comedian."}
{"prompt": "Décris un café parisien — en une phrase ☕"}
{"id": "open-2", "prompt": "Once upon a time", "checks": {"diversity": true}}
EOF
NG="$ROOT/tests/data/ngram/corpus_a.txt $ROOT/tests/data/ngram/corpus_b.txt"
SYS="You're terse."
FM() { # FM OUT [ARGS...]: the pipeline into OUT
    out=$1; shift
    make -C "$ROOT" -f pipelines/full.mk BIN="$BIN" MODEL="$M" HEURISTICS="$H" \
        PROMPTS="$TMP/prompts.jsonl" SEEDS=0-1 MAX_NEW_TOKENS=12 MIN_NEW_TOKENS=2 SYSTEM="$SYS" \
        THREADS=1 NGRAM_CORPUS="$NG" TOP_K=2 OUT="$out" "$@"
}
STAGES="candidates verified ranked diverse ngram scored filtered pairs"

expect_status "SHARDS=3 under make -j3" 0 FM "$TMP/s3" SHARDS=3 -j3
expect_status "SHARDS=1" 0 FM "$TMP/s1" SHARDS=1
check "every merged JSONL of SHARDS=3 is byte-identical to SHARDS=1" sh -c "
for f in $STAGES; do test -s '$TMP/s1/'\$f.jsonl && cmp '$TMP/s1/'\$f.jsonl '$TMP/s3/'\$f.jsonl || exit 1; done"
"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 12 --min-new-tokens 2 --system "$SYS" -t 1 \
    "$TMP/prompts.jsonl" > "$TMP/plain.jsonl" 2>/dev/null
check "the merged candidates are those of one plain gen-candidates run" cmp "$TMP/plain.jsonl" "$TMP/s3/candidates.jsonl"
check "the shards interleave (a concatenation would not be the unsharded file)" $PY - "$TMP/s3" <<'PYEOF'
import json, sys
d = sys.argv[1]
shards = [[json.loads(l)["prompt_id"] for l in open("%s/shards/%d-of-3/candidates.jsonl" % (d, k))] for k in (1, 2, 3)]
assert all(shards), "a shard is empty"
cat = open(d + "/shards/1-of-3/candidates.jsonl", "rb").read() + open(d + "/shards/2-of-3/candidates.jsonl", "rb").read() \
    + open(d + "/shards/3-of-3/candidates.jsonl", "rb").read()
assert cat != open(d + "/candidates.jsonl", "rb").read()
assert sorted(cat.splitlines()) == sorted(open(d + "/candidates.jsonl", "rb").read().splitlines())
PYEOF

# the index: same rows (rowids aside), and the same report
cat > "$TMP/rows.py" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("SELECT id, kind, prompt_id, heuristic_id, heuristic_name, seed, json FROM records ORDER BY id"):
    print(repr(row))
PYEOF
$PY "$TMP/rows.py" "$TMP/s1/index.db" > "$TMP/rows1" 2>&1
$PY "$TMP/rows.py" "$TMP/s3/index.db" > "$TMP/rows3" 2>&1
check "the merged index has the rows of the unsharded one" sh -c "test -s '$TMP/rows1' && cmp '$TMP/rows1' '$TMP/rows3'"
rm -f "$TMP/direct.db"
"$BIN/index" --db "$TMP/direct.db" "$TMP/s1/scored.jsonl" "$TMP/s1/filtered.jsonl" "$TMP/s1/pairs.jsonl" 2>/dev/null
$PY "$TMP/rows.py" "$TMP/direct.db" > "$TMP/rowsd" 2>&1
check "... and of one index of scored, filtered and pairs (as demo.mk builds it)" cmp "$TMP/rows1" "$TMP/rowsd"
check "the index holds candidates and pairs" $PY -c "
import sqlite3; db = sqlite3.connect('$TMP/s3/index.db')
k = dict(db.execute('SELECT kind, count(*) FROM records GROUP BY kind'))
assert k['candidate'] == 10 * 5 * 2 and k['pair'] > 0, k"
check "the reports are identical" sh -c "cmp '$TMP/s1/report/summary.txt' '$TMP/s3/report/summary.txt' && cmp '$TMP/s1/report/report.html' '$TMP/s3/report/report.html'"
check "the verifiable item is scored" grep -q '"verifiable_reward":[01]' "$TMP/s3/scored.jsonl"
check "a finished run is up to date (make -q)" FM "$TMP/s3" SHARDS=3 -q

# the multi-host flow, through the Slurm scripts run here as Slurm would run
# them: prepare, one array task per shard (in any order), then the merge
SB() { # SB TASK SCRIPT [ARGS...]: pipelines/slurm/SCRIPT as array task TASK (- for none)
    script=$2 tv=SLURM_ARRAY_TASK_ID=$1
    [ "$1" = - ] && tv=SLURM_JOB_NAME=asn-make
    shift 2
    env SLURM_SUBMIT_DIR="$ROOT" SLURM_CPUS_PER_TASK=1 "$tv" \
        bash "$ROOT/pipelines/slurm/$script" BIN="$BIN" MODEL="$M" HEURISTICS="$H" \
        PROMPTS="$TMP/prompts.jsonl" SEEDS=0-1 MAX_NEW_TOKENS=12 MIN_NEW_TOKENS=2 SYSTEM="$SYS" \
        NGRAM_CORPUS="$NG" TOP_K=2 SHARDS=3 OUT="$TMP/h" "$@"
}
SB - full-make.sbatch prepare > /dev/null 2>&1
SB 2 full-shard.sbatch > /dev/null 2>&1
check "array task 2 builds shard 2 only" sh -c "test -f '$TMP/h/shards/2-of-3/index.db' -a ! -e '$TMP/h/shards/1-of-3' -a ! -e '$TMP/h/candidates.jsonl'"
SB 3 full-shard.sbatch > /dev/null 2>&1
SB 1 full-shard.sbatch > /dev/null 2>&1
expect_status "the merge job after the array" 0 SB - full-make.sbatch
check "the merge job regenerates nothing" sh -c "! grep -Eq 'bin/(verify|rank-bt) |gen-candidates .*--shard' '$TMP/out'"
check "shard by shard, then merged: byte-identical to SHARDS=1" sh -c "
for f in $STAGES; do cmp '$TMP/s1/'\$f.jsonl '$TMP/h/'\$f.jsonl || exit 1; done"

# resumption: a lost intermediate of one shard is rebuilt, with the same result
rm "$TMP/h/shards/2-of-3/ranked.jsonl"
expect_status "a lost shard file is rebuilt" 0 FM "$TMP/h" SHARDS=3
check "only that shard's later steps ran again" sh -c "test \$(grep -c 'bin/rank-bt ' '$TMP/out') = 1 && grep -q 'shards/2-of-3/verified.jsonl >' '$TMP/out' && ! grep -Eq 'bin/verify |gen-candidates .*--shard' '$TMP/out'"
check "the rebuilt dataset is unchanged" sh -c "for f in $STAGES; do cmp '$TMP/s1/'\$f.jsonl '$TMP/h/'\$f.jsonl || exit 1; done"

# gen-candidates --merge on its own
S3="$TMP/s3/shards"
MG() { "$BIN/gen-candidates" -m "$M" -H "$H" --system "$SYS" "$@"; }
expect_status "merge: the shards in any order give the same file" 0 MG --merge "$S3/3-of-3/ranked.jsonl" \
    --merge "$S3/1-of-3/ranked.jsonl" --merge "$S3/2-of-3/ranked.jsonl" "$TMP/prompts.jsonl"
check "... byte-identical" cmp "$TMP/out" "$TMP/s1/ranked.jsonl"
$PY - "$S3/1-of-3/verified.jsonl" "$TMP/gap.jsonl" <<'PYEOF'
import json, sys
lines = open(sys.argv[1], "rb").read().splitlines(True)
first = json.loads(lines[0])["prompt_id"]
open(sys.argv[2], "wb").writelines(l for l in lines if json.loads(l)["prompt_id"] != first)
PYEOF
expect_status "merge: a prompt a shard lacks (verify discarded it) is left out" 0 MG \
    --merge "$TMP/gap.jsonl" --merge "$S3/2-of-3/verified.jsonl" --merge "$S3/3-of-3/verified.jsonl" "$TMP/prompts.jsonl"
check "... and the rest keeps its order" $PY -c "
import json
a = open('$TMP/s1/verified.jsonl', 'rb').read().splitlines(True)
first = json.loads(open('$S3/1-of-3/verified.jsonl').readline())['prompt_id']
assert open('$TMP/out', 'rb').read() == b''.join(l for l in a if json.loads(l)['prompt_id'] != first)"
tac "$TMP/prompts.jsonl" > "$TMP/reversed.jsonl"
expect_status "merge: prompts in another order are an error" 1 MG --merge "$S3/1-of-3/candidates.jsonl" \
    --merge "$S3/2-of-3/candidates.jsonl" --merge "$S3/3-of-3/candidates.jsonl" "$TMP/reversed.jsonl"
expect_stderr "... that names the file, line and prompt" "candidates.jsonl:[0-9]+: prompt [0-9a-f]+ is not in the prompts"
expect_status "merge: a shard given twice is an error" 1 MG --merge "$S3/1-of-3/candidates.jsonl" \
    --merge "$S3/1-of-3/candidates.jsonl" "$TMP/prompts.jsonl"
expect_stderr "... that says so" "is also in"
expect_status "merge: shards of other prompts are an error" 1 MG --merge "$S3/1-of-3/candidates.jsonl" "$TMP/reversed.jsonl" /dev/null
{ head -n 1 "$S3/1-of-3/candidates.jsonl"; printf '{"prompt_id": 3}\n'; } > "$TMP/badshard.jsonl"
expect_status "merge: a record without a prompt id is an error" 1 MG --merge "$TMP/badshard.jsonl" "$TMP/prompts.jsonl"
expect_stderr "... naming file and line" "badshard.jsonl:2: field \"prompt_id\""
expect_status "merge: a missing shard file is an error" 1 MG --merge "$TMP/none.jsonl" "$TMP/prompts.jsonl"
expect_stderr "... naming it" "none.jsonl"
expect_status "merge: with --shard is a usage error" 2 MG --shard 1/2 --merge "$S3/1-of-3/candidates.jsonl" "$TMP/prompts.jsonl"

# a dataset-sources YAML instead of prompt files (through full.mk, SHARDS=2)
mkdir -p "$TMP/src/data"
head -4 "$TMP/prompts.jsonl" > "$TMP/src/data/a.jsonl"
printf '{"question": "Name a colour."}\n{"question": "Count to three."}\n{"question": "Say hello."}\n' > "$TMP/src/data/b.jsonl"
cat > "$TMP/src/sources.yaml" <<EOF
datasets:
  - name: "first"
    path: "$TMP/src/data/a.jsonl"
    prompt_key: "prompt"
    incidence_vector: {check_factual: false, check_ifeval_or_math_or_gsm8k: false, check_diversity: true}
  - name: "second"
    path: "$TMP/src/data/b.jsonl"
    prompt_key: "question"
EOF
"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 12 --min-new-tokens 2 --system "$SYS" -t 1 \
    --sources "$TMP/src/sources.yaml" > "$TMP/src-plain.jsonl" 2>/dev/null
expect_status "SOURCES=... with SHARDS=2 -j2" 0 FM "$TMP/src2" PROMPTS= SOURCES="$TMP/src/sources.yaml" \
    SHARDS=2 -j2 MERGE_STAGES=candidates "$TMP/src2/candidates.jsonl"
check "... merges into the candidates of one plain gen-candidates --sources run" \
    sh -c "test -s '$TMP/src-plain.jsonl' && cmp '$TMP/src-plain.jsonl' '$TMP/src2/candidates.jsonl'"

# the make file's own errors
expect_status "full.mk without MODEL is an error" 2 make -s -C "$ROOT" -f pipelines/full.mk PROMPTS=x HEURISTICS=y OUT="$TMP/e"
expect_stderr "... that names MODEL" "MODEL is required"
expect_status "full.mk with SHARDS=0 is an error" 2 make -s -C "$ROOT" -f pipelines/full.mk MODEL="$M" PROMPTS=x HEURISTICS=y SHARDS=0 OUT="$TMP/e"
expect_status "full.mk help needs no variables" 0 make -s -C "$ROOT" -f pipelines/full.mk help
