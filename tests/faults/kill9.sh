# kill9.sh — SIGKILL at seeded random points during every long-running
# tool. After each kill, nothing a later stage reads is half-written: a
# file the tool writes itself (-o) is absent or complete, stdout (which the
# pipelines write to a temporary name and rename) is a byte prefix of the
# full output; and after resuming (gen-candidates --resume, train-sampler
# --resume) or re-running, the output is byte-identical to an
# uninterrupted run. index: the database is intact and holds whole
# transactions of the input; serve: a seeded request re-sent after a
# restart gets the same tokens.
#   FAULT_POINTS=50 sh tests/faults/kill9.sh   (make test-faults)
. "$ASN_ROOT/tests/lib/cli.sh"
. "$ASN_ROOT/tests/faults/lib.sh"
M="$DATA/models/tiny-spm-q8_0.gguf"
H="$DATA/reference-configs/custom_logit_processors_test.yaml"
PY=/usr/bin/python3
SERVE_PID=""
trap '[ -n "$SERVE_PID" ] && kill -9 $SERVE_PID 2>/dev/null; rm -rf "$TMP"' EXIT

# inputs: a dozen prompts; their candidates; the candidates repeated under
# new prompt ids (the labelling tools need a few seconds of work to be
# killed in the middle of it)
cp "$DATA/reference-configs/test_prompts.jsonl" "$TMP/p.jsonl"
for i in 1 2 3 4 5 6; do printf '{"id": "extra-%d", "prompt": "Tell me about the number %d."}\n' $i $i >> "$TMP/p.jsonl"; done
"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 12 --min-new-tokens 2 -t 1 "$TMP/p.jsonl" > "$TMP/c.jsonl" 2>/dev/null
$PY - "$TMP" <<'PYEOF'
import json, sys
d = sys.argv[1]
recs = [json.loads(l) for l in open(d + "/c.jsonl")]
def rep(name, k):
    with open(d + "/" + name, "w") as f:
        for j in range(k):
            for r in recs:
                r = dict(r, prompt_id="%s-%d" % (r["prompt_id"], j))
                r["id"] = r["prompt_id"] + "/" + r["id"].split("/", 1)[1]
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
rep("x5.jsonl", 5)
rep("x20.jsonl", 20)
PYEOF
"$BIN/score-ngram" build -o "$TMP/ngram.idx" "$DATA/ngram/corpus_a.txt" 2>/dev/null
"$BIN/score-verifiable" -q "$TMP/x20.jsonl" | "$BIN/rank-bt" --judge reference-ll --judge-model "$M" -t 1 \
    | "$BIN/score-diversity" --embed-model "$M" -t 1 > "$TMP/scored.jsonl" 2>/dev/null

# ---- tools writing stdout, run as pipelines/full.mk runs them:
# TOOL IN > OUT.tmp && mv OUT.tmp OUT
stdout_tool() { # NAME INPUT CMD...
    name=$1 in=$2; shift 2
    "$@" "$in" > "$TMP/ref" 2>/dev/null
    [ -s "$TMP/ref" ] || { not_ok "$name" "no reference output"; return; }
    time_ms "$@" "$in"
    tried=0 killed=0 passed=0
    while [ $tried -lt "$FAULT_POINTS" ]; do
        tried=$((tried + 1))
        rand_below $((T + T / 5 + 1))
        rm -f "$TMP/out" "$TMP/out.tmp"
        spawn_killed "$R" "$TMP/out.tmp" "$@" "$in"
        killed=$((killed + KILLED)) bad=""
        if [ "$RC" = 0 ]; then mv "$TMP/out.tmp" "$TMP/out"
        elif ! is_prefix "$TMP/out.tmp" "$TMP/ref"; then bad="killed at ${R} ms: its partial stdout is not a prefix of the output"
        fi
        [ -e "$TMP/out" ] && ! cmp -s "$TMP/out" "$TMP/ref" && bad="killed at ${R} ms: exit 0 with another output"
        "$@" "$in" > "$TMP/out.tmp" 2>/dev/null && mv "$TMP/out.tmp" "$TMP/out"
        cmp -s "$TMP/out" "$TMP/ref" || bad="${bad:-the re-run after a kill at ${R} ms differs}"
        if [ -z "$bad" ]; then passed=$((passed + 1)); else echo "# $name: $bad"; fi
    done
    tally "$name" $tried $killed $passed
}
stdout_tool rank-bt "$TMP/x5.jsonl" "$BIN/rank-bt" --judge reference-ll --judge-model "$M" -t 1
stdout_tool score-diversity "$TMP/x20.jsonl" "$BIN/score-diversity" --embed-model "$M" -t 1
stdout_tool score-ngram "$TMP/x20.jsonl" "$BIN/score-ngram" --index "$TMP/ngram.idx"
stdout_tool score-verifiable "$TMP/x20.jsonl" "$BIN/score-verifiable" -q
stdout_tool score-reward "$TMP/x20.jsonl" "$BIN/score-reward" -m "$DATA/models/tiny-rm-q8_0.gguf" --chat-template none -t 1
stdout_tool filter-topk "$TMP/scored.jsonl" "$BIN/filter-topk" --top-k 2

# ---- tools that resume: killed again and again, each run resuming what
# the last one left, finished every few points and compared.
# resumable NAME OUT RESUME_FN CMD...: RESUME_FN prints the extra options
# of the next run (from what is on disk); OUT is the file the tool writes.
resumable() {
    name=$1 out=$2 resume_fn=$3; shift 3
    rm -f "$out"*
    "$@" $($resume_fn) > /dev/null 2>> "$TMP/fault.log"
    cp "$out" "$TMP/ref" 2>/dev/null || { not_ok "$name" "no reference output"; return; }
    rm -f "$out"*
    time_ms "$@" $($resume_fn)
    rm -f "$out"*
    tried=0 killed=0 passed=0 chain=0
    while [ $tried -lt "$FAULT_POINTS" ]; do
        tried=$((tried + 1)) chain=$((chain + 1))
        rand_below $((T + 1))
        spawn_killed "$R" - "$@" $($resume_fn)
        killed=$((killed + KILLED)) bad=""
        if [ -e "$out" ] && ! cmp -s "$out" "$TMP/ref"; then bad="killed at ${R} ms: $(basename "$out") is there but not the full output"; fi
        [ "$RC" = 0 ] || [ "$RC" = 137 ] && [ -z "$bad" ] || bad="${bad:-a resumed run failed (exit $RC): $(tail -1 "$TMP/fault.log")}"
        [ -n "$PART_CHECK" ] && [ -z "$bad" ] && ! $PART_CHECK && bad="killed at ${R} ms: $PART_WHY"
        if [ -z "$bad" ] && { [ $chain -ge 4 ] || [ "$RC" = 0 ] || [ $tried -eq "$FAULT_POINTS" ]; }; then
            "$@" $($resume_fn) > /dev/null 2>> "$TMP/fault.log"
            cmp -s "$out" "$TMP/ref" || bad="resumed after $chain kills (the last at ${R} ms): the output differs"
            rm -f "$out"*
            chain=0
        fi
        if [ -z "$bad" ]; then passed=$((passed + 1)); else echo "# $name: $bad"; rm -f "$out"*; chain=0; fi
    done
    tally "$name" $tried $killed $passed
}

# gen-candidates -o FILE --resume: FILE.part only ever holds a prefix of the output
G_OUT="$TMP/gen/cand.jsonl"
mkdir -p "$TMP/gen"
gen_resume() { echo --resume; }
gen_part() { [ ! -e "$G_OUT.part" ] || is_prefix "$G_OUT.part" "$TMP/ref"; }
PART_CHECK=gen_part PART_WHY="cand.jsonl.part is not a prefix of the output"
resumable gen-candidates "$G_OUT" gen_resume "$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 24 \
    --min-new-tokens 2 -t 1 -b 1 -o "$G_OUT" "$TMP/p.jsonl"
"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 24 --min-new-tokens 2 -t 1 -b 1 "$TMP/p.jsonl" > "$TMP/gen.stdout" 2>/dev/null
check "gen-candidates: -o FILE holds what stdout gets" cmp "$TMP/gen.stdout" "$TMP/ref"

# train-sampler: a checkpoint every step, resumed from when there is one
S_OUT="$TMP/ts/s.gguf"
mkdir -p "$TMP/ts"
printf 'hidden_dims: 8\n' > "$TMP/local.yaml"
ts_resume() { [ -e "$TMP/ts/s.ckpt.gguf" ] && echo --resume "$TMP/ts/s.ckpt.gguf"; }
PART_CHECK="" PART_WHY=""
resumable train-sampler "$S_OUT" ts_resume "$BIN/train-sampler" -m "$M" -q -b 5 --gradient-accumulation-steps 1 \
    --num-warmup-steps 2 -a LocalProbabilityTransform -c "$TMP/local.yaml" --max-steps 40 --save-steps 1 -t 1 \
    -o "$S_OUT" "$TMP/c.jsonl"

# ---- index: killed inside its transactions (1000 records each)
ROWS="SELECT id, kind, prompt_id, heuristic_id, heuristic_name, seed, json FROM records ORDER BY id"
rm -f "$TMP/ref.db"*
"$BIN/index" --db "$TMP/ref.db" "$TMP/x20.jsonl" 2>/dev/null
sqlite3 "$TMP/ref.db" "$ROWS" > "$TMP/ref.rows"
n_all=$(wc -l < "$TMP/x20.jsonl")
time_ms "$BIN/index" --db "$TMP/t.db" "$TMP/x20.jsonl"
tried=0 killed=0 passed=0
while [ $tried -lt "$FAULT_POINTS" ]; do
    tried=$((tried + 1)) bad=""
    rm -f "$TMP/i.db"*
    rand_below $((T + 1))
    spawn_killed "$R" - "$BIN/index" --db "$TMP/i.db" "$TMP/x20.jsonl"
    killed=$((killed + KILLED))
    if [ -e "$TMP/i.db" ]; then
        ic=$(sqlite3 "$TMP/i.db" "PRAGMA integrity_check" 2>&1)
        [ "$ic" = ok ] || bad="killed at ${R} ms: integrity_check says $ic"
        if [ "$(sqlite3 "$TMP/i.db" "SELECT count(*) FROM sqlite_master WHERE name = 'records'")" = 1 ]; then
            sqlite3 "$TMP/i.db" "$ROWS" > "$TMP/i.rows" 2>&1
        else : > "$TMP/i.rows"; fi
        n=$(wc -l < "$TMP/i.rows")
        [ $((n % 1000)) = 0 ] || [ "$n" = "$n_all" ] || bad="${bad:-killed at ${R} ms: $n rows, not whole transactions}"
        [ "$(sort "$TMP/i.rows" "$TMP/ref.rows" | uniq -d | wc -l)" = "$n" ] || bad="${bad:-killed at ${R} ms: rows that are not the input's}"
    fi
    "$BIN/index" --db "$TMP/i.db" "$TMP/x20.jsonl" 2>> "$TMP/fault.log"
    sqlite3 "$TMP/i.db" "$ROWS" | cmp -s - "$TMP/ref.rows" || bad="${bad:-indexed again after a kill at ${R} ms: other rows}"
    if [ -z "$bad" ]; then passed=$((passed + 1)); else echo "# index: $bad"; fi
done
tally index $tried $killed $passed

# ---- serve: killed while answering; the request re-sent to a new server
# gets gen-candidates' tokens
printf '%s\n' '{"prompt": "Once upon a time"}' > "$TMP/sp.jsonl"
"$BIN/gen-candidates" -m "$M" -H "$H" -n 48 --min-new-tokens 40 --seeds 7 --no-system "$TMP/sp.jsonl" 2>/dev/null | head -1 > "$TMP/sref.jsonl"
start_serve() {
    rm -f "$TMP/port"
    "$BIN/serve" -m "$M" -H "$H" --port 0 --port-file "$TMP/port" -t 1 > /dev/null 2>> "$TMP/fault.log" &
    SERVE_PID=$!
    for i in $(seq 200); do [ -s "$TMP/port" ] && break; sleep 0.02; done
}
cat > "$TMP/ask.py" <<'PYEOF'
import json, sys, urllib.request
port, ref = sys.argv[1], json.loads(open(sys.argv[2]).readline())
body = {"prompt": ref["prompt"], "max_tokens": 48, "min_tokens": 40, "seed": ref["seed"],
        "asn_heuristic": ref["heuristic"]["name"], "return_token_ids": True}
req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % port, data=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=30) as r:
        ids = json.loads(r.read())["choices"][0]["token_ids"]
except Exception as e:
    print("no answer: %s" % e); sys.exit(2)
if ids != ref["tokens"]:
    print("other tokens"); sys.exit(1)
PYEOF
start_serve
t0=$(now_ms); $PY "$TMP/ask.py" "$(cat "$TMP/port")" "$TMP/sref.jsonl" > "$TMP/ask.out" 2>&1; T=$(( $(now_ms) - t0 ))
check "serve: the seeded request gets gen-candidates' tokens" sh -c "[ ! -s '$TMP/ask.out' ] || { cat '$TMP/ask.out'; exit 1; }"
tried=0 killed=0 passed=0
while [ $tried -lt "$FAULT_POINTS" ]; do
    tried=$((tried + 1)) bad=""
    [ -s "$TMP/port" ] && kill -0 "$SERVE_PID" 2>/dev/null || start_serve
    $PY "$TMP/ask.py" "$(cat "$TMP/port")" "$TMP/sref.jsonl" > "$TMP/ask.out" 2>&1 &
    client=$!
    rand_below $((T + 1))
    sleep_ms "$R"
    kill -9 "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID"; [ $? = 137 ] && killed=$((killed + 1))
    wait "$client"; rc=$?
    [ $rc = 1 ] && bad="killed at ${R} ms: an answer with other tokens"
    start_serve
    $PY "$TMP/ask.py" "$(cat "$TMP/port")" "$TMP/sref.jsonl" > "$TMP/ask.out" 2>&1 || bad="${bad:-after a restart (killed at ${R} ms): $(cat "$TMP/ask.out")}"
    if [ -z "$bad" ]; then passed=$((passed + 1)); else echo "# serve: $bad"; fi
done
kill -9 "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID" 2>/dev/null; SERVE_PID=""
tally serve $tried $killed $passed
