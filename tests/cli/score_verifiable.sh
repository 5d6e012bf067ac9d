# score_verifiable.sh — score-verifiable on hand-made candidates
# (tests/data/verifiable/candidates.jsonl): rewards by dataset, pass-through,
# missing fields and odd types, empty input, determinism, schemas, errors.
# The checks themselves are tested against the Python originals in
# tests/unit/test_verifiers.c.
. "$ASN_ROOT/tests/lib/cli.sh"
SV="$BIN/score-verifiable"
D="$DATA/verifiable"
PY=/usr/bin/python3
V="$ROOT/tests/scripts/validate_schema.py"

expect_status "score-verifiable runs" 0 "$SV" "$D/candidates.jsonl"
cp "$TMP/out" "$TMP/c.jsonl"
expect_stderr "the summary counts the records on stderr" "12 records: 7 passed, 3 failed, 2 not verifiable, 0 with missing fields"
check "output is valid against verifiable.schema.json" $PY "$V" verifiable "$TMP/c.jsonl"
check "output is still a valid candidate record" $PY "$V" candidate "$TMP/c.jsonl"
check "rewards by dataset; every other field and the order unchanged" $PY - "$D/candidates.jsonl" "$TMP/c.jsonl" <<'PYEOF'
import json, sys
inp = [json.loads(l) for l in open(sys.argv[1])]
out = [json.loads(l) for l in open(sys.argv[2])]
assert len(inp) == len(out)
rewards = []
for a, b in zip(inp, out):
    rewards.append(b.pop("verifiable_reward"))
    d = b.pop("verifiable")
    assert a == b, (a, b)
    if rewards[-1] is None:
        assert d is None
    else:
        assert d["dataset"] in ("gsm8k", "MATH", "ifeval") and "error" not in d, d
        assert (rewards[-1] == 1) == all(d["passed"]), d
assert rewards == [1, 0, 1, 1, 1, 1, 0, 1, 0, 1, None, None], rewards
ex = [json.loads(l)["verifiable"] for l in open(sys.argv[2])]
assert ex[0]["extracted"] == "7" and ex[2]["extracted"] == "1250" and ex[3]["extracted"] == "\\dfrac{1}{2}"
assert ex[8]["passed"] == [False, False, True] and ex[8]["extracted"] is None
PYEOF
check "integers 1 and 0, never 1.0" grep -q '"verifiable_reward":1,' "$TMP/c.jsonl"

# determinism, stdin, several files
"$SV" "$D/candidates.jsonl" > "$TMP/c2.jsonl" 2>/dev/null
check "same input, byte-identical output" cmp "$TMP/c.jsonl" "$TMP/c2.jsonl"
"$SV" < "$D/candidates.jsonl" > "$TMP/c3.jsonl" 2>/dev/null
check "stdin gives the same output" cmp "$TMP/c.jsonl" "$TMP/c3.jsonl"
"$SV" "$D/candidates.jsonl" - < "$D/candidates.jsonl" > "$TMP/c4.jsonl" 2>/dev/null
cat "$TMP/c.jsonl" "$TMP/c.jsonl" > "$TMP/c5.jsonl"
check "several inputs are one stream" cmp "$TMP/c4.jsonl" "$TMP/c5.jsonl"

# empty input
: > "$TMP/empty.jsonl"
expect_status "empty input" 0 "$SV" "$TMP/empty.jsonl"
if [ -s "$TMP/out" ]; then not_ok "empty input writes nothing" "$(head -c 200 "$TMP/out")"; else ok "empty input writes nothing"; fi
expect_stderr "empty input: the summary says 0 records" "0 records"

# unknown and absent datasets; --dataset
printf '{"id":"a","generation":"5","dataset":"trivia","ground_truth":"5"}\n{"id":"b","generation":"5"}\n' > "$TMP/u.jsonl"
expect_status "unknown dataset runs" 0 "$SV" "$TMP/u.jsonl"
check "unknown or absent dataset: reward and detail null" $PY -c "
import json, sys
rs = [json.loads(l) for l in open('$TMP/out')]
assert [r['verifiable_reward'] for r in rs] == [None, None] and [r['verifiable'] for r in rs] == [None, None], rs"
expect_stderr "they are counted as not verifiable" "2 not verifiable"
expect_status "--dataset gsm8k scores them all" 0 "$SV" --dataset gsm8k "$TMP/u.jsonl"
check "--dataset overrides the field" $PY -c "
import json
rs = [json.loads(l) for l in open('$TMP/out')]
assert rs[0]['verifiable_reward'] == 1 and rs[1]['verifiable_reward'] is None, rs
assert 'ground_truth' in rs[1]['verifiable']['error'], rs[1]"
expect_status "--dataset with an unknown name is a usage error" 2 "$SV" --dataset trivia "$TMP/u.jsonl"
expect_stderr "the usage error names the value" "trivia"
printf '{"id":"a","generation":"The answer is 5","dataset":"GSM8K","ground_truth":5}\n{"id":"b","generation":"5","dataset":"openai/gsm8k","ground_truth":"5"}\n' > "$TMP/case.jsonl"
expect_status "dataset names: any case, owner/name" 0 "$SV" "$TMP/case.jsonl"
check "GSM8K and openai/gsm8k are gsm8k; a number ground truth compares as str()" $PY -c "
import json
rs = [json.loads(l) for l in open('$TMP/out')]
assert [r['verifiable_reward'] for r in rs] == [1, 1], rs"

# missing fields: a null reward, a warning naming file, line and field
printf '%s\n' '{"id":"a","generation":"7","dataset":"gsm8k","ground_truth":"7"}' \
    '{"id":"b","generation":"7","dataset":"gsm8k"}' \
    '{"id":"c","generation":"x","dataset":"ifeval"}' \
    '{"id":"d","generation":"x","dataset":"ifeval","instruction_id_list":["length_constraints:number_words"],"kwargs":[{"relation":"at least"}]}' \
    '{"id":"e","generation":"x","dataset":"MATH","ground_truth":{"answer":1}}' \
    '{"id":"f","generation":"x","dataset":"ifeval","instruction_id_list":["no:such"],"kwargs":[{}]}' \
    '{"id":"g","generation":"x","dataset":"ifeval","instruction_id_list":["punctuation:no_comma"],"kwargs":{}}' \
    '{"id":"h","generation":"x","dataset":"MATH","ground_truth":null}' > "$TMP/missing.jsonl"
expect_status "missing fields are not fatal" 0 "$SV" "$TMP/missing.jsonl"
cp "$TMP/out" "$TMP/m.jsonl"
expect_stderr "missing ground_truth: file, line and field" "missing.jsonl:2: field \"ground_truth\" is missing; verifiable_reward is null"
expect_stderr "missing instruction_id_list is named" "missing.jsonl:3: field \"instruction_id_list\" is missing"
expect_stderr "a missing instruction argument is named with its instruction" "missing.jsonl:4: .*number_words.*kwargs.*\\[0\\].*\"num_words\" is missing"
expect_stderr "an odd ground_truth type is named" "missing.jsonl:5: field \"ground_truth\" must be a string or a number, not object"
expect_stderr "an unknown instruction is named" "missing.jsonl:6: .*unknown instruction \"no:such\""
expect_stderr "kwargs of the wrong shape is named" "missing.jsonl:7: field \"kwargs\" must be a list"
expect_stderr "a null ground_truth counts as missing" "missing.jsonl:8: field \"ground_truth\" is missing"
expect_stderr "the summary counts them" "8 records: 1 passed, 0 failed, 0 not verifiable, 7 with missing fields"
check "missing fields: reward null, detail with the error, output still valid" $PY "$V" verifiable "$TMP/m.jsonl"
check "missing fields: every record written, in order" $PY -c "
import json
rs = [json.loads(l) for l in open('$TMP/m.jsonl')]
assert [r['id'] for r in rs] == list('abcdefgh')
assert rs[0]['verifiable_reward'] == 1 and all(r['verifiable_reward'] is None for r in rs[1:])
assert all(r['verifiable']['passed'] is None and r['verifiable']['error'] for r in rs[1:])"
expect_status "-q: no warnings, no summary" 0 "$SV" -q "$TMP/missing.jsonl"
if [ -s "$TMP/err" ]; then not_ok "-q is quiet" "$(head -c 200 "$TMP/err")"; else ok "-q is quiet"; fi
expect_status "--max-warnings 2" 0 "$SV" --max-warnings 2 "$TMP/missing.jsonl"
check "--max-warnings shows 2 and counts the rest" sh -c "[ \$(grep -c 'verifiable_reward is null' '$TMP/err') = 2 ] && grep -q '5 more records' '$TMP/err'"
expect_status "--no-detail" 0 "$SV" --no-detail "$D/candidates.jsonl"
check "--no-detail writes verifiable_reward only" $PY -c "
import json
rs = [json.loads(l) for l in open('$TMP/out')]
assert all('verifiable' not in r and 'verifiable_reward' in r for r in rs)"

# record errors: exit 1 with file, line and field; records before kept
printf '%s\n' '{"id":"a","generation":"7","dataset":"gsm8k","ground_truth":"7"}' \
    '{"id":"b","dataset":"gsm8k","ground_truth":"7"}' \
    '{"id":"c","generation":"7","dataset":"gsm8k","ground_truth":"7"}' > "$TMP/bad.jsonl"
expect_status "a verifiable record without generation is an error" 1 "$SV" "$TMP/bad.jsonl"
expect_stderr "the error names file, line and field" "bad.jsonl:2: field \"generation\" is missing"
expect_stdout "records before the error are written" '"id":"a"'
expect_status "--skip-invalid goes on" 0 "$SV" --skip-invalid "$TMP/bad.jsonl"
expect_stderr "--skip-invalid warns and counts" "skipped 1 invalid record"
check "--skip-invalid keeps the others" $PY -c "
import json
assert [json.loads(l)['id'] for l in open('$TMP/out')] == ['a', 'c']"
printf '{"id":"a","generation":7,"dataset":"gsm8k","ground_truth":"7"}\n' > "$TMP/gen.jsonl"
expect_status "a generation that is not a string is an error" 1 "$SV" "$TMP/gen.jsonl"
expect_stderr "the type error names the field" "gen.jsonl:1: field \"generation\" must be a string, not integer"
printf '{"id":"a","generation":"7","dataset":42}\n' > "$TMP/ds.jsonl"
expect_status "a dataset that is not a string is an error" 1 "$SV" "$TMP/ds.jsonl"
expect_stderr "the dataset type error names the field" "ds.jsonl:1: field \"dataset\" must be a string"
printf '{"id":"a","generation":"7","dataset":"gsm8k","ground_truth":"7"}\n{"id":"b","generation":"7","dataset":"gsm8k","ground_truth":NaN}\n' > "$TMP/nan.jsonl"
expect_status "NaN (not JSON) is an error" 1 "$SV" "$TMP/nan.jsonl"
expect_stderr "the NaN error names the line" "nan.jsonl:2:"
expect_status "--skip-invalid skips the NaN line" 0 "$SV" --skip-invalid "$TMP/nan.jsonl"
check "the record before the NaN line is scored" $PY -c "
import json
rs = [json.loads(l) for l in open('$TMP/out')]
assert len(rs) == 1 and rs[0]['verifiable_reward'] == 1"
printf '{"id":"a","generation":"x","dataset":"ifeval","instruction_id_list":["punctuation:no_comma",7],"kwargs":[{},{}]}\n{"id":"b","generation":"x","dataset":"ifeval","instruction_id_list":["punctuation:no_comma"],"kwargs":["oops"]}\n{"id":"c","generation":"","dataset":"ifeval","instruction_id_list":["punctuation:no_comma"],"kwargs":[null]}\n' > "$TMP/odd.jsonl"
expect_status "odd types in instructions are not fatal" 0 "$SV" "$TMP/odd.jsonl"
expect_stderr "a non-string instruction id is named" "odd.jsonl:1: field \"instruction_id_list\"\\[1\\] must be a string, not integer"
expect_stderr "a non-object kwargs entry is named" "odd.jsonl:2: field \"kwargs\"\\[0\\] must be an object, not string"
check "an empty generation follows no instruction (strict mode); null kwargs entries are empty" $PY -c "
import json
rs = [json.loads(l) for l in open('$TMP/out')]
assert rs[2]['verifiable_reward'] == 0 and rs[2]['verifiable']['passed'] == [False], rs[2]"
expect_status "a missing input file is an error" 1 "$SV" "$TMP/nope.jsonl"
expect_stderr "the missing file is named" "nope.jsonl"

# the reference's own format: its func_name constraint in ground_truth
printf '%s\n' '{"prompt":"p","generation":"<think>Hmm</think>all lower","dataset":"ifeval","ground_truth":"{\"func_name\": \"validate_lowercase\", \"N\": null}","sampler_info":{"name":"t","config":[]},"incidence_vector":{"check_ifeval_or_math_or_gsm8k":true}}' \
    '{"prompt":"p","generation":"x","dataset":"ifeval","ground_truth":"{\"func_name\": \"no_such\"}"}' > "$TMP/ref.jsonl"
expect_status "reference records run" 0 "$SV" "$TMP/ref.jsonl"
check "reference constraint checked on the answer after </think>" $PY -c "
import json
rs = [json.loads(l) for l in open('$TMP/out')]
assert rs[0]['verifiable_reward'] == 1 and rs[0]['sampler_info'] == {'name': 't', 'config': []}
assert rs[1]['verifiable_reward'] is None"
expect_stderr "an unknown func_name is named" "ref.jsonl:2: field \"ground_truth\": unknown func_name \"no_such\""
