#!/bin/sh
# Runs the test suite and ends with "N passed, N failed".
#   tests/run.sh [O] [unit|faults]
# O is the build root (default "."); "unit" runs only the C unit tests;
# "faults" only the fault-injection scripts of tests/faults/ (make
# test-faults, with FAULT_POINTS=50). Unit tests print TAP-style
# "ok"/"not ok" lines; each CLI test script (tests/cli/*.sh) does the same
# through tests/lib/cli.sh. A check that could not run here prints
# "ok - NAME # SKIP why" (TAP's skip): it is listed, with its reason, and
# counted as skipped, not passed.
#
# Files run TEST_JOBS at a time (default: the number of CPUs; each test
# works in a folder of its own and its servers take ports the system
# gives), the longest (FIRST) first. Each file prints a progress line
# ("[k/N] name: checks, seconds") as it ends; the failures and skips are
# listed after all have ended, in the suite's order, then the slowest
# files and the closing line.
FIRST="sampler_evidence.sh maskbench_sample.sh train_sampler_rl.sh schema_automata.sh cluster_parallel.sh
faults.sh demo.sh examples.sh schemas.sh train_sampler.sh cluster_slurm.sh server_client.sh"

if [ "${1:-}" = --one ]; then # one file (run by xargs below): RES PATH
    res=$2 path=$3 name=$(basename "$3")
    t0=$(date +%s.%N)
    case $path in
    *.sh) out=$(sh "$path" 2>&1) ;;
    *) out=$("$path" 2>&1) ;;
    esac
    rc=$?
    secs=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")
    printf '%s\n' "$out" > "$res/$name.out"
    printf '%s %s\n' "$rc" "$secs" > "$res/$name.rc"
    printf '[%d/%d] %s: %d checks, %s s\n' "$(ls "$res" | grep -c '\.rc$')" "$RUN_TOTAL" "$name" \
        "$(printf '%s\n' "$out" | grep -acE '^(not )?ok ')" "$secs"
    exit 0
fi

O=${1:-.}
ONLY=${2:-all}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ASN_ROOT="$ROOT"
export ASN_BIN="$(cd "$O" && pwd)/bin"
export ASN_TESTDATA="$ROOT/tests/data"
JOBS=${TEST_JOBS:-$(nproc 2> /dev/null || echo 1)}
[ "$ONLY" != faults ] || JOBS=1 # kill points, full disks and limits: one at a time
RES=$(mktemp -d)
LOG=$RES/log
TIMES=$RES/times
trap 'rm -rf "$RES"' EXIT

LIST=$RES/list
: > "$LIST"
case $ONLY in
faults)
    for t in "$ROOT"/tests/faults/*.sh; do
        [ "$(basename "$t")" = lib.sh ] || echo "$t" >> "$LIST"
    done
    ;;
*)
    for t in "$O"/build/tests/test_*; do
        [ -x "$t" ] && echo "$t" >> "$LIST"
    done
    [ "$ONLY" = unit ] || ls "$ROOT"/tests/cli/*.sh >> "$LIST"
    ;;
esac
export RUN_TOTAL=$(wc -l < "$LIST")

# the longest files first, so that no core idles at the end
: > "$RES/order"
for name in $FIRST; do
    grep "/$name\$" "$LIST" >> "$RES/order"
done
grep -vxF -f "$RES/order" "$LIST" >> "$RES/order"
xargs -r -d '\n' -n 1 -P "$JOBS" sh "$ROOT/tests/run.sh" --one "$RES" < "$RES/order"

# the results, in the suite's order
: > "$LOG"
: > "$TIMES"
while read -r path; do
    name=$(basename "$path")
    [ -f "$RES/$name.rc" ] || { echo "not ok - $name did not run" >> "$LOG"; continue; }
    read -r rc secs < "$RES/$name.rc"
    out=$(cat "$RES/$name.out")
    printf '%s %s\n' "$secs" "$name" >> "$TIMES"
    printf '%s\n' "$out" | grep -aE '^(not )?ok ' >> "$LOG"
    failed=0
    printf '%s\n' "$out" | grep -aq '^not ok ' && failed=1
    printf '%s\n' "$out" | grep -aE '^not ok ' | sed "s|^|$name: |"
    if [ $failed = 1 ]; then # what the file said besides its checks
        printf '%s\n' "$out" | grep -avE '^(not )?ok ' | tail -n 40 | sed "s|^|$name: |"
    fi
    printf '%s\n' "$out" | grep -aE '^ok .* # SKIP' | sed "s|^ok - |$name: skipped: |"
    if [ "$rc" -ne 0 ] && [ $failed = 0 ]; then
        # crashed or failed without saying which check: count it
        echo "not ok - $name exited with status $rc" >> "$LOG"
        echo "$name: exited with status $rc"
        printf '%s\n' "$out" | tail -5
    fi
done < "$LIST"

echo "slowest: $(sort -rn "$TIMES" | head -5 | awk '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), $2, $1 }')"
pass=$(grep -a '^ok ' "$LOG" | grep -avc ' # SKIP')
skip=$(grep -a '^ok ' "$LOG" | grep -ac ' # SKIP')
fail=$(grep -ac '^not ok ' "$LOG")
[ "$skip" -eq 0 ] || echo "$skip skipped"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
