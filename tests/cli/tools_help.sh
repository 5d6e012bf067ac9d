#!/bin/sh
# Every program in bin/ follows the conventions: --help (and -h) prints the
# usage on stdout and exits 0, --version prints "NAME (asn) VERSION" and exits
# 0, a bogus option is a usage error (exit status 2) that names the option.
. "$(dirname "$0")/../lib/cli.sh"

VERSION=$(sed -n 's/^VERSION *:*= *\([^ ]*\).*/\1/p' "$ROOT/Makefile")
n=0
for t in "$BIN"/*; do
    [ -f "$t" ] && [ -x "$t" ] || continue
    n=$((n + 1))
    p=$(basename "$t")

    expect_status "$p --help exits 0" 0 "$t" --help
    expect_stdout "$p --help prints Usage:" "^Usage: $p( |\$)"
    expect_stdout "$p --help lists --help and --version" '^ .*--version'
    if [ -s "$TMP/err" ]; then not_ok "$p --help writes nothing to stderr" "$(head -c 200 "$TMP/err")"
    else ok "$p --help writes nothing to stderr"; fi
    cp "$TMP/out" "$TMP/help"
    expect_status "$p -h exits 0" 0 "$t" -h
    if cmp -s "$TMP/out" "$TMP/help"; then ok "$p -h prints the same as --help"
    else not_ok "$p -h prints the same as --help" "$(head -c 200 "$TMP/out")"; fi

    expect_status "$p --version exits 0" 0 "$t" --version
    expect_stdout "$p --version prints a version" "^$p \\(asn\\) [0-9]+\\.[0-9]+(\\.[0-9]+)?"
    if [ -n "$VERSION" ] && grep -q "^$p (asn) $VERSION\$" "$TMP/out"; then ok "$p --version is the Makefile's version ($VERSION)"
    else not_ok "$p --version is the Makefile's version ($VERSION)" "$(head -c 200 "$TMP/out")"; fi

    expect_status "$p --no-such-option exits 2" 2 "$t" --no-such-option
    expect_stderr "$p --no-such-option names the option" "^$p: .*'?--no-such-option'?"
    if [ -s "$TMP/out" ]; then not_ok "$p --no-such-option writes nothing to stdout" "$(head -c 200 "$TMP/out")"
    else ok "$p --no-such-option writes nothing to stdout"; fi
    expect_status "$p -Z (a bogus short option) exits 2" 2 "$t" -Z
done
if [ "$n" -gt 0 ] && [ -x "$BIN/process-logits" ]; then ok "bin/ holds the programs ($n)"
else not_ok "bin/ holds the programs ($n)" "no executable in $BIN (run make first)"; fi
