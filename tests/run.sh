#!/bin/sh
# Runs the test suite and ends with "N passed, N failed".
#   tests/run.sh [O] [unit|faults]
# O is the build root (default "."); "unit" runs only the C unit tests (the
# sanitizer pass); "faults" only the fault-injection scripts of tests/faults/
# (make test-faults, with FAULT_POINTS=50). Unit tests print TAP-style
# "ok"/"not ok" lines; each CLI
# test script (tests/cli/*.sh) does the same through tests/lib/cli.sh. A check
# that could not run here prints "ok - NAME # SKIP why" (TAP's skip): it is
# listed, with its reason, and counted as skipped, not passed. Each file
# prints a progress line ("[k/N] name: checks, seconds") as it ends, and the
# slowest files are listed before the closing line.
O=${1:-.}
ONLY=${2:-all}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ASN_ROOT="$ROOT"
export ASN_BIN="$(cd "$O" && pwd)/bin"
export ASN_TESTDATA="$ROOT/tests/data"
LOG=$(mktemp)
TIMES=$(mktemp)
trap 'rm -f "$LOG" "$TIMES"' EXIT
now() { date +%s.%N; }

run() { # name, command...
    name=$1; shift
    k=$((k + 1))
    t0=$(now)
    out=$("$@" 2>&1); rc=$?
    secs=$(awk "BEGIN { printf \"%.1f\", $(now) - $t0 }")
    printf '%s %s\n' "$secs" "$name" >> "$TIMES"
    printf '[%d/%d] %s: %d checks, %s s\n' "$k" "$total" "$name" \
        "$(printf '%s\n' "$out" | grep -acE '^(not )?ok ')" "$secs"
    printf '%s\n' "$out" | grep -aE '^(not )?ok ' >> "$LOG"
    printf '%s\n' "$out" | grep -aE '^not ok ' | sed "s|^|$name: |"
    printf '%s\n' "$out" | grep -aE '^ok .* # SKIP' | sed "s|^ok - |$name: skipped: |"
    if [ $rc -ne 0 ] && ! printf '%s\n' "$out" | grep -aq '^not ok '; then
        # crashed or failed without saying which check: count it
        echo "not ok - $name exited with status $rc" >> "$LOG"
        echo "$name: exited with status $rc"; printf '%s\n' "$out" | tail -5
    fi
}

k=0
case $ONLY in
faults) total=$(ls "$ROOT"/tests/faults/*.sh | grep -vc '/lib\.sh$') ;;
all) total=$(($(ls "$O"/build/tests/test_* 2> /dev/null | wc -l) + $(ls "$ROOT"/tests/cli/*.sh | wc -l))) ;;
*) total=$(ls "$O"/build/tests/test_* 2> /dev/null | wc -l) ;;
esac
if [ "$ONLY" = faults ]; then
    for t in "$ROOT"/tests/faults/*.sh; do
        [ "$(basename "$t")" = lib.sh ] || run "$(basename "$t")" sh "$t"
    done
fi
[ "$ONLY" = faults ] || for t in "$O"/build/tests/test_*; do
    [ -x "$t" ] || continue
    run "$(basename "$t")" "$t"
done
if [ "$ONLY" = all ]; then
    for t in "$ROOT"/tests/cli/*.sh; do
        [ -f "$t" ] || continue
        run "$(basename "$t")" sh "$t"
    done
fi

echo "slowest: $(sort -rn "$TIMES" | head -5 | awk '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), $2, $1 }')"
pass=$(grep -a '^ok ' "$LOG" | grep -avc ' # SKIP')
skip=$(grep -a '^ok ' "$LOG" | grep -ac ' # SKIP')
fail=$(grep -ac '^not ok ' "$LOG")
[ "$skip" -eq 0 ] || echo "$skip skipped"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
