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

Interrupted runs: a file a program writes itself (`-o`, `--report`, a
checkpoint) is written under a temporary name beside it, synced and renamed
when complete, so it is the previous version or the whole new one, never a
part (a full disk fails with "FILE: write error: No space left on device"
and leaves it as it was). stdout cannot be renamed: a run killed while
writing it leaves a partial last line, which is the caller's to discard:
write to a temporary name and rename on success, as `pipelines/` do.
SIGINT or SIGTERM stops a record-writing program after the record it is
writing (exit 1, "stopped by SIGTERM after N records"); a second signal ends
it at once. What each program says to each kind of bad input is in
[bad-input.md](bad-input.md).

One flag vocabulary (tests/cli/flags.sh checks every `--help`): wherever a
program has the option, `-m` is the model it runs, `-H` the heuristics
YAML, `-s` the seed (seeds for gen-candidates), `-o` the output file, `-t`
the threads, `-n` the new tokens to generate, `--skip-bad` leaves malformed
records out (counted in the summary) instead of stopping. Older spellings
still work: `--skip-invalid`, analyze-sampler `-s` (now `-S`, the sampler),
`-n` of train-lm `--steps`, train-bpe `--vocab-size` and score-ngram
`--max-n`.
HEAD
for t in $(ls "$BIN" | sort); do
    [ -x "$BIN/$t" ] || continue
    printf '\n## %s\n\n```\n' "$t"
    "$BIN/$t" --help
    printf '```\n'
    # a program's subcommand (TOOL SUB --help) follows it
    for sub in "score-ngram build" "evaluate prompts"; do
        [ "${sub%% *}" = "$t" ] || continue
        printf '\n### %s\n\n```\n' "$sub"
        "$BIN/$t" "${sub#* }" --help
        printf '```\n'
    done
done
