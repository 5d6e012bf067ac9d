# lib.sh — helpers of the fault-injection tests (sourced after
# tests/lib/cli.sh): a seeded random schedule, a run killed with SIGKILL
# after a given delay, and the tally of kill points per tool.
#
# FAULT_POINTS: kill points per tool (tests/run.sh runs a few; `make
# test-faults` runs 50). FAULT_SEED: the schedule's seed.
FAULT_POINTS=${FAULT_POINTS:-4}
FAULT_SEED=${FAULT_SEED:-20}
RNG=$FAULT_SEED

# rand_below N: R = the schedule's next number in [0, N) (an LCG, so the
# same seed gives the same schedule with any shell)
rand_below() {
    RNG=$(( (RNG * 1103515245 + 12345) % 2147483648 ))
    R=$(( (RNG / 65536) % $1 ))
}

sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# spawn_killed MS OUT CMD...: runs CMD with stdout to OUT (- for none),
# sends it SIGKILL after MS milliseconds (if it still runs), and sets RC to
# its exit status (137 when the kill landed) and KILLED to 1 or 0.
spawn_killed() {
    _ms=$1 _out=$2; shift 2
    [ "$_out" = - ] && _out=/dev/null
    "$@" > "$_out" 2>> "$TMP/fault.log" &
    _pid=$!
    sleep_ms "$_ms"
    kill -9 "$_pid" 2> /dev/null
    wait "$_pid"; RC=$?
    KILLED=0; [ "$RC" = 137 ] && KILLED=1
    return 0
}

# time_ms CMD...: T = the wall time of one uninterrupted run (stdout dropped)
time_ms() {
    t0=$(now_ms); "$@" > /dev/null 2>> "$TMP/fault.log"; T=$(( $(now_ms) - t0 ))
    [ "$T" -gt 0 ] || T=1
}

# is_prefix PART WHOLE: PART's bytes are the start of WHOLE's
is_prefix() {
    n=$(wc -c < "$1")
    [ "$n" -le "$(wc -c < "$2")" ] && head -c "$n" "$2" | cmp -s - "$1"
}

# tally NAME TRIED KILLED PASSED: one "ok" line per tool, and a line of
# figures in $FAULT_REPORT when set
tally() {
    if [ "$4" = "$2" ]; then ok "$1: $4 of $2 kill points pass ($3 landed mid-run)"
    else not_ok "$1" "$4 of $2 kill points pass ($3 landed mid-run); see above"; fi
    [ -n "${FAULT_REPORT:-}" ] && printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$FAULT_REPORT"
    return 0
}
