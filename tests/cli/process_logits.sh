#!/bin/sh
# process-logits from the command line: bad input is reported with FILE:LINE
# and the field, nothing already written is lost, --skip-invalid, unknown
# fields pass through, the draw is deterministic, --heuristics, exit codes.
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
PL="$BIN/process-logits"
CUSTOM="$DATA/reference-configs/custom_logit_processors_test.yaml"
ID='[{"name":"greedy","params":{}}]'

# pl_stdin ARGS...: process-logits reading $TMP/in on stdin.
pl_stdin() { "$PL" "$@" < "$TMP/in"; }
# one FILE PROCESSORS-JSON: writes one record over logits [1,2,3,4].
one() { printf '{"logits":[1,2,3,4],"processors":%s}\n' "$2" > "$1"; }
# stdout_lines NAME N: the last command wrote exactly N lines.
stdout_lines() {
    got=$(wc -l < "$TMP/out" | tr -d ' ')
    if [ "$got" = "$2" ]; then ok "$1"; else not_ok "$1" "$got lines on stdout, expected $2: $(head -c 300 "$TMP/out")"; fi
}
# stdout_ids NAME IDS: the "id" fields of the records on stdout, space-separated.
stdout_ids() {
    got=$("$PY" -c 'import json, sys; print(" ".join(json.loads(l)["id"] for l in open(sys.argv[1]) if l.strip()))' "$TMP/out" 2>&1)
    if [ "$got" = "$2" ]; then ok "$1"; else not_ok "$1" "ids on stdout: '$got', expected '$2'"; fi
}

# ------------------------------------------------- malformed input lines

cat > "$TMP/bad3.jsonl" <<'EOF'
{"id":"a","logits":[1,2,3],"processors":[{"name":"top_k","params":{"top_k":1}}]}
{"id":"b","logits":[3,2,1],"processors":[]}
{"id":"c","logits":[1,2,3],"processors":[
{"id":"d","logits":[0,0],"processors":[]}
EOF
expect_status "malformed JSON on line 3: exit status 1" 1 "$PL" "$TMP/bad3.jsonl"
expect_stderr "malformed JSON on line 3: the error names FILE:3" '^process-logits: [^ ]*bad3\.jsonl:3: invalid JSON'
stdout_ids "malformed JSON on line 3: the two records before it were written" "a b"
expect_stdout "malformed JSON on line 3: the records written are processed" '^\{"id":"a","logits":\[null,null,3\.0\],'

cp "$TMP/bad3.jsonl" "$TMP/in"
expect_status "malformed JSON on stdin: exit status 1" 1 pl_stdin
expect_stderr "malformed JSON on stdin: the error names <stdin>:3" '<stdin>:3: invalid JSON'

expect_status "--skip-invalid: exit status 0" 0 "$PL" --skip-invalid "$TMP/bad3.jsonl"
expect_stderr "--skip-invalid: a warning names FILE:3" '^process-logits: warning: [^ ]*bad3\.jsonl:3: invalid JSON'
expect_stderr "--skip-invalid: the skipped records are counted" 'warning: skipped 1 invalid record$'
stdout_ids "--skip-invalid: the other records were written, in order" "a b d"

printf '{"id":"a","logits":[1,2],"processors":[]}\n{"id":"b","logits":"x","processors":[]}\n{"id":"c","logits":[1],"processors":[{"name":"nucleus"}]}\n{"id":"d","logits":[5],"processors":[]}\n' > "$TMP/bad2.jsonl"
expect_status "--skip-invalid with two bad records: exit status 0" 0 "$PL" --skip-invalid "$TMP/bad2.jsonl"
expect_stderr "--skip-invalid with two bad records: both counted" 'warning: skipped 2 invalid records$'
stdout_ids "--skip-invalid with two bad records: the good ones were written" "a d"

printf '[1,2,3]\n' > "$TMP/array.jsonl"
expect_status "a record that is not an object: exit status 1" 1 "$PL" "$TMP/array.jsonl"
expect_stderr "a record that is not an object: clear error" 'array\.jsonl:1: record must be a JSON object'

printf '{"processors":[]}\n' > "$TMP/nologits.jsonl"
expect_status "missing logits: exit status 1" 1 "$PL" "$TMP/nologits.jsonl"
expect_stderr "missing logits: the error names the field" 'nologits\.jsonl:1: field "logits" is missing'

printf '{"logits":[],"processors":[]}\n' > "$TMP/empty_row.jsonl"
expect_status "empty logits: exit status 1" 1 "$PL" "$TMP/empty_row.jsonl"
expect_stderr "empty logits: the error names the field" 'empty_row\.jsonl:1: field "logits" must be a non-empty array'

printf '{"logits":[1,"2",3],"processors":[]}\n' > "$TMP/strlogit.jsonl"
expect_status "a logit that is a string: exit status 1" 1 "$PL" "$TMP/strlogit.jsonl"
expect_stderr "a logit that is a string: the error names the field and the element" \
    'strlogit\.jsonl:1: field "logits": element 1 must be a number or null, not string'

printf '{"logits":[1,1e39,3],"processors":[]}\n' > "$TMP/huge.jsonl"
expect_status "a logit that overflows float32 (1e39): exit status 1" 1 "$PL" "$TMP/huge.jsonl"
expect_stderr "a logit that overflows float32 (1e39): the error names the token" 'huge\.jsonl:1: .*token 1 is \+inf'

printf '{"logits":[null,null],"processors":[]}\n' > "$TMP/allinf.jsonl"
expect_status "a row that is all -inf: exit status 1" 1 "$PL" "$TMP/allinf.jsonl"
expect_stderr "a row that is all -inf: clear error" 'allinf\.jsonl:1: every logit is -inf'

printf '{"logits":[1,2],"processors":[],"seed":"x"}\n' > "$TMP/seed.jsonl"
expect_status "a seed that is a string: exit status 1" 1 "$PL" --sample "$TMP/seed.jsonl"
expect_stderr "a seed that is a string: the error names the field" 'seed\.jsonl:1: field "seed" must be an integer'

printf '{"logits":[1,2],"input_ids":[1,-1],"processors":[]}\n' > "$TMP/ids.jsonl"
expect_status "a negative input id: exit status 1" 1 "$PL" "$TMP/ids.jsonl"
expect_stderr "a negative input id: the error names the field and the element" 'ids\.jsonl:1: field "input_ids": element 1 must be a token id'

printf '{"logits":[1,2]}\n' > "$TMP/noprocs.jsonl"
expect_status "no processors and no --heuristic: exit status 1" 1 "$PL" "$TMP/noprocs.jsonl"
expect_stderr "no processors and no --heuristic: the error names the field" 'noprocs\.jsonl:1: field "processors" is missing'

expect_status "a file that does not exist: exit status 1" 1 "$PL" "$TMP/nope.jsonl"
expect_stderr "a file that does not exist: the error names it" 'nope\.jsonl: No such file or directory'

# ------------------------------------------------ processors and params

one "$TMP/unknown.jsonl" '[{"name":"top_k","params":{"top_k":2}},{"name":"nucleus","params":{"top_p":0.9}}]'
expect_status "unknown processor: exit status 1" 1 "$PL" "$TMP/unknown.jsonl"
expect_stderr "unknown processor: the error names it and its position" \
    'unknown\.jsonl:1: field "processors": processor 2 \(nucleus\): unknown processor "nucleus"'

# bad_param NAME PROCESSORS-JSON REGEX
bad_param() {
    one "$TMP/param.jsonl" "$2"
    expect_status "$1: exit status 1" 1 "$PL" "$TMP/param.jsonl"
    expect_stderr "$1: the error names the processor and the parameter" "param\\.jsonl:1: field \"processors\": $3"
}
bad_param "top_p 1.5" '[{"name":"top_p","params":{"top_p":1.5}}]' \
    'processor 1 \(top_p\): parameter "top_p" must be >= 0 and <= 1, got 1\.5'
bad_param "temperature 0" '[{"name":"temperature","params":{"temperature":0}}]' \
    'processor 1 \(temperature\): parameter "temperature" must be > 0, got 0'
bad_param "top_k 2.5" '[{"name":"top_k","params":{"top_k":2.5}}]' \
    'processor 1 \(top_k\): parameter "top_k" must be an integer'
bad_param "min_tokens_to_keep 0" '[{"name":"temperature","params":{"temperature":0.7}},{"name":"min_p","params":{"min_p":0.1,"min_tokens_to_keep":0}}]' \
    'processor 2 \(min_p\): parameter "min_tokens_to_keep" must be >= 1, got 0'
bad_param "an unknown parameter" '[{"name":"min_p","params":{"min_p":0.1,"top_p":0.5}}]' \
    'processor 1 \(min_p\): unknown parameter "top_p"'
bad_param "a missing parameter" '[{"name":"typical","params":{"min_tokens_to_keep":2}}]' \
    'processor 1 \(typical\): parameter "mass" is required'

one "$TMP/temp_int.jsonl" '[{"name":"temperature","params":{"temperature":2}}]'
expect_status "an integer temperature (2) is accepted" 0 "$PL" "$TMP/temp_int.jsonl"
expect_stdout "an integer temperature (2) divides the logits" '^\{"logits":\[0\.5,1\.0,1\.5,2\.0\],'
one "$TMP/temp_one.jsonl" '[{"name":"temperature","params":{"temperature":1}}]'
expect_status "temperature 1 (an integer) is accepted" 0 "$PL" "$TMP/temp_one.jsonl"
expect_stdout "temperature 1 leaves the logits as they are" '^\{"logits":\[1\.0,2\.0,3\.0,4\.0\],'

# --------------------------------------------------- empty and blank input

: > "$TMP/empty.jsonl"
expect_status "an empty file: exit status 0" 0 "$PL" "$TMP/empty.jsonl"
if [ ! -s "$TMP/out" ] && [ ! -s "$TMP/err" ]; then ok "an empty file: no output, no message"
else not_ok "an empty file: no output, no message" "stdout: $(head -c 100 "$TMP/out") stderr: $(head -c 100 "$TMP/err")"; fi
: > "$TMP/in"
expect_status "empty stdin: exit status 0" 0 pl_stdin
stdout_lines "empty stdin: no output" 0

printf '\n   \n{"id":"a","logits":[1,2],"processors":[]}\n\t\n\r\n{"id":"b","logits":[2,1],"processors":[]}\n\n' > "$TMP/blank.jsonl"
expect_status "blank lines are skipped: exit status 0" 0 "$PL" "$TMP/blank.jsonl"
stdout_ids "blank lines are skipped: both records written" "a b"
printf '\n\n{"id":"a","logits":[1,2],"processors":[]}\n\n{"id":"b","logits":[1,2],"processors":7}\n' > "$TMP/blank_bad.jsonl"
expect_status "blank lines count in line numbers" 1 "$PL" "$TMP/blank_bad.jsonl"
expect_stderr "blank lines count in line numbers: the error names FILE:5" 'blank_bad\.jsonl:5: field "processors"'

printf '{"id":"a","logits":[1,2],"processors":[]}\n' > "$TMP/f1.jsonl"
printf '{"id":"b","logits":[1,2],"processors":[]}\n{"id":"c","logits":[1,2],"processors":[]}\n' > "$TMP/f2.jsonl"
cp "$TMP/f1.jsonl" "$TMP/in"
expect_status "several files and - (stdin): exit status 0" 0 pl_stdin "$TMP/f2.jsonl" - "$TMP/f2.jsonl"
stdout_ids "several files and - (stdin): records in argument order" "b c a b c"

# ------------------------------------------------------------ pass-through

cat > "$TMP/fields.jsonl" <<'EOF'
{"id":"p1","prompt":"héllo \"world\"\n😀\u0000","logits":[1,2.5,null,-3],"meta":{"a":[1,2.5,null,true,false,"s"],"b":{},"c":[]},"big":9223372036854775807,"neg":-9223372036854775808,"small":1e-07,"real":100000.0,"exp":1.5e+16,"":"empty key","processors":[{"name":"top_k","params":{"top_k":2}}],"input_ids":[3,1],"token_note":null}
EOF
expect_status "unknown fields: exit status 0" 0 "$PL" --sample "$TMP/fields.jsonl"
check "unknown fields pass through unchanged, in order; only logits changes and token is added" "$PY" -c '
import json, sys
a = json.loads(open(sys.argv[1]).read())
b = json.loads(open(sys.argv[2]).read())
want = [k for k in a] + ["token"]
if list(b) != want:
    sys.exit("keys %r, expected %r" % (list(b), want))
for k in a:
    if k != "logits" and (a[k] != b[k] or type(a[k]) is not type(b[k])):
        sys.exit("field %r: %r became %r" % (k, a[k], b[k]))
if b["logits"] != [1.0, 2.5, None, None]:
    sys.exit("logits %r" % b["logits"])
if b["token"] not in (0, 1):
    sys.exit("token %r" % b["token"])
' "$TMP/fields.jsonl" "$TMP/out"

# --------------------------------------------------------------- --sample

# A flat distribution over 32 tokens, seeds 0..9, then steps 0..9.
"$PY" -c '
for s in range(10):
    print("{\"id\":\"flat\",\"seed\":%d,\"logits\":[%s],\"processors\":[]}" % (s, ",".join(["0"] * 32)))
for t in range(10):
    print("{\"id\":\"flat\",\"seed\":0,\"step\":%d,\"logits\":[%s],\"processors\":[]}" % (t, ",".join(["0"] * 32)))
' > "$TMP/flat.jsonl"
"$PL" --sample "$TMP/flat.jsonl" > "$TMP/s1.jsonl" 2> "$TMP/err"
"$PL" --sample "$TMP/flat.jsonl" > "$TMP/s2.jsonl" 2>> "$TMP/err"
if [ -s "$TMP/s1.jsonl" ] && cmp -s "$TMP/s1.jsonl" "$TMP/s2.jsonl"; then ok "--sample is deterministic: two runs give identical output"
else not_ok "--sample is deterministic: two runs give identical output" "$(head -c 300 "$TMP/err")"; fi
tokens() { sed -n "$1"p "$TMP/s1.jsonl" | sed 's/.*"token":\([0-9]*\).*/\1/' | sort -u | wc -l | tr -d ' '; }
nseed=$(tokens 1,10)
if [ "$nseed" -ge 2 ]; then ok "--sample: seeds 0..9 over a flat row draw different tokens ($nseed distinct)"
else not_ok "--sample: seeds 0..9 over a flat row draw different tokens" "all draw the same token"; fi
nstep=$(tokens 11,20)
if [ "$nstep" -ge 2 ]; then ok "--sample: steps 0..9 over a flat row draw different tokens ($nstep distinct)"
else not_ok "--sample: steps 0..9 over a flat row draw different tokens" "all draw the same token"; fi
# The draw depends on the record alone, not on what came before it.
sed -n 7p "$TMP/flat.jsonl" > "$TMP/in"
pl_stdin --sample > "$TMP/alone.jsonl" 2>&1
if [ -s "$TMP/alone.jsonl" ] && [ "$(cat "$TMP/alone.jsonl")" = "$(sed -n 7p "$TMP/s1.jsonl")" ]; then
    ok "--sample: a record draws the same token alone as in a stream"
else not_ok "--sample: a record draws the same token alone as in a stream" "$(head -c 200 "$TMP/alone.jsonl")"; fi
# The draw follows the processed row: after top_k 1 only the argmax can be drawn.
"$PY" -c '
for s in range(10):
    print("{\"seed\":%d,\"logits\":[0.5,0.4,0.9,0.1],\"processors\":[{\"name\":\"top_k\",\"params\":{\"top_k\":1}}]}" % s)
' > "$TMP/greedy.jsonl"
expect_status "--sample after top_k 1: exit status 0" 0 "$PL" --sample "$TMP/greedy.jsonl"
if [ "$(grep -c '"token":2}$' "$TMP/out")" = 10 ]; then ok "--sample after top_k 1 always draws the argmax"
else not_ok "--sample after top_k 1 always draws the argmax" "$(head -c 300 "$TMP/out")"; fi
expect_status "without --sample: no token field" 0 "$PL" "$TMP/greedy.jsonl"
if grep -q '"token"' "$TMP/out"; then not_ok "without --sample, records get no token" "$(head -c 200 "$TMP/out")"
else ok "without --sample, records get no token"; fi

# ------------------------------------------------------------ --heuristics

printf '{"id":"x","logits":[1,2,3,4],"processors":[{"name":"nucleus"}]}\n' > "$TMP/h.jsonl"
expect_status "--heuristics FILE --heuristic NAME: exit status 0" 0 \
    "$PL" --heuristics "$CUSTOM" --heuristic "Test Min-P Sampling" "$TMP/h.jsonl"
expect_stdout "--heuristic replaces the record's processors (min_p 0.05 on [1,2,3,4])" \
    '^\{"id":"x","logits":\[null,2\.0,3\.0,4\.0\],"processors":\[\{"name":"nucleus"\}\]\}$'
expect_status "--heuristic with a pipeline of two steps: exit status 0" 0 \
    "$PL" --heuristics "$CUSTOM" --heuristic "Standard Top-P (for comparison)" --sample "$TMP/h.jsonl"
expect_stdout "--heuristic with a pipeline of two steps: top_p 0.92 then temperature 0.9" \
    '"logits":\[null,2\.2222223,3\.3333335,4\.4444447\],.*"token":[1-3]\}$'
"$PY" -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], "w"))' "$CUSTOM" "$TMP/custom.json"
expect_status "--heuristics reads JSON too" 0 "$PL" --heuristics "$TMP/custom.json" --heuristic "Test Min-P Sampling" "$TMP/h.jsonl"
expect_stdout "--heuristics in JSON gives the same result" '"logits":\[null,2\.0,3\.0,4\.0\]'

expect_status "a heuristic name that does not exist: exit status 1" 1 \
    "$PL" --heuristics "$CUSTOM" --heuristic "Test Nucleus" "$TMP/h.jsonl"
expect_stderr "a heuristic name that does not exist: the error names it" 'custom_logit_processors_test\.yaml: no pipeline named "Test Nucleus"'
expect_status "--heuristics without --heuristic: exit status 2" 2 "$PL" --heuristics "$CUSTOM" "$TMP/h.jsonl"
expect_stderr "--heuristics without --heuristic: says they go together" '\-\-heuristics and \-\-heuristic go together'
expect_status "--heuristic without --heuristics: exit status 2" 2 "$PL" --heuristic "Test Min-P Sampling" "$TMP/h.jsonl"
expect_status "a heuristics file that does not exist: exit status 1" 1 "$PL" --heuristics "$TMP/none.yaml" --heuristic a "$TMP/h.jsonl"
expect_stderr "a heuristics file that does not exist: the error names it" 'none\.yaml: No such file or directory'

printf 'sampling_pipelines:\n  - name: a\n    processors: [\n  - name: b\n' > "$TMP/syntax.yaml"
expect_status "YAML syntax error in a heuristics file: exit status 1" 1 "$PL" --heuristics "$TMP/syntax.yaml" --heuristic a "$TMP/h.jsonl"
expect_stderr "YAML syntax error in a heuristics file: the error names FILE:LINE:COL" '^process-logits: [^ ]*syntax\.yaml:4:3: '
printf 'sampling_pipelines:\n  - name: a\n    processors:\n      - name: top_k\n        params: {top_k: 5}\n      - name: top_p\n        params:\n          top_p: 1.5\n' > "$TMP/range.yaml"
expect_status "a bad parameter in a heuristics file: exit status 1" 1 "$PL" --heuristics "$TMP/range.yaml" --heuristic a "$TMP/h.jsonl"
expect_stderr "a bad parameter in a heuristics file: FILE:LINE:COL of the processor, its name and the parameter" \
    'range\.yaml:6:[0-9]+: pipeline "a": processor 2 \(top_p\): parameter "top_p" must be >= 0 and <= 1, got 1\.5'
printf 'sampling_pipelines:\n  - name: a\n    processors: []\n  - name: a\n    processors: []\n' > "$TMP/twice.yaml"
expect_status "a pipeline name given twice: exit status 1" 1 "$PL" --heuristics "$TMP/twice.yaml" --heuristic a "$TMP/h.jsonl"
expect_stderr "a pipeline name given twice: the error names it and where" 'twice\.yaml:4:[0-9]+: pipeline name "a" appears twice'

# ---------------------------------------------------------------- options

expect_status "an unknown option: exit status 2" 2 "$PL" --bogus "$TMP/h.jsonl"
expect_stderr "an unknown option: the error names it" "unknown option '--bogus'"
