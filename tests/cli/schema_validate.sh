# schema_validate.sh — schemas whose keywords the grammar cannot express
# exactly (oneOf whose branches overlap, not, uniqueItems, if/then/else,
# fractional bounds, exponents of bounded numbers (1e-06), multipleOf with decimals, dependentRequired and
# dependentSchemas on large objects, enum of objects and arrays, anyOf inside
# allOf, contains, propertyNames, two patterns under allOf) compile from a
# relaxed schema with a final check of the finished value: constrain's
# verdict equals Python's jsonschema (draft 2020-12, formats checked) on
# every schema/text pair below, the texts included that only the final
# check refuses (two oneOf branches, a match of `not`, duplicate items);
# keywords foreign to the draft $schema names are ignored;
# texts drawn from these schemas end only on values that validate; a
# keyword the validator cannot judge is still refused, named.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
V="$ROOT/tests/data/vocab/ggml-vocab-llama-bpe.gguf"

$PY - "$TMP/in.jsonl" <<'PYEOF'
import json, sys
big = {k: {"type": "integer"} for k in "abcdefghi"}
cases = [
    ({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}, ["5", "-5", "2.5", "-2.5", "0", '"x"']),
    ({"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}]},
     ['{"a":1}', '{"b":1}', '{"a":1,"b":2}', "{}", '{"a":"s","b":2}']),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "not": {"required": ["a", "b"]}},
     ['{"a":"x"}', '{"a":"x","b":1}', '{"b":null}', "{}"]),
    ({"type": "string", "not": {"pattern": "^x"}}, ['"xy"', '"yx"', '""']),
    ({"type": "array", "items": {"type": "number"}, "uniqueItems": True},
     ["[1,2,1]", "[1,2,3]", "[]", "[1,1.0]", "[0.5,1.5]"]),
    ({"type": "array", "uniqueItems": True},
     ['[{"a":1},{"a":1}]', '[{"a":1},{"a":2}]', "[[1],[1]]", '[1,"1"]', "[null,false]"]),
    ({"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "x": {"type": "integer"}},
      "if": {"properties": {"kind": {"const": "a"}}, "required": ["kind"]}, "then": {"required": ["x"]},
      "else": {"properties": {"x": {"maximum": 0}}}},
     ['{"kind":"a"}', '{"kind":"a","x":5}', '{"kind":"b","x":5}', '{"kind":"b","x":-1}', '{"x":3}', "{}"]),
    ({"type": "number", "minimum": 0.5, "exclusiveMaximum": 2.5},
     ["0.4", "0.5", "1", "2.4999", "2.5", "3", "0", "1e-06", "5E-1", "24e-1", "25e-1", "0.1e1", "-1e0"]),
    ({"type": "object", "properties": {"p": {"type": "number", "minimum": 1, "maximum": 10}}},
     ['{"p":1e1}', '{"p":1.1e1}', '{"p":5e-1}', '{"p":10.0}', '{"p":-2E0}', '{"p":3}']),
    ({"type": "number", "exclusiveMinimum": -1.5, "maximum": 2.5}, ["-2", "-1.5", "-1.4", "2", "2.5", "2.6"]),
    ({"type": "number", "multipleOf": 0.25}, ["0.75", "1", "0.3", "2.5", "-0.5", "0.125"]),
    ({"type": "number", "multipleOf": 2.5}, ["7.5", "5", "6", "0", "-2.5"]),
    ({"type": "integer", "multipleOf": 3}, ["9", "10", "-3"]),
    ({"type": "object", "properties": big, "dependentRequired": {"a": ["b"]}},
     ['{"a":1}', '{"a":1,"b":2}', '{"c":1}']),
    ({"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}},
     ['{"a":1}', '{"a":1,"b":2}', '{"b":1}']),
    ({"enum": [{"a": 1, "b": 2}, [1, 2], "x"]},
     ['{"a":1,"b":2}', '{"b":2,"a":1}', '{"a":1}', "[1,2]", "[2,1]", '"x"', '"y"']),
    ({"anyOf": [{"type": "object"}, {"type": "null"}],
      "allOf": [{"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}]},
     ['{"a":1}', '{"b":1}', "{}", "null"]),
    ({"type": "array", "contains": {"type": "string"}, "minContains": 2, "maxContains": 3},
     ['["a"]', '["a","b"]', '[1,"a","b","c","d"]', "[]"]),
    ({"allOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]},
     ['"ab"', '"a"', '"b"', '"axb"']),
    ({"type": "object", "propertyNames": {"maxLength": 2}}, ['{"ab":1}', '{"abc":1}', "{}"]),
    ({"oneOf": [{"type": "string", "format": "date"}, {"type": "string", "maxLength": 10}]},
     ['"2024-02-29"', '"2023-02-29"', '"hello"', '"hello world!"']),
]
with open(sys.argv[1], "w") as f:
    for s, ts in cases:
        for t in ts:
            f.write(json.dumps({"json_schema": s, "text": t}) + "\n")
PYEOF
expect_status "constrain checks the texts" 0 "$BIN/constrain" -m "$V" "$TMP/in.jsonl"
cp "$TMP/out" "$TMP/verdicts.jsonl"
check "every schema compiles with a final check; valid exactly where Python's jsonschema says so" $PY - "$TMP/verdicts.jsonl" <<'PYEOF'
import json, sys
import jsonschema
fc = jsonschema.FormatChecker()
n = valid = only_final = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["compiled"] and r.get("final_check"), r
    ok = jsonschema.Draft202012Validator(r["json_schema"], format_checker=fc).is_valid(json.loads(r["text"]))
    assert r["valid"] == ok, (ok, r)
    n += 1; valid += ok; only_final += r["allowed"] and not ok
assert n == 105 and 40 < valid < 70 and only_final > 20, (n, valid, only_final)
PYEOF

# draws: the end only on a value that passes the final check
$PY "$ROOT/tests/lib/schema_check.py" unique "$TMP/in.jsonl" "$TMP/sample.jsonl"
expect_status "constrain draws texts from each schema" 0 "$BIN/constrain" -m "$V" --sample 12 --max-tokens 30 "$TMP/sample.jsonl"
check "every text drawn to its end validates under Python's jsonschema" $PY "$ROOT/tests/lib/schema_check.py" drawn "$TMP/out" 61

# exponents where the bounds only fix a sign: exact, no final check
printf '%s\n' '{"json_schema": {"type": "number", "minimum": 0}, "text": "1e-06"}' \
    '{"json_schema": {"type": "number", "minimum": 0}, "text": "-1e-06"}' \
    '{"json_schema": {"type": "number", "maximum": 0}, "text": "-2.5E+3"}' \
    '{"json_schema": {"type": "number", "maximum": 0}, "text": "0e7"}' \
    '{"json_schema": {"type": "number", "maximum": 0}, "text": "1e-9"}' > "$TMP/exp.jsonl"
expect_status "constrain checks exponents beside minimum 0 / maximum 0" 0 "$BIN/constrain" -m "$V" "$TMP/exp.jsonl"
check "1e-06 >= 0, -2.5E+3 and 0e7 <= 0 accepted, -1e-06 and 1e-9 refused, no final check" $PY - "$TMP/out" <<'PYEOF'
import json, sys
got = [(r["valid"], r["allowed"], "final_check" in r) for r in map(json.loads, open(sys.argv[1]))]
assert got == [(True, True, False), (False, False, False), (True, True, False), (True, True, False),
               (False, False, False)], got
PYEOF

# a keyword the draft $schema names does not have is ignored, in the grammar
# and in the final check (const and if under draft 4, dependencies under
# 2019-09), as Python's jsonschema does (validator_for: the $schema's draft)
$PY - "$TMP/drafts.jsonl" <<'PYEOF'
import json, sys
D4, D7 = "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-07/schema#"
D19 = "https://json-schema.org/draft/2019-09/schema"
cond = {"type": "object", "properties": {"t": {"type": "string"}, "x": {"type": "integer"}},
        "if": {"properties": {"t": {"const": "a"}}}, "then": {"required": ["x"]}}
cases = [
    (dict(cond, **{"$schema": D4}), ['{"t":"a"}', '{"t":"a","x":1}', '{"x":"s"}']),
    (dict(cond, **{"$schema": D7}), ['{"t":"a"}', '{"t":"a","x":1}', '{"t":"b"}']),
    ({"$schema": D4, "type": "integer", "const": 5}, ["5", "6"]),
    ({"$schema": D4, "type": "integer", "not": {"const": 3}}, ["3", "4"]),
    ({"$schema": D4, "type": "array", "items": {"type": "integer"}, "uniqueItems": True,
      "contains": {"const": 9}}, ["[1,2]", "[1,1]", "[9]"]),
    ({"$schema": D19, "type": "object", "dependencies": {"a": ["b"]}, "not": {"required": ["z"]}},
     ['{"a":1}', '{"z":1}']),
    ({"$schema": D7, "type": "object", "dependentRequired": {"a": ["b"]}}, ['{"a":1}']),
]
with open(sys.argv[1], "w") as f:
    for s, ts in cases:
        for t in ts:
            f.write(json.dumps({"json_schema": s, "text": t}) + "\n")
PYEOF
expect_status "constrain checks schemas of drafts 4, 7 and 2019-09" 0 "$BIN/constrain" -m "$V" "$TMP/drafts.jsonl"
check "valid exactly where Python's jsonschema, with the draft of \$schema, says so" $PY - "$TMP/out" <<'PYEOF'
import json, sys
import jsonschema
n = valid = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["compiled"], r
    s = r["json_schema"]
    ok = jsonschema.validators.validator_for(s)(s).is_valid(json.loads(r["text"]))
    assert r["valid"] == ok, (ok, r)
    n += 1; valid += ok
assert n == 16 and valid == 10, (n, valid)
PYEOF

# an ambiguous pattern (("\.?[a-z]+)*: a name of n letters splits 2^(n-1)
# ways) under an overlapping oneOf: its stacks stay few, checked in seconds
$PY - "$TMP/amb.jsonl" <<'PYEOF'
import json, sys
s = {"type": "object", "properties": {"n": {"type": "string", "pattern": "^[a-zA-Z_](\\.?[a-zA-Z0-9_]+)*$"}},
     "oneOf": [{"required": ["n"]}, {"required": ["t"]}]}
with open(sys.argv[1], "w") as f:
    for t in ['{"n":"MyVeryLongCustomTypeName.WithANamespaceOfItsOwn.AndOneMore"}', '{"n":"a..b"}',
              '{"n":"Abc","t":1}', '{"t":"MyVeryLongCustomTypeName"}']:
        f.write(json.dumps({"json_schema": s, "text": t}) + "\n")
PYEOF
expect_status "an ambiguous pattern is checked within 20 s" 0 timeout -s KILL 20 "$BIN/constrain" -m "$V" "$TMP/amb.jsonl"
check "the long name valid, a..b refused, both oneOf branches refused" $PY - "$TMP/out" <<'PYEOF'
import json, sys
got = [(r["valid"], r["allowed"]) for r in map(json.loads, open(sys.argv[1]))]
assert got == [(True, True), (False, False), (False, False), (True, True)], got
PYEOF

# still refused: what the validator cannot judge, named with its pointer
printf '%s\n' '{"json_schema": {"type": "object", "not": {"required": ["a"]}, "properties": {"b": {"unevaluatedProperties": false}}}, "text": "{}"}' \
    '{"json_schema": {"not": {"type": "string", "format": "ipv6"}}, "text": "1"}' > "$TMP/bad.jsonl"
expect_status "constrain reads schemas it refuses" 0 "$BIN/constrain" -m "$V" "$TMP/bad.jsonl"
expect_stdout "unevaluatedProperties refused with its pointer" '"compiled":false.*/properties/b/unevaluatedProperties: unsupported keyword \\"unevaluatedProperties\\"'
expect_stdout "a format no grammar knows, under a not, refused" '"compiled":false.*/not/format: unsupported format \\"ipv6\\"'
