#!/bin/sh
# fuzz-run.sh SECONDS TIMEOUT TARGET... — runs each libFuzzer target of
# build/fuzz/ for SECONDS of wall time on its corpus (build/fuzz/corpus-NAME,
# kept between runs, started from tests/fuzz/seeds/NAME) and appends one
# line per run to tests/fuzz/ledger.tsv:
#
#   date  target  wall_s  cpu_s  executions  coverage  features  corpus  crashes
#
# cpu_s is the run's user + system time (a run at low priority on a busy
# machine gets less than its wall time); coverage and features are
# libFuzzer's last "cov:" and "ft:" (edges and features reached with the
# corpus so far). `make fuzz-totals` sums the ledger per target. Failing
# inputs go to build/fuzz/crashes-NAME/ (crashes counts them); once fixed, they are kept in
# tests/fuzz/regressions/NAME/, which the unit tests replay.
set -u
secs=$1 tmo=$2
shift 2
ledger=tests/fuzz/ledger.tsv
[ -s "$ledger" ] || printf 'date\ttarget\twall_s\tcpu_s\texecutions\tcoverage\tfeatures\tcorpus\tcrashes\n' > "$ledger"
tf=$(mktemp)
trap 'rm -f "$tf"' EXIT
cpu_now() { # CPU: children's user + system seconds so far (times in this shell, not a subshell)
    times > "$tf"
    CPU=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } print t }' "$tf")
}
# what libFuzzer saves when an input fails: crash-, leak-, timeout-, oom-
# (its slow-unit- files are inputs that merely took long: a stopped or
# starved process writes them too, so they are not counted)
found() { ls "build/fuzz/crashes-$1" | grep -E '^(crash|leak|timeout|oom)-' || true; }
status=0
for n in "$@"; do
    mkdir -p "build/fuzz/corpus-$n" "build/fuzz/crashes-$n"
    before=$(found "$n" | wc -l)
    echo "fuzzing $n for ${secs}s"
    cpu_now
    c0=$CPU
    t0=$(date +%s)
    "build/fuzz/$n" -max_total_time="$secs" -max_len=8192 -timeout="$tmo" -print_final_stats=1 \
        -artifact_prefix="build/fuzz/crashes-$n/" "build/fuzz/corpus-$n" "tests/fuzz/seeds/$n" \
        > "build/fuzz/log-$n.txt" 2>&1
    t1=$(date +%s)
    cpu_now
    c1=$CPU
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build/fuzz/log-$n.txt" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "build/fuzz/log-$n.txt" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "build/fuzz/log-$n.txt" | tail -1 | cut -d' ' -f2)
    corpus=$(ls "build/fuzz/corpus-$n" | wc -l)
    crashes=$(($(found "$n" | wc -l) - before))
    printf '%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t%d\t%d\n' "$(date -u +%Y-%m-%d)" "$n" $((t1 - t0)) \
        "$(echo "$c1 $c0" | awk '{print $1 - $2}')" "${execs:-0}" "${cov:-0}" "${ft:-0}" "$corpus" "$crashes" >> "$ledger"
    tail -1 "$ledger"
    grep -E 'ERROR: ' "build/fuzz/log-$n.txt" | head -3
    found "$n" | sed "s|^|  crash: build/fuzz/crashes-$n/|"
    [ "$crashes" -eq 0 ] || status=1
done
exit $status
