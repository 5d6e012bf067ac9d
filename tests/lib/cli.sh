# cli.sh — helpers for the shell tests in tests/cli/ (sourced).
# Each check prints "ok - NAME" or "not ok - NAME: why"; tests/run.sh counts.
BIN=${ASN_BIN:?run through tests/run.sh or set ASN_BIN}
DATA=${ASN_TESTDATA:?}
ROOT=${ASN_ROOT:?}
# Sanitized builds: memory errors fail, leaks at exit do not (see Makefile).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
TMP=$(mktemp -d)
# servers a test started with start_serve are stopped at exit (TERM, which
# timeout passes on to the server)
SERVE_PIDS=""
trap 'for p in $SERVE_PIDS; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

# start_serve NAME MODEL [ARGS...]: serve on a free loopback port, bounded
# by timeout; its port in $TMP/NAME.port (waited for), its log $TMP/NAME.log
start_serve() {
    name=$1; shift
    model=$1; shift
    timeout 120 "$BIN/serve" -m "$model" --port 0 --port-file "$TMP/$name.port" -t 1 "$@" > /dev/null 2> "$TMP/$name.log" &
    SERVE_PIDS="$SERVE_PIDS $!"
    for i in $(seq 200); do [ -s "$TMP/$name.port" ] && break; sleep 0.05; done
}

ok()     { echo "ok - $1"; }
# skip NAME WHY: a check that cannot run here (tests/run.sh counts it as skipped)
skip()   { echo "ok - $1 # SKIP $2"; }
not_ok() { echo "not ok - $1: $2"; }

# expect_status NAME STATUS CMD...: runs CMD (stdout+stderr to $TMP/out), checks the exit status.
expect_status() {
    name=$1; want=$2; shift 2
    "$@" > "$TMP/out" 2> "$TMP/err"; got=$?
    if [ "$got" = "$want" ]; then ok "$name"; else not_ok "$name" "exit status $got, expected $want; stderr: $(head -c 300 "$TMP/err")"; fi
}

# expect_stderr NAME REGEX: the last command's stderr matches the extended regex.
expect_stderr() {
    if grep -Eq -- "$2" "$TMP/err"; then ok "$1"; else not_ok "$1" "stderr did not match /$2/: $(head -c 300 "$TMP/err")"; fi
}

# expect_stdout NAME REGEX
expect_stdout() {
    if grep -Eq -- "$2" "$TMP/out"; then ok "$1"; else not_ok "$1" "stdout did not match /$2/: $(head -c 300 "$TMP/out")"; fi
}

# check NAME CMD...: passes when CMD exits 0.
check() {
    name=$1; shift
    if "$@" > "$TMP/check.out" 2>&1; then ok "$name"; else not_ok "$name" "$(head -c 500 "$TMP/check.out")"; fi
}
