#!/bin/sh
# Writes docs/tools.md: the reference of every program, made from their
# --help, so the two cannot drift apart (tests/cli/docs.sh checks it).
#   sh scripts/gen-tool-docs.sh [BIN] > docs/tools.md
BIN=${1:-bin}
cat <<'HEAD'
# Program reference

Every program reads JSONL from its file operands or stdin (`-`) and writes
JSONL to stdout; messages go to stderr. Exit status: 0 success, 1 bad input
or runtime error, 2 bad command line. This page is generated from each
program's `--help` by `scripts/gen-tool-docs.sh`.
HEAD
for t in $(ls "$BIN" | sort); do
    [ -x "$BIN/$t" ] || continue
    printf '\n## %s\n\n```\n' "$t"
    "$BIN/$t" --help
    printf '```\n'
done
