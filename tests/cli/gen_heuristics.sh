#!/bin/sh
# gen_heuristics.sh — gen-heuristics: the reference grid's expansion for each
# model family (checked with PyYAML against the reference project's own
# output), the shipped expansions, --append, and grid validation.
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
GEN="$BIN/gen-heuristics"
GRID="$ROOT/configs/heuristics/grid.yaml"
REF="$DATA/reference-configs/generated_config_qwen2.5_3b.yaml"
# compare_heuristics ACTUAL EXPECTED [--official FAMILY]: same pipelines, read by PyYAML
compare_heuristics() { /usr/bin/python3 "$ROOT/tests/scripts/compare_heuristics.py" "$@"; }
# loads FILE (all of it) and applies pipeline NAME to a small row
apply() { echo '{"logits":[1,2,3]}' | "$BIN/process-logits" --heuristics "$1" --heuristic "$2" | grep -q '"logits"'; }
count() { grep -c '^- name: ' "$1"; }

# --- (1) family qwen is the reference project's output
expect_status "qwen: expands" 0 "$GEN" --grid "$GRID" --family qwen -o "$TMP/qwen.yaml"
check "qwen: same pipelines, params and types as the reference" compare_heuristics "$TMP/qwen.yaml" "$REF"
check "qwen: byte-identical to the reference after the header comment" \
    sh -c 'tail -n +3 "$1" | cmp - "$2"' _ "$TMP/qwen.yaml" "$REF"
"$GEN" --grid "$GRID" --family qwen > "$TMP/qwen-stdout.yaml"
check "-o FILE writes what stdout gets" cmp "$TMP/qwen.yaml" "$TMP/qwen-stdout.yaml"
for name in "official temp 1.0" "eta 1.0e-03 temp 0.3" "top_k 128 temp 2.5" "typical 0.92 temp 1.7"; do
    check "qwen: process-logits loads the file and applies \"$name\"" apply "$TMP/qwen.yaml" "$name"
done

# --- (2) the other families: counts and official rows
for fam in llama:396 gemma:396 none:384; do
    f=${fam%:*}; n=${fam#*:}
    "$GEN" --grid "$GRID" --family "$f" > "$TMP/$f.yaml" 2> "$TMP/err"
    got=$(count "$TMP/$f.yaml")
    if [ "$got" = "$n" ]; then ok "$f: $n pipelines"; else not_ok "$f: $n pipelines" "got $got; $(head -c 300 "$TMP/err")"; fi
    check "$f: the reference's pipelines with $f's official rows" \
        compare_heuristics --official "$f" "$TMP/$f.yaml" "$REF"
done
check "llama: process-logits applies \"official temp 0.3\"" apply "$TMP/llama.yaml" "official temp 0.3"
check "gemma: process-logits applies \"official temp 2.5\"" apply "$TMP/gemma.yaml" "official temp 2.5"
grep -q 'official' "$TMP/none.yaml" && not_ok "none: no official row" "found one" || ok "none: no official row"

# --- (2b) the research pipeline's current grids: its names ("_") and processors
for g in full filtered; do
    CUR="$DATA/reference-configs/current_${g}_llama.yaml"
    expect_status "reference-$g: expands" 0 "$GEN" --grid "$ROOT/configs/heuristics/reference-$g-grid.yaml" --family llama -o "$TMP/r-$g.yaml"
    check "reference-$g (llama): the pipelines its current generator writes" compare_heuristics "$TMP/r-$g.yaml" "$CUR"
    check "reference-$g (llama): byte-identical to its output after the header comment" \
        sh -c 'tail -n +3 "$1" | cmp - "$2"' _ "$TMP/r-$g.yaml" "$CUR"
    for f in gemma qwen none; do
        "$GEN" --grid "$ROOT/configs/heuristics/reference-$g-grid.yaml" --family "$f" > "$TMP/r-$g-$f.yaml"
        check "reference-$g ($f): its pipelines with $f's official rows" compare_heuristics --official "$f" "$TMP/r-$g-$f.yaml" "$CUR"
    done
done
check "reference-filtered: min_p at 1.7 and 2.1, the other rows not" $PY -c "
import yaml; n = [p['name'] for p in yaml.safe_load(open('$TMP/r-filtered.yaml'))['sampling_pipelines']]
assert 'min_p_0.1_temp_2.1' in n and 'top_k_256_temp_1.4' in n and 'temp_1.7' not in n and 'epsilon_1.0e-03_temp_2.1' not in n and len(n) == 143, len(n)"
printf 'temperatures: [0.5]\nfamilies: {none: []}\nsweeps:\n  - {row: nope}\n' > "$TMP/badrow.yaml"
expect_status "a row other than temp or official" 1 "$GEN" --grid "$TMP/badrow.yaml" --family none
expect_stderr "... says so" 'row.* must be temp or official'

# --- (3) the shipped expansions are what the tool generates now
for f in llama gemma qwen none; do
    (cd "$ROOT" && "$GEN" --grid configs/heuristics/grid.yaml --family "$f") > "$TMP/now.yaml" 2>&1
    check "configs/heuristics/$f.yaml is up to date (regenerate it with the command in its first line)" \
        cmp "$TMP/now.yaml" "$ROOT/configs/heuristics/$f.yaml"
done

# --- (4) --append: duplicate names are skipped with a warning, new ones appended
cat > "$TMP/extra.yaml" <<'YAML'
sampling_pipelines:
- name: temp 0.3
  weight: 1
  processors: [{name: temperature, params: {temperature: 9.0}}]
- name: 'mine: min_p #1, "quoted" \ too'
  weight: 2.5
  processors: [{name: min_p, params: {min_p: 0.2}}, {name: temperature, params: {temperature: 0.7}}]
- name: "yes"
  weight: 1
  processors: [{name: top_k, params: {top_k: 3}}]
YAML
{ cat "$REF"; cat <<'YAML'; } > "$TMP/expected-append.yaml"
- name: 'mine: min_p #1, "quoted" \ too'
  weight: 2.5
  processors: [{name: min_p, params: {min_p: 0.2}}, {name: temperature, params: {temperature: 0.7}}]
- name: "yes"
  weight: 1
  processors: [{name: top_k, params: {top_k: 3}}]
YAML
expect_status "--append: runs" 0 "$GEN" --grid "$GRID" --family qwen --append "$TMP/extra.yaml" -o "$TMP/append.yaml"
expect_stderr "--append: warns about the duplicate name" 'warning: .*skipping pipeline "temp 0\.3"'
check "--append: duplicate skipped, new pipelines appended as written" \
    compare_heuristics "$TMP/append.yaml" "$TMP/expected-append.yaml"
check "--append: names that need quoting load back" apply "$TMP/append.yaml" 'mine: min_p #1, "quoted" \ too'
check "--append: the name \"yes\" stays a string" apply "$TMP/append.yaml" yes
expect_status "--append: a missing file fails" 1 "$GEN" --grid "$GRID" --family qwen --append "$TMP/nope.yaml"

# --- (5) grid validation
printf 'temperatures: [0.5, 1.0\nfamilies: {none: []}\n' > "$TMP/syntax.yaml"
expect_status "bad YAML: exit 1" 1 "$GEN" --grid "$TMP/syntax.yaml" --family none
expect_stderr "bad YAML: names file:line:col" 'syntax\.yaml:[0-9]+:[0-9]+: '

# bad_grid WHAT FILE SWEEP-LINE REGEX: a grid whose only sweep (line 5) is
# SWEEP-LINE fails with exit 1 and an error matching REGEX
bad_grid() {
    printf 'temperatures: [0.5, 1.0]\nfamilies:\n  none: []\nsweeps:\n%s\n' "$3" > "$TMP/$2"
    expect_status "$1: exit 1" 1 "$GEN" --grid "$TMP/$2" --family none
    expect_stderr "$1: says where and what" "$4"
}
bad_grid "non-numeric value" nonnum.yaml '  - {processor: top_p, param: top_p, values: [0.5, abc]}' \
    'nonnum\.yaml:5:52: a value must be a number, not string'
bad_grid "empty list" empty.yaml '  - {processor: top_p, param: top_p, values: []}' \
    'empty\.yaml:5:[0-9]+: "values" is empty'
bad_grid "out-of-range value" range.yaml '  - {processor: top_p, param: top_p, values: [0.5, 1.5]}' \
    'range\.yaml:5:52: sweep "top_p": .*"top_p" must be'
bad_grid "unknown processor" unknownproc.yaml '  - {processor: top_q, param: top_p, values: [0.5]}' \
    'unknownproc\.yaml:5:[0-9]+: .*unknown processor "top_q"'
bad_grid "misspelt field" typo.yaml '  - {processor: top_p, param: top_p, value: [0.5]}' \
    'typo\.yaml:5:[0-9]+: sweep 1: unknown field "value"'
bad_grid "bad name format" fmt.yaml '  - {processor: eta, param: epsilon, format: "%s", values: [1.0e-3]}' \
    'fmt\.yaml:5:[0-9]+: sweep "eta": "format" must be'
printf 'temperatures: [0.5, 0.5]\nfamilies: {none: []}\nsweeps: [{processor: top_k, param: top_k, values: [8]}]\n' > "$TMP/twice.yaml"
expect_status "a repeated temperature: exit 1" 1 "$GEN" --grid "$TMP/twice.yaml" --family none
expect_stderr "a repeated temperature: names the pipeline" 'two pipelines named "temp 0\.5"'
printf 'temperatures: {base: 1.2, from: 3, to: -3, scale: 10}\nfamilies: {none: []}\nsweeps: [{processor: top_k, param: top_k, values: [8]}]\n' > "$TMP/rule.yaml"
expect_status "an empty temperature rule: exit 1" 1 "$GEN" --grid "$TMP/rule.yaml" --family none
expect_stderr "an empty temperature rule: names file:line:col" 'rule\.yaml:1:[0-9]+: '
printf 'temperatures: [1.0]\nfamilies:\n  none: [{name: top_k, params: {top_k: 0}}]\nsweeps: [{processor: top_k, param: top_k, values: [8]}]\n' > "$TMP/fam.yaml"
expect_status "a bad official processor: exit 1" 1 "$GEN" --grid "$TMP/fam.yaml" --family none
expect_stderr "a bad official processor: names file:line:col" 'fam\.yaml:3:[0-9]+: family "none": .*top_k'
expect_status "unknown family: usage error" 2 "$GEN" --grid "$GRID" --family mistral
expect_stderr "unknown family: lists the grid's families" 'unknown family "mistral".*llama, gemma, qwen, none'
expect_status "missing --family: usage error" 2 "$GEN" --grid "$GRID"
expect_status "missing grid file: exit 1" 1 "$GEN" --grid "$TMP/nope.yaml" --family qwen

# explicit temperatures: integers print as Python prints floats; integer params stay integers
printf 'temperatures: [1, 0.7]\nfamilies: {none: []}\nsweeps: [{processor: top_k, param: top_k, label: k, values: [8]}]\n' > "$TMP/explicit.yaml"
expect_status "explicit temperatures: expands" 0 "$GEN" --grid "$TMP/explicit.yaml" --family none
expect_stdout "explicit temperatures: temp 1.0, never temp 1" '^- name: temp 1\.0$'
expect_stdout "explicit temperatures: label and integer value" '^- name: k 8 temp 0\.7$'
expect_stdout "explicit temperatures: temperature written as a float" '^      temperature: 1\.0$'

# --- (6) usage
expect_status "--help exits 0" 0 "$GEN" --help
expect_stdout "--help documents the grid format" 'temperatures.*base, from, to, scale'
expect_status "--version exits 0" 0 "$GEN" --version

# --- (7) --samplers DIR: a learned pipeline per sampler file, as the
# research pipeline's generate_sampler_config writes one per checkpoint
FIXS="$ROOT/tests/fixtures/sampler"
mkdir -p "$TMP/w/samplers" "$TMP/w/empty"
cp "$FIXS/net.gguf" "$FIXS/local.gguf" "$FIXS/local_v50.gguf" "$TMP/w/samplers/"
: > "$TMP/w/samplers/notes.txt"
expect_status "--samplers DIR alone" 0 sh -c 'cd "$1" && "$2" --samplers samplers -o s.yaml' sh "$TMP/w" "$GEN"
expect_stderr "... skips a GGUF that is not a sampler, saying why" 'samplers/local_v50\.gguf: skipped: .*'
check "... its pipelines, read by PyYAML: learned_NAME, weight 1.0, the learned processor and the path, in name order" \
    $PY - "$TMP/w/s.yaml" <<'PYEOF'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
pl = lambda n: {"name": "learned_" + n, "weight": 1.0,
                "processors": [{"name": "learned", "params": {"path": "samplers/%s.gguf" % n}}]}
assert d == {"sampling_pipelines": [pl("local"), pl("net")]}, d
assert isinstance(d["sampling_pipelines"][0]["weight"], float)
PYEOF
check "... process-logits loads the file and applies learned_net" sh -c 'cd "$1" && echo "{\"logits\":[1,2,3]}" |
    "$2" --heuristics s.yaml --heuristic learned_net | grep -q "\"logits\""' sh "$TMP/w" "$BIN/process-logits"
expect_status "--samplers with --grid: the grid's pipelines, then the samplers'" 0 "$GEN" --grid "$GRID" --family qwen \
    --samplers "$TMP/w/samplers" -o "$TMP/gs.yaml"
check "... $(count "$TMP/qwen.yaml") + 2 pipelines, the samplers' last" sh -c \
    'test "$(grep -c "^- name: " "$1")" -eq $(($(grep -c "^- name: " "$2") + 2)) && tail -n 12 "$1" | grep -q "^- name: learned_net$"' \
    sh "$TMP/gs.yaml" "$TMP/qwen.yaml"
expect_status "a directory without sampler files is an error" 1 "$GEN" --samplers "$TMP/w/empty"
expect_stderr "... saying so" "empty: no asn sampler file"
expect_status "a missing directory is an error" 1 "$GEN" --samplers "$TMP/w/nope"
expect_stderr "... naming it" "nope: No such file or directory"
