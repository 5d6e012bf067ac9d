# enospc.sh — full disks: every tool writing stdout to /dev/full exits 1
# with "stdout (/dev/full): write error: No space left on device"; every
# tool writing its own files, on a tmpfs too small for them (mounted here
# when run as root; skipped otherwise), exits 1 naming the file with "No
# space left on device", leaves the previous version of the file as it
# was and no temporary file behind.
. "$ASN_ROOT/tests/lib/cli.sh"
. "$ASN_ROOT/tests/faults/lib.sh"
M="$DATA/models/tiny-spm-q8_0.gguf"
H="$DATA/reference-configs/custom_logit_processors_test.yaml"
FULL="$TMP/full"
mkdir -p "$FULL"
trap 'umount "$FULL" 2>/dev/null; rm -rf "$TMP"' EXIT

cp "$DATA/reference-configs/test_prompts.jsonl" "$TMP/p.jsonl"
"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 12 --min-new-tokens 2 -t 1 "$TMP/p.jsonl" > "$TMP/c.jsonl" 2>/dev/null
"$BIN/score-ngram" build -o "$TMP/ngram.idx" "$DATA/ngram/corpus_a.txt" 2>/dev/null
"$BIN/score-verifiable" -q "$TMP/c.jsonl" | "$BIN/rank-bt" --judge reference-ll --judge-model "$M" -t 1 \
    | "$BIN/score-diversity" --embed-model "$M" -t 1 > "$TMP/scored.jsonl" 2>/dev/null
printf '{"text": "Once upon a time there was a compiler."}\n' > "$TMP/t.jsonl"
printf '{"logits": [1, 2, 3, 0.5]}\n' > "$TMP/l.jsonl"
printf 'hidden_dims: 8\n' > "$TMP/local.yaml"
"$BIN/index" --db "$TMP/i.db" "$TMP/scored.jsonl" 2>/dev/null

# ---- stdout to /dev/full
n=0
while IFS='|' read -r name cmd; do
    [ -n "$name" ] || continue
    n=$((n + 1))
    eval "set -- $cmd"
    "$@" > /dev/full 2> "$TMP/err"; rc=$?
    if [ $rc = 1 ] && grep -q 'stdout (/dev/full): write error: No space left on device' "$TMP/err"; then
        ok "$name > /dev/full: exit 1, \"$(head -1 "$TMP/err" | cut -c1-90)\""
    else
        not_ok "$name > /dev/full" "exit $rc: $(head -c 300 "$TMP/err")"
    fi
done <<EOF2
gen-candidates|"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 12 --min-new-tokens 2 -t 1 "$TMP/p.jsonl"
gen-candidates --merge|"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 12 --min-new-tokens 2 --merge "$TMP/c.jsonl" "$TMP/p.jsonl"
verify|"$BIN/verify" "$TMP/c.jsonl"
rank-bt|"$BIN/rank-bt" --judge reference-ll --judge-model "$M" -t 1 "$TMP/c.jsonl"
score-diversity|"$BIN/score-diversity" --embed-model "$M" -t 1 "$TMP/c.jsonl"
score-ngram|"$BIN/score-ngram" --index "$TMP/ngram.idx" "$TMP/c.jsonl"
score-verifiable|"$BIN/score-verifiable" -q "$TMP/c.jsonl"
score-reward|"$BIN/score-reward" -m "$DATA/models/tiny-rm-q8_0.gguf" --chat-template none -t 1 "$TMP/c.jsonl"
filter-topk|"$BIN/filter-topk" --top-k 2 "$TMP/scored.jsonl"
filter-topk --pairs|"$BIN/filter-topk" --pairs "$TMP/scored.jsonl"
tokenize|"$BIN/tokenize" -m "$M" "Once upon a time"
perplexity|"$BIN/perplexity" -m "$M" "$TMP/t.jsonl"
process-logits|"$BIN/process-logits" --heuristics "$H" --heuristic "Test Min-P Sampling" "$TMP/l.jsonl"
generate|"$BIN/generate" -m "$M" -n 8 "Once upon a time"
gen-heuristics|"$BIN/gen-heuristics" --grid "$ROOT/configs/heuristics/grid.yaml" --family llama -o -
report (summary)|"$BIN/report" --db "$TMP/i.db" -o "$TMP/rep"
analyze-sampler|"$BIN/analyze-sampler" -m "$M" --candidates "$TMP/c.jsonl"
EOF2

# ---- files on a full filesystem
if ! mount -t tmpfs -o size=256k tmpfs "$FULL" 2>/dev/null; then
    skip "files on a full filesystem" "cannot mount a tmpfs here (needs root)"
    exit 0
fi
# file_full NAME FILE CMD...: FILE (on the tmpfs, filled up) holds
# "previous"; CMD must fail naming FILE and leave it so. KEEP: a file the
# tool keeps on purpose (gen-candidates' FILE.part, for --resume).
file_full() {
    name=$1 f=$2; shift 2
    rm -rf "$FULL"/* 2>/dev/null
    printf 'previous\n' > "$f"
    head -c $((256 * 1024)) /dev/zero > "$FULL/filler" 2>/dev/null
    "$@" > /dev/null 2> "$TMP/err"; rc=$?
    left=$(ls -A "$FULL" | grep -v "^$(basename "$f")\$" | grep -vx "filler${KEEP:+\|$KEEP}" | head -3 | tr '\n' ' ')
    if [ $rc = 1 ] && grep -q "$(basename "$f").*No space left on device" "$TMP/err" \
        && [ "$(cat "$f")" = previous ] && [ -z "$left" ]; then
        ok "$name on a full disk: exit 1, \"$(head -1 "$TMP/err" | cut -c1-100)\", the previous file intact"
    else
        not_ok "$name on a full disk" "exit $rc; previous intact: $([ "$(cat "$f")" = previous ] && echo yes || echo no); left behind: '$left'; $(head -c 300 "$TMP/err")"
    fi
}
KEEP=c.jsonl.part file_full "gen-candidates -o (keeps FILE.part for --resume)" "$FULL/c.jsonl" \
    "$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 12 --min-new-tokens 2 -t 1 -o "$FULL/c.jsonl" "$TMP/p.jsonl"
file_full "gen-candidates --merge -o" "$FULL/m.jsonl" "$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 12 \
    --min-new-tokens 2 --merge "$TMP/c.jsonl" -o "$FULL/m.jsonl" "$TMP/p.jsonl"
file_full "gen-heuristics -o" "$FULL/h.yaml" "$BIN/gen-heuristics" --grid "$ROOT/configs/heuristics/grid.yaml" --family llama -o "$FULL/h.yaml"
file_full "score-ngram build -o" "$FULL/ngram.idx" "$BIN/score-ngram" build -o "$FULL/ngram.idx" "$DATA/ngram/corpus_a.txt" "$DATA/ngram/corpus_b.txt"
file_full "train-sampler -o" "$FULL/s.gguf" "$BIN/train-sampler" -m "$M" -q -b 5 --gradient-accumulation-steps 1 \
    -a LocalProbabilityTransform -c "$TMP/local.yaml" --max-steps 2 --save-steps 0 -o "$FULL/s.gguf" --log "$TMP/s.log" "$TMP/c.jsonl"
file_full "report -o" "$FULL/report.html" "$BIN/report" --db "$TMP/i.db" -o "$FULL"
file_full "verify --report" "$FULL/v.json" "$BIN/verify" --report "$FULL/v.json" "$TMP/c.jsonl"
# index: the database on the full disk; the rows of the earlier run stay
rm -rf "$FULL"/*
head -5 "$TMP/c.jsonl" | "$BIN/index" --db "$FULL/i.db" 2>/dev/null
before=$(sqlite3 "$FULL/i.db" "SELECT count(*) FROM records" 2>&1)
/usr/bin/python3 -c "
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
for k in range(40):
    for r in recs:
        print(json.dumps(dict(r, id='%s-%d' % (r['id'], k))))" "$TMP/scored.jsonl" 2>/dev/null | "$BIN/index" --db "$FULL/i.db" > /dev/null 2> "$TMP/err"; rc=$?
after=$(sqlite3 "$FULL/i.db" "PRAGMA integrity_check; SELECT count(*) FROM records" 2>&1 | tr '\n' ' ')
n_after=${after#ok }
if [ $rc = 1 ] && grep -q "i.db.*No space left on device" "$TMP/err" && [ "$after" != "$n_after" ] \
    && [ "${n_after% }" -ge "$before" ] && [ "$before" -gt 0 ]; then
    ok "index on a full disk: exit 1, \"$(head -1 "$TMP/err" | cut -c1-100)\", the database intact ($after)"
else
    not_ok "index on a full disk" "exit $rc; $after; $(head -c 300 "$TMP/err")"
fi
