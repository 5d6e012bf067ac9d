# signals.sh — SIGTERM and SIGINT stop every long-running tool at a record
# boundary: exit 1 with "stopped by SIG... after N ...", stdout a whole
# number of records and a byte prefix of the full output (gen-candidates
# -o: FILE.part holds whole prompts and --resume completes it; index: the
# committed records; serve: exits 0 when its requests are done).
. "$ASN_ROOT/tests/lib/cli.sh"
. "$ASN_ROOT/tests/faults/lib.sh"
M="$DATA/models/tiny-spm-q8_0.gguf"
H="$DATA/reference-configs/custom_logit_processors_test.yaml"
PY=/usr/bin/python3
cp "$DATA/reference-configs/test_prompts.jsonl" "$TMP/p.jsonl"
for i in 1 2 3 4 5 6; do printf '{"id": "extra-%d", "prompt": "Tell me about the number %d."}\n' $i $i >> "$TMP/p.jsonl"; done
"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 12 --min-new-tokens 2 -t 1 "$TMP/p.jsonl" > "$TMP/c.jsonl" 2>/dev/null
$PY - "$TMP" <<'PYEOF'
import json, sys
d = sys.argv[1]
recs = [json.loads(l) for l in open(d + "/c.jsonl")]
with open(d + "/x.jsonl", "w") as f:
    for j in range(40):
        for r in recs:
            r = dict(r, prompt_id="%s-%d" % (r["prompt_id"], j))
            r["id"] = r["prompt_id"] + "/" + r["id"].split("/", 1)[1]
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
PYEOF
"$BIN/score-ngram" build -o "$TMP/ngram.idx" "$DATA/ngram/corpus_a.txt" 2>/dev/null
"$BIN/score-verifiable" -q "$TMP/x.jsonl" | "$BIN/rank-bt" --judge reference-ll --judge-model "$M" -t 1 \
    | "$BIN/score-diversity" --embed-model "$M" -t 1 > "$TMP/scored.jsonl" 2>/dev/null

# stopped NAME SIG INPUT CMD...: CMD INPUT gets SIG once it has written
# something (or after 2 s)
stopped() {
    name=$1 sig=$2 in=$3; shift 3
    "$@" "$in" > "$TMP/ref" 2>/dev/null
    rm -f "$TMP/out"
    "$@" "$in" > "$TMP/out" 2> "$TMP/err" &
    pid=$!
    for i in $(seq 200); do [ -s "$TMP/out" ] && break; sleep 0.01; done
    kill -s "$sig" $pid 2>/dev/null; wait $pid; rc=$?
    why=""
    [ $rc = 1 ] || why="exit $rc"
    grep -q "stopped by SIG$sig after [0-9]" "$TMP/err" || why="${why:+$why; }stderr: $(head -c 200 "$TMP/err")"
    [ -s "$TMP/out" ] && [ "$(tail -c 1 "$TMP/out" | od -An -c | tr -d ' ')" != '\n' ] && why="${why:+$why; }the last record is cut"
    is_prefix "$TMP/out" "$TMP/ref" || why="${why:+$why; }not a prefix of the full output"
    cmp -s "$TMP/out" "$TMP/ref" && why="${why:+$why; }the signal came after the end (a faster machine?)"
    if [ -z "$why" ]; then ok "$name: SIG$sig stops it after $(wc -l < "$TMP/out") of $(wc -l < "$TMP/ref") records, at a record boundary"
    else not_ok "$name: SIG$sig" "$why"; fi
}
head -600 "$TMP/x.jsonl" > "$TMP/x600.jsonl"
stopped rank-bt TERM "$TMP/x600.jsonl" "$BIN/rank-bt" --judge reference-ll --judge-model "$M" -t 1
stopped score-diversity INT "$TMP/x.jsonl" "$BIN/score-diversity" --embed-model "$M" -t 1
stopped score-reward TERM "$TMP/x.jsonl" "$BIN/score-reward" -m "$DATA/models/tiny-rm-q8_0.gguf" --chat-template none -t 1
stopped verify TERM "$TMP/x.jsonl" "$BIN/verify"
stopped gen-candidates INT "$TMP/p.jsonl" "$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 24 -t 1 -b 1
# the fast ones on a slowed-down stdin: a pipe that delivers the records a few at a time
slow() { $PY -c "
import sys, time
for i, l in enumerate(open(sys.argv[1])):
    sys.stdout.write(l); sys.stdout.flush()
    if i % 50 == 49: time.sleep(0.05)" "$1"; }
slow_stopped() { # NAME SIG INPUT CMD...
    name=$1 sig=$2 in=$3; shift 3
    "$@" < "$in" > "$TMP/ref" 2>/dev/null
    rm -f "$TMP/out"
    slow "$in" 2>/dev/null | "$@" > "$TMP/out" 2> "$TMP/err" &
    pid=$!
    for i in $(seq 200); do [ -s "$TMP/out" ] && break; sleep 0.01; done
    pkill -"$sig" -nx "$(basename "$1" | cut -c1-15)" -P $$ 2>/dev/null || kill -s "$sig" $(pgrep -n -f "$1") 2>/dev/null
    wait $pid; rc=$?
    why=""
    grep -q "stopped by SIG$sig after [0-9]" "$TMP/err" || why="stderr: $(head -c 200 "$TMP/err")"
    is_prefix "$TMP/out" "$TMP/ref" || why="${why:+$why; }not a prefix of the full output"
    [ -s "$TMP/out" ] && [ "$(tail -c 1 "$TMP/out" | od -An -c | tr -d ' ')" != '\n' ] && why="${why:+$why; }the last record is cut"
    if [ -z "$why" ]; then ok "$name: SIG$sig stops it after $(wc -l < "$TMP/out") of $(wc -l < "$TMP/ref") records, at a record boundary"
    else not_ok "$name: SIG$sig" "$why"; fi
}
slow_stopped score-ngram TERM "$TMP/x.jsonl" "$BIN/score-ngram" --index "$TMP/ngram.idx"
slow_stopped score-verifiable INT "$TMP/x.jsonl" "$BIN/score-verifiable" -q

# filter-topk reads everything before it writes: the signal lands in the writing pass
"$BIN/filter-topk" --top-k 2 "$TMP/scored.jsonl" > "$TMP/ref" 2>/dev/null
kill_when_written() { for i in $(seq 300); do [ -s "$TMP/out" ] && break; sleep 0.005; done; kill -TERM $1 2>/dev/null; }
rm -f "$TMP/out"
"$BIN/filter-topk" --top-k 2 "$TMP/scored.jsonl" > "$TMP/out" 2> "$TMP/err" & pid=$!
kill_when_written $pid; wait $pid; rc=$?
if { [ $rc = 1 ] && grep -q "stopped by SIGTERM after" "$TMP/err" && is_prefix "$TMP/out" "$TMP/ref"; } || { [ $rc = 0 ] && cmp -s "$TMP/out" "$TMP/ref"; }; then
    ok "filter-topk: SIGTERM while writing: stopped at a group boundary (or done), a prefix of the output (exit $rc)"
else not_ok "filter-topk: SIGTERM" "exit $rc: $(head -c 200 "$TMP/err")"; fi

# gen-candidates -o: the .part keeps whole prompts; --resume finishes it
G() { "$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 24 -t 1 -b 1 "$@" "$TMP/p.jsonl"; }
G > "$TMP/gref" 2>/dev/null
"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 24 -t 1 -b 1 -o "$TMP/g.jsonl" "$TMP/p.jsonl" 2> "$TMP/err" & pid=$!
for i in $(seq 300); do [ -s "$TMP/g.jsonl.part" ] && break; sleep 0.01; done
kill -TERM $pid; wait $pid; rc=$?
check "gen-candidates -o: SIGTERM: exit 1, no g.jsonl, whole prompts in g.jsonl.part, the message says --resume" sh -c "
[ $rc = 1 ] && [ ! -e '$TMP/g.jsonl' ] && grep -q 'g.jsonl.part: --resume continues' '$TMP/err' \
  && n=\$(wc -l < '$TMP/g.jsonl.part') && [ \$((n % 10)) = 0 ] && head -c \$(wc -c < '$TMP/g.jsonl.part') '$TMP/gref' | cmp -s - '$TMP/g.jsonl.part'"
G -o "$TMP/g.jsonl" --resume 2>/dev/null
check "... and --resume completes it, byte-identical" cmp "$TMP/gref" "$TMP/g.jsonl"

# index: the records indexed before the signal are committed
rm -f "$TMP/i.db"*
slow "$TMP/x.jsonl" 2>/dev/null | "$BIN/index" --db "$TMP/i.db" 2> "$TMP/err" &
pid=$!
sleep 0.5
pkill -TERM -nx index -P $$ 2>/dev/null || kill -TERM $(pgrep -n -f "$BIN/index") 2>/dev/null
wait $pid
n=$(sqlite3 "$TMP/i.db" "SELECT count(*) FROM records" 2>&1)
check "index: SIGTERM commits the records indexed so far ($n) and says so" sh -c "
grep -q 'stopped by SIGTERM after $n records (committed' '$TMP/err' && [ '$(sqlite3 "$TMP/i.db" "PRAGMA integrity_check")' = ok ]"

# serve: SIGTERM ends it (status 0) after its requests
rm -f "$TMP/port"
"$BIN/serve" -m "$M" --port 0 --port-file "$TMP/port" -t 1 > /dev/null 2> "$TMP/serr" &
spid=$!
for i in $(seq 200); do [ -s "$TMP/port" ] && break; sleep 0.02; done
kill -TERM $spid
t0=$(now_ms); wait $spid; rc=$?; dt=$(( $(now_ms) - t0 ))
if [ $rc = 0 ] && [ $dt -lt 5000 ]; then ok "serve: SIGTERM ends it (exit 0, ${dt} ms)"
else not_ok "serve: SIGTERM" "exit $rc after $dt ms: $(tail -c 200 "$TMP/serr")"; kill -9 $spid 2>/dev/null; fi
