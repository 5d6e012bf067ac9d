# schema_automata.sh — what the automata of patterns (lib/grammar/dfa.c)
# let the grammar say: strings under several of pattern, format, minLength
# and maxLength at once (one automaton: the pattern's, times a counter of
# code points): for every schema below and every text of a list (none
# ending in a newline: Python's $ matches before one, ECMAScript's not),
# constrain's verdict equals Python's jsonschema (draft 2020-12, formats
# checked), patterns with anchors inside (^a|b$), and oneOf of strings
# whose patterns no string matches both;
# the same for patternProperties whose patterns overlap the
# declared names, each other or additionalProperties; every text that
# constrain draws from such a schema validates.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
V="$ROOT/tests/data/vocab/ggml-vocab-llama-bpe.gguf"

$PY - "$TMP/in.jsonl" <<'PYEOF'
import json, sys
schemas = [
    {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3},
    {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4},
    {"type": "string", "pattern": "b", "minLength": 2, "maxLength": 4},
    {"type": "string", "pattern": "^[A-Z][a-z0-9_-]*", "minLength": 3},
    {"type": "string", "pattern": "x$", "maxLength": 2},
    {"type": "string", "pattern": "^\\d{5}(-\\d{4})?$", "maxLength": 5},
    {"type": "string", "pattern": "^(ab|a)*$", "minLength": 3, "maxLength": 3},
    {"type": "string", "pattern": "^.+@.+$", "maxLength": 6},
    {"type": "string", "pattern": "[é\"\\\\\\n]", "maxLength": 2},
    {"type": "string", "format": "date", "maxLength": 10},
    {"type": "string", "format": "ipv4", "minLength": 9, "maxLength": 11},
    {"type": "string", "format": "date", "pattern": "-0[1-6]-"},
    {"type": "string", "pattern": "^a", "minLength": 5, "maxLength": 2},
    {"oneOf": [{"type": "string", "pattern": "^[^:]+$"}, {"type": "string", "pattern": "^[^:]+:[^:]+:[0-9]+$"}]},
    {"type": "string", "pattern": "^$|^[a-z][a-z0-9A-Z]*$", "minLength": 1},
    {"type": "string", "pattern": "a$|^b"},
]
texts = ["", "a", "ab", "abc", "abcd", "abcde", "b", "bb", "Ab", "Abc", "Ab_9z", "abC", "x", "ax", "axx", "12345",
         "1234", "12345-6789", "aab", "aba", "abab", "aaa", "a@b", "a@b.cd", "a@bcdef", "é", "aé", "\"", "\\", "\t",
         "\na", "\"\"\"", "2024-02-29", "2023-02-29", "2024-07-01", "2024-05-10", "2024-12-31x", "10.0.0.1",
         "192.168.1.1", "1.2.3.4", "256.1.1.1", "10.0.0.01", "aaaaa", "a:b:1", "a:b"]
# counts past GBNF's repetition limit: a pattern ending in a loop on one
# class is counted by repetition (in blocks of 1000)
data = "^data:image/(jpg|jpeg|png|svg\\+xml);base64,[0-9a-zA-Z+/=]*$"
more = [({"type": "string", "pattern": "^x[a-z]*$", "minLength": 2500, "maxLength": 4100},
         ["x" + "a" * k for k in (0, 2498, 2499, 3000, 4099, 4100)] + ["xA" + "a" * 3000]),
        ({"type": "string", "pattern": data, "maxLength": 26},
         ["data:image/png;base64,AAAA", "data:image/png;base64,AAAAA", "data:image/gif;base64,AAAA"]),
        ({"type": "string", "pattern": data, "minLength": 2025, "maxLength": 4000},
         ["data:image/svg+xml;base64," + "A" * k for k in (1998, 1999, 3974, 3975)])]
with open(sys.argv[1], "w") as f:
    for s in schemas:
        for t in texts:
            f.write(json.dumps({"json_schema": s, "text": json.dumps(t, ensure_ascii=False)}, ensure_ascii=False) + "\n")
        f.write(json.dumps({"json_schema": s, "text": ""}) + "\n")
    for s, ts in more:
        for t in ts:
            f.write(json.dumps({"json_schema": s, "text": json.dumps(t)}) + "\n")
        f.write(json.dumps({"json_schema": s, "text": ""}) + "\n")
PYEOF
# patternProperties beside additionalProperties, declared names or each
# other: names shared out by automata (a name takes the schemas of every
# pattern it matches, and of properties when declared)
$PY - "$TMP/in.jsonl" <<'PYEOF'
import json, sys
schemas = [
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}, "a$": {"type": "number", "minimum": 5}},
     "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"xa": {"type": "integer", "maximum": 3}},
     "patternProperties": {"^x": {"type": "integer", "minimum": 1}}, "additionalProperties": False},
    {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"],
     "patternProperties": {"^[0-9]+$": {"type": "null"}, "é": False}},
    {"type": "object", "patternProperties": {"^x|a$": {"type": "integer"}}, "additionalProperties": False},
]
texts = ['{}', '{"xa":1}', '{"xa":"s"}', '{"xa":7}', '{"xa":0}', '{"xb":9}', '{"xa":2,"xb":9}', '{"ya":5.5}',
         '{"ya":4}', '{"q":"s"}', '{"q":1}', '{"xa":7,"ya":5.5,"q":"s"}', '{"b":true}', '{"b":1}',
         '{"b":false,"12":null}', '{"b":false,"12":1}', '{"b":true,"é":1}', '{"b":true,"aé":null}', '{"x":null}',
         '{"\\n":"s"}', '{"b":true,"x1":2}']
with open(sys.argv[1], "a") as f:
    for s in schemas:
        for t in texts:
            f.write(json.dumps({"json_schema": s, "text": t}, ensure_ascii=False) + "\n")
        f.write(json.dumps({"json_schema": s, "text": ""}) + "\n")
PYEOF
expect_status "constrain checks the texts" 0 "$BIN/constrain" -m "$V" "$TMP/in.jsonl"
cp "$TMP/out" "$TMP/verdicts.jsonl"
check "every schema compiles; valid exactly where Python's jsonschema says so" $PY - "$TMP/verdicts.jsonl" <<'PYEOF'
import json, sys
import jsonschema
fc = jsonschema.FormatChecker()
n = valid = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["compiled"], r
    if not r["text"]:
        continue
    ok = jsonschema.Draft202012Validator(r["json_schema"], format_checker=fc).is_valid(json.loads(r["text"]))
    assert r["valid"] == ok, (ok, r)
    n += 1; valid += ok
assert n == 16 * 45 + 14 + 5 * 21 and 60 < valid < 200, (n, valid)
PYEOF

$PY "$ROOT/tests/lib/schema_check.py" unique "$TMP/in.jsonl" "$TMP/sample.jsonl"
expect_status "constrain draws texts from each schema" 0 "$BIN/constrain" -m "$V" --sample 25 --max-tokens 40 "$TMP/sample.jsonl"
check "every text drawn to its end validates under Python's jsonschema" $PY "$ROOT/tests/lib/schema_check.py" drawn "$TMP/out" 201
