#!/bin/sh
# demo.sh — the quick start's pipeline (pipelines/demo.mk, what `make demo`
# runs) end to end on the demo models, smaller: two seeds, 16 new tokens, a
# small n-gram corpus. Both rounds must finish, verify must keep every
# prompt of both (round 2's include the learned sampler's records), and the
# held-out ranking must place the learned sampler (at this size it may
# keep none on the held-out prompts; the ranking says so). About a minute on 2 cores.
. "$(dirname "$0")/../lib/cli.sh"
if [ -n "${ASN_SANITIZED:-}" ]; then
    skip "pipelines/demo.mk end to end" "the sanitizer pass: checked in make test"
    exit 0
fi
mkdir -p "$TMP/corpus"
cp "$ROOT/tests/data/bpe/train.txt" "$TMP/corpus/train.txt"
D() { (cd "$ROOT" && make --no-print-directory -f pipelines/demo.mk OUT="$TMP/demo" BIN="$BIN" \
        CORPUS="$TMP/corpus" SEEDS=0-1 SEED_N=2 MAX_NEW=16 "$@"); }
expect_status "pipelines/demo.mk: both rounds, the sampler, the report" 0 D
check "verify keeps every prompt of both rounds (learned heuristics' ids included)" \
    [ "$(grep -c '^verify: .* 0 discarded' "$TMP/err")" = 2 ]
check "round 2 holds the learned sampler's records" grep -q '"name": *"learned ' "$TMP/demo/candidates.jsonl"
check "the held-out ranking places the learned sampler (or says it kept none there)" \
    grep -Eq '^(learned: rank [0-9]+ of [0-9]+|no learned sampler among the kept candidates)' \
    "$TMP/demo/heldout-rank.txt"
check "the report is written" test -s "$TMP/demo/report/report.html"
D > "$TMP/out2" 2>&1
check "a second run has nothing to do" grep -q "Nothing to be done\|is up to date" "$TMP/out2"
