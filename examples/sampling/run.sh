#!/bin/sh
# run.sh — the sampling exercises on the demo model, as
# examples/sampling/README.md shows them: each section prints what the
# walk-through quotes ("== NAME" lines start the sections).
#   sh examples/sampling/run.sh [WORKDIR]     (from the top directory, after make)
# Needs bin/ and jq. Deterministic: the same bytes on every run.
set -eu
BIN=${BIN:-bin}
W=${1:-work/sampling}
E=examples/sampling
M=examples/models/demo-base.gguf
REF=examples/models/demo-ref.gguf
mkdir -p "$W"
head -3 examples/prompts/demo.jsonl > "$W/prompts3.jsonl"
head -6 examples/prompts/demo.jsonl > "$W/prompts6.jsonl"

echo "== temperature"
"$BIN/gen-candidates" -m "$M" -H "$E/temperature.yaml" --seeds 0-7 -n 16 --min-new-tokens 0 --nucleus \
    "$W/prompts3.jsonl" > "$W/temperature.jsonl" 2> /dev/null
jq -rs 'group_by(.heuristic.name) | .[] |
    "\(.[0].heuristic.name): distinct texts over 8 seeds per prompt \(group_by(.prompt_id) | map(map(.generation) | unique | length)), nucleus \(map(.nucleus) | add / length | floor)"' \
    "$W/temperature.jsonl"

echo "== uniform"
for h in "T=0.01" "T=100"; do
    jq -c --arg h "$h" 'select(.heuristic.name == $h)' "$W/temperature.jsonl" > "$W/t.jsonl"
    "$BIN/analyze-sampler" -m "$M" --json --candidates "$W/t.jsonl" > "$W/t-analysis.jsonl" 2> /dev/null
    jq -rs --arg h "$h" 'map(select(.step != null)) |
        "\($h): mean p(drawn token) \(map(.p_target) | add / length * 1000 | round / 1000), x tokens kept \(map(.p_target * .kept) | add / length * 1000 | round / 1000) (\(length) steps)"' \
        "$W/t-analysis.jsonl"
done

echo "== grid"
"$BIN/gen-candidates" -m "$M" -H "$E/grid.yaml" --seeds 0-3 -n 24 --min-new-tokens 4 --nucleus \
    "$W/prompts6.jsonl" > "$W/grid.jsonl" 2> /dev/null
"$BIN/rank-bt" --judge reference-ll --judge-model "$REF" "$W/grid.jsonl" 2> /dev/null |
    "$BIN/score-diversity" --embed-model "$REF" 2> /dev/null > "$W/grid-scored.jsonl"
rm -f "$W/grid.db"
"$BIN/index" --db "$W/grid.db" "$W/grid-scored.jsonl" > /dev/null 2>&1
"$BIN/report" --db "$W/grid.db" -o "$W/grid-report" > /dev/null
sed -n '/^Leaderboard/,/^$/p' "$W/grid-report/summary.txt" | sed 's/ *$//'

echo "== constrained"
"$BIN/gen-candidates" -m "$M" -H "$E/constrained.yaml" --seeds 0-7 -n 64 --min-new-tokens 0 \
    "$E/constrained.jsonl" > "$W/constrained.jsonl" 2> /dev/null
jq -rs 'group_by(.prompt_id) | .[] |
    "\(.[0].prompt_id): \(length) candidates, \(map(select(.finish == "eos")) | length) complete and valid, \(map(select(.finish == "length")) | length) cut (valid: \(map(select(.finish == "length") | .constraint.valid) | unique))"' \
    "$W/constrained.jsonl"
jq -r 'select(.finish == "eos") | .generation' "$W/constrained.jsonl" | head -4
"$BIN/verify" "$W/constrained.jsonl" 2>&1 > /dev/null

echo "== cannot"
jq -rs 'map(select(.prompt_id != "person" and .finish == "eos") | .generation | fromjson) |
    "\(length) arrays of three numbers; \(map(select(add == 10)) | length) add up to 10: \(map(tostring) | join(" "))"' \
    "$W/constrained.jsonl"
jq -rs 'map(select(.prompt_id == "person" and .finish == "eos") | .generation | fromjson) |
    "\(length) persons; ages \(map(.age) | sort); \(map(select(.name | test("^[A-Z][a-z]+$"))) | length) names look like a name"' \
    "$W/constrained.jsonl"
