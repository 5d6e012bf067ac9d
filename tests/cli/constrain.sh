# constrain.sh — structured output: texts drawn under JSON Schema and regex
# constraints validate with Python's jsonschema and re.fullmatch; constrain
# checks texts token by token; the json_schema, grammar, regex and choice
# processors in gen-candidates (every finished candidate valid, byte-identical
# whatever --batch/--threads); bad constraints refused before generation.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
V="$ROOT/tests/data/vocab/ggml-vocab-llama-bpe.gguf"
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"

cat > "$TMP/c.jsonl" <<'EOF'
{"json_schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}, "age": {"type": "integer", "minimum": 0, "maximum": 150}, "city": {"type": "string", "minLength": 1, "maxLength": 8}}, "required": ["name", "age", "city"], "additionalProperties": false}}
{"json_schema": {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}}
{"json_schema": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer", "minimum": -5, "maximum": 5}, "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 2}}, "required": ["id"]}, "maxItems": 3}, "whitespace": "any"}
{"json_schema": {"anyOf": [{"type": "string", "pattern": "^[a-z]{2,5}-[0-9]+$"}, {"type": "number", "minimum": -2, "maximum": 7}, {"type": "null"}]}}
{"json_schema": {"$defs": {"t": {"type": "object", "properties": {"v": {"type": "boolean"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}, "maxItems": 2}}, "required": ["v"], "additionalProperties": false}}, "$ref": "#/$defs/t"}}
{"regex": "[a-z]+@[a-z]+\\.(com|org)"}
{"regex": "(\\d{1,3}\\.){3}\\d{1,3}"}
{"regex": "[A-Z][a-z]*( [a-z]+){0,3}[.!?]"}
EOF
expect_status "constrain --sample runs" 0 "$BIN/constrain" -m "$V" --sample 12 --seed 3 "$TMP/c.jsonl"
cp "$TMP/out" "$TMP/samples"
check "every finished sample validates (jsonschema, re.fullmatch), most samples finish" $PY - "$TMP/samples" <<'PYEOF'
import json, re, sys
import jsonschema
done = total = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["compiled"], r
    for s in r["samples"]:
        total += 1
        if s["finish"] != "eos":
            continue
        done += 1
        if "json_schema" in r:
            jsonschema.validate(json.loads(s["text"]), r["json_schema"])
        else:
            assert re.fullmatch(r["regex"], s["text"], re.ASCII), (r["regex"], s["text"])
assert done >= total * 0.6, (done, total)
PYEOF
"$BIN/constrain" -m "$V" --sample 12 --seed 3 "$TMP/c.jsonl" > "$TMP/again" 2>/dev/null
check "samples are deterministic" cmp "$TMP/samples" "$TMP/again"

# texts checked token by token, against Python's verdicts
cat > "$TMP/t.jsonl" <<'EOF'
{"json_schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}, "required": ["name", "age"], "additionalProperties": false}, "text": "{\"age\":31,\"name\":\"Ann\"}"}
{"json_schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}, "required": ["name", "age"], "additionalProperties": false}, "text": "{\"age\":-1,\"name\":\"Ann\"}"}
{"json_schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}, "required": ["name", "age"], "additionalProperties": false}, "text": "{\"name\":\"Ann\"}"}
{"json_schema": {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}, "text": "[1,2.5,-3e4]"}
{"json_schema": {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}, "text": "[1,2.5,-3e4,4]"}
{"regex": "[a-z]+@[a-z]+\\.(com|org)", "text": "bob@mail.org"}
{"regex": "[a-z]+@[a-z]+\\.(com|org)", "text": "bob@mail.net"}
{"choice": ["yes", "no"], "text": "no"}
{"choice": ["yes", "no"], "text": "nope"}
{"grammar": "root ::= \"1. \" [a-h] [1-8]\n", "text": "1. e4"}
EOF
expect_status "constrain checks texts" 0 "$BIN/constrain" -m "$V" "$TMP/t.jsonl"
check "valid exactly where Python says so; refused_at points into the text" $PY - "$TMP/out" <<'PYEOF'
import json, re, sys
import jsonschema
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "json_schema" in r:
        try:
            jsonschema.validate(json.loads(r["text"]), r["json_schema"]); ok = True
        except (jsonschema.ValidationError, ValueError):
            ok = False
    elif "regex" in r:
        ok = re.fullmatch(r["regex"], r["text"]) is not None
    elif "choice" in r:
        ok = r["text"] in r["choice"]
    else:
        ok = True
    assert r["valid"] == ok, r
    assert r["valid"] == (r["allowed"] and r["complete"]), r
    assert (r["refused_at"] is None) == r["allowed"], r
    if r["refused_at"] is not None:
        assert 0 <= r["refused_at"] < r["tokens"], r
PYEOF
expect_stderr "summary gives the shares and mask times" "10 records: 10 compiled, 5 valid .* mask per token .* us mean"

cat > "$TMP/bad.jsonl" <<'EOF'
{"json_schema": {"type": "string", "format": "ipv6"}, "text": "\"a\""}
{"grammar": "root ::= \"a\"\nx ::= (\"b\"\n", "text": "a"}
{"regex": "a(b", "text": "a"}
{"choice": [], "text": "a"}
{"json_schema": {"type": "integer", "maximum": 18446744073709551615, "description": "up to 99999999999999999999"}, "text": "1"}
{"json_schema": {"enum": [1, -9223372036854775809e0, "-9223372036854775809", [-9223372036854775809]]}, "text": "1"}
{"json_schema": {"enum": [-9223372036854775808, 9223372036854775807, 1.5]}, "text": "9223372036854775807"}
EOF
expect_status "constrain reports constraints that do not compile" 0 "$BIN/constrain" -m "$V" "$TMP/bad.jsonl"
check "errors name the field and the position" $PY - "$TMP/out" <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
errs = [r.get("error") for r in recs]
assert recs[-1]["valid"], recs[-1]
assert errs == [
    'field "json_schema": parameter "schema": /format: unsupported format "ipv6"',
    "field \"grammar\": parameter \"gbnf\": 3:1: expecting ')'",
    'field "regex": parameter "pattern": offset 3: missing closing parenthesis',
    'field "choice": parameter "options": the list of options is empty',
    'field "json_schema": parameter "schema": /maximum: integer 18446744073709551615 does not fit in 64 bits (not supported)',
    'field "json_schema": parameter "schema": /enum/3/0: integer -9223372036854775809 does not fit in 64 bits (not supported)',
    None,
], errs
PYEOF

# the processors in a heuristic, on the tiny model
cat > "$TMP/h.yaml" <<'EOF'
sampling_pipelines:
  - name: person
    processors:
      - name: temperature
        params: {temperature: 1.5}
      - name: json_schema
        params:
          schema:
            type: object
            properties:
              name: {type: string, maxLength: 6}
              age: {type: integer, minimum: 0, maximum: 99}
              city: {type: string, maxLength: 6}
            required: [name, age, city]
            additionalProperties: false
  - name: numbers
    processors:
      - name: json_schema
        params: {schema: {type: array, items: {type: number}, minItems: 3, maxItems: 3}}
      - name: top_k
        params: {top_k: 20}
  - name: answer
    processors:
      - name: choice
        params: {options: ["yes", "no", "maybe"]}
  - name: code
    processors:
      - name: regex
        params: {pattern: "[A-Z]{2}-[0-9]{2,4}"}
  - name: move
    processors:
      - name: grammar
        params: {gbnf: "root ::= [a-h] [1-8] (\"x\" [a-h] [1-8])?\n"}
EOF
printf '%s\n' '{"prompt": "Give a person as JSON."}' '{"prompt": "Three numbers:"}' > "$TMP/p.jsonl"
GC() { "$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" -n 48 "$@" "$TMP/p.jsonl"; }
expect_status "gen-candidates with constraint processors" 0 GC --seeds 0-3
cp "$TMP/out" "$TMP/gen"
check "finished candidates satisfy their constraint; cut ones say finish length" $PY - "$TMP/gen" <<'PYEOF'
import json, re, sys
import jsonschema
person = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
          "age": {"type": "integer", "minimum": 0, "maximum": 99}, "city": {"type": "string", "maxLength": 6}},
          "required": ["name", "age", "city"], "additionalProperties": False}
nums = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}
finished = 0
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 2 * 5 * 4, len(recs)
for r in recs:
    t, h = r["generation"], r["heuristic"]["name"]
    assert r["finish"] in ("eos", "length"), r["finish"]
    if r["finish"] != "eos":
        assert r["n_tokens"] == 48, r
        continue
    finished += 1
    if h == "person":
        jsonschema.validate(json.loads(t), person)
    elif h == "numbers":
        jsonschema.validate(json.loads(t), nums)
    elif h == "answer":
        assert t in ("yes", "no", "maybe"), t
    elif h == "code":
        assert re.fullmatch(r"[A-Z]{2}-[0-9]{2,4}", t), t
    else:
        assert re.fullmatch(r"[a-h][1-8](x[a-h][1-8])?", t), t
assert finished >= 20, finished
PYEOF
GC --seeds 0-3 -b 1 -t 1 > "$TMP/b1" 2>/dev/null
check "same candidates with --batch 1 --threads 1" cmp "$TMP/gen" "$TMP/b1"
GC --seeds 0-3 -b 5 -t 2 > "$TMP/b5" 2>/dev/null
check "same candidates with --batch 5 --threads 2" cmp "$TMP/gen" "$TMP/b5"

# bad constraints: one line naming file, line, heuristic, processor and field; exit 1, nothing generated
bad() {
    printf 'sampling_pipelines:\n  - name: h1\n    processors:\n      - name: %s\n        params: %s\n' "$1" "$2" > "$TMP/bad.yaml"
    expect_status "$3: exit 1" 1 "$BIN/gen-candidates" -m "$M" -H "$TMP/bad.yaml" -n 4 "$TMP/p.jsonl"
    expect_stderr "$3: one line" "^gen-candidates: .*bad.yaml:4:9: pipeline \"h1\": processor 1 \($1\): $4"
    check "$3: nothing written, one line" sh -c "[ ! -s '$TMP/out' ] && [ \$(wc -l < '$TMP/err') -eq 1 ]"
}
bad json_schema '{schema: {type: object, properties: {d: {type: string}}, unevaluatedProperties: false}}' "unsupported schema keyword" \
    'parameter "schema": /unevaluatedProperties: unsupported keyword "unevaluatedProperties"'
bad grammar '{gbnf: "root ::= \"a\" [b-"}' "GBNF syntax error" 'parameter "gbnf": 1:14: unterminated character class'
bad regex '{pattern: "[a-z"}' "regex that does not compile" 'parameter "pattern": offset 4: missing terminating \] for character class'
bad choice '{options: []}' "empty choice list" 'parameter "options": the list of options is empty'
bad json_schema '{}' "no schema" 'parameter "schema" \(a JSON Schema\) or "path" \(a file holding it\) is required'
