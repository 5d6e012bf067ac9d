# schema_keywords.sh — the JSON Schema keywords normalized into the grammar
# (allOf merged or distributed over an anyOf, $ref beside keywords,
# keywords beside anyOf (ignored beside $ref before draft 2019-09), required properties not declared, oneOf whose
# branches cannot overlap, keywords of one type leaving the others free, draft 4's
# boolean exclusive bounds and item lists, formats, min/maxProperties,
# uniqueItems and multipleOf where they hold anyway, unknown keywords
# ignored): constrain's verdict on each text equals Python's jsonschema
# (with format checks; date-time and time by datetime.fromisoformat); the
# keywords still refused are named with their JSON pointer.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
V="$ROOT/tests/data/vocab/ggml-vocab-llama-bpe.gguf"

expect_status "constrain checks the texts" 0 "$BIN/constrain" -m "$V" "$DATA/constrain/keywords.jsonl"
check "every schema compiles; valid exactly where Python's jsonschema says so" $PY - "$TMP/out" <<'PYEOF'
import datetime, json, re, sys
import jsonschema
from jsonschema import validators
def iso(s, date):
    t = r"\d\d:\d\d:\d\d(\.\d+)?(Z|z|[+-]\d\d:\d\d)"
    if not re.fullmatch((r"\d{4}-\d\d-\d\d[Tt]" if date else "") + t, s):
        return False
    try:
        datetime.datetime.fromisoformat((s if date else "1970-01-01T" + s).replace("Z", "+00:00").replace("z", "+00:00"))
        return True
    except ValueError:
        return False
fc = jsonschema.FormatChecker()
fc.checks("date-time")(lambda s: not isinstance(s, str) or iso(s, True))
fc.checks("time")(lambda s: not isinstance(s, str) or iso(s, False))
n = valid = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    s = r["json_schema"]
    assert r["compiled"], r
    V = validators.validator_for(s, default=jsonschema.Draft202012Validator)
    ok = V(s, format_checker=fc).is_valid(json.loads(r["text"]))
    assert r["valid"] == ok, (ok, r)
    n += 1; valid += ok
assert n == 123 and 30 < valid < 70, (n, valid)
PYEOF

cat > "$TMP/bad.jsonl" <<'EOF'
{"json_schema": {"type": "object", "properties": {"a": {"not": {"minLength": 2}}}}, "text": "{}"}
{"json_schema": {"type": "string", "format": "ipv6"}, "text": "\"x\""}
{"json_schema": {"type": "array", "uniqueItems": true}, "text": "[]"}
{"json_schema": {"type": "object", "patternProperties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}}}, "text": "{}"}
{"json_schema": {"allOf": [{"type": "string"}, {"type": "integer"}]}, "text": "1"}
{"json_schema": {"allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}]}, "text": "{}"}
{"json_schema": {"type": "object", "dependencies": {"a": {"required": ["b"]}}}, "text": "{}"}
{"json_schema": {"type": "integer", "multipleOf": 3}, "text": "3"}
{"json_schema": {"type": "string", "pattern": "^a.*b$", "maxLength": 100000}, "text": "\"x\""}
{"json_schema": {"if": {"type": "string"}, "then": {"minLength": 1}}, "text": "1"}
{"json_schema": {"properties": {"c": {}, "d": {}, "e": {}, "f": {}, "g": {}, "h": {}, "i": {}, "j": {}}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, "text": "{}"}
{"json_schema": {"oneOf": [{"properties": {"k": {"const": 1}}, "required": ["k"]}, {"properties": {"k": {"const": 2}}, "required": ["k"]}]}, "text": "\"s\""}
EOF
expect_status "constrain reports the keywords still refused" 0 "$BIN/constrain" -m "$V" "$TMP/bad.jsonl"
check "each error names the keyword and its JSON pointer; the rest compile with a final check" $PY - "$TMP/out" <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
errs = [r["error"].split(": ", 2)[2] if not r["compiled"] else ("final check" if r.get("final_check") else None) for r in recs]
assert errs == [
    "final check",
    '/format: unsupported format "ipv6"',
    "final check",
    '/patternProperties: more than 4 patterns in patternProperties beside other names is not supported',
    "/allOf: the subschemas' types do not intersect",
    "/allOf: subschemas with additionalProperties and different properties cannot be merged",
    "final check",
    "final check",
    "/maxLength: pattern with a length bound needs more than 20000 rules",
    "final check",
    "final check",
    "final check",
], errs
PYEOF
