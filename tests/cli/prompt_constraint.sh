# prompt_constraint.sh — a prompt's own constraint ("json_schema",
# OpenAI's "response_format", llama.cpp's "grammar") on top of every
# heuristic: completed candidates validate with Python's jsonschema /
# re.fullmatch, cut ones say finish length and valid false; the record
# carries the constraint; verify checks it again (and replays it); bad
# constraints are one-line errors before any generation.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"

cat > "$TMP/h.yaml" <<'EOF'
sampling_pipelines:
  - name: warm
    processors:
      - name: temperature
        params: {temperature: 1.3}
  - name: narrow
    processors:
      - name: top_k
        params: {top_k: 5}
  - name: own-regex
    processors:
      - name: regex
        params: {pattern: "[\\[\\]{}\":a-z0-9,]*"}
EOF
cat > "$TMP/p.jsonl" <<'EOF'
{"id": "person", "prompt": "A person as JSON:", "json_schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "age": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["name", "age"], "additionalProperties": false}}
{"id": "three", "prompt": "Three numbers:", "response_format": {"type": "json_schema", "json_schema": {"name": "three", "strict": true, "schema": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "minItems": 3, "maxItems": 3}}}}
{"id": "flag", "prompt": "Yes or no?", "json_schema": {"enum": ["yes", "no", true]}}
{"id": "free", "prompt": "Anything:"}
{"id": "gbnf", "prompt": "A move:", "grammar": "root ::= [a-h] [1-8] (\"x\" [a-h] [1-8])?\n"}
{"id": "long", "prompt": "A long word:", "json_schema": {"type": "string", "minLength": 400}}
EOF
GC() { "$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" -n 24 "$@" "$TMP/p.jsonl"; }
expect_status "gen-candidates with prompts' own constraints" 0 GC --seeds 0-3
cp "$TMP/out" "$TMP/gen"
check "completed candidates validate (jsonschema, re.fullmatch); cut ones are length and not valid" $PY - "$TMP/gen" "$TMP/p.jsonl" <<'PYEOF'
import json, re, sys
import jsonschema
prompts = {p["id"]: p for p in map(json.loads, open(sys.argv[2]))}
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 6 * 3 * 4, len(recs)
done = cut = 0
for r in recs:
    p = prompts[r["prompt_id"]]
    t = r["generation"]
    if r["prompt_id"] == "free":
        assert "constraint" not in r, r
        continue
    c = r["constraint"]
    if "response_format" in p:
        schema = p["response_format"]["json_schema"]["schema"]
        assert c == {"name": "json_schema", "params": {"schema": schema}, "valid": c["valid"]}, c
    elif "json_schema" in p:
        schema = p["json_schema"]
        assert c == {"name": "json_schema", "params": {"schema": schema}, "valid": c["valid"]}, c
    else:
        schema = None
        assert c["name"] == "grammar" and c["params"]["gbnf"] == p["grammar"], c
    if r["finish"] == "length":
        cut += 1
        assert c["valid"] is False and r["n_tokens"] == 24, r
        continue
    assert r["finish"] == "eos", r
    assert c["valid"] is True, r
    done += 1
    if schema is not None:
        jsonschema.validate(json.loads(t), schema)
    else:
        assert re.fullmatch(r"[a-h][1-8](x[a-h][1-8])?", t), t
    if r["heuristic"]["name"] == "own-regex":   # both constraints hold
        assert re.fullmatch(r'[\[\]{}":a-z0-9,]*', t), t
assert done >= 36 and cut >= 12, (done, cut)
PYEOF
check "records validate against schemas/candidate.schema.json" $PY "$ROOT/tests/scripts/validate_schema.py" -q --format jsonl "$ROOT/schemas/candidate.schema.json" "$TMP/gen"
check "the heuristics keep their ids (the prompt's constraint is not part of them)" $PY - "$TMP/gen" <<'PYEOF'
import json, sys
ids = {}
for r in map(json.loads, open(sys.argv[1])):
    ids.setdefault(r["heuristic"]["name"], set()).add(r["heuristic"]["id"])
assert all(len(v) == 1 for v in ids.values()), ids
PYEOF
GC --seeds 0-3 -b 3 -t 2 > "$TMP/b3" 2>/dev/null
check "same candidates with --batch 3 --threads 2" cmp "$TMP/gen" "$TMP/b3"

expect_status "verify passes them, replaying 6 with their constraints" 0 "$BIN/verify" -m "$M" --replay 6 "$TMP/gen"
check "verify keeps every record" sh -c "[ \$(wc -l < '$TMP/out') -eq 72 ]"
expect_stderr "verify: nothing discarded, replays identical" "6 prompts read, 0 discarded, 6 written .*replayed 6, 0 differ"

# tampered records: a completed text that does not validate, a cut one called valid
$PY - "$TMP/gen" "$TMP/bad.jsonl" <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
out = []
for r in recs:
    if r["prompt_id"] == "person" and r["finish"] == "eos" and not any(o["prompt_id"] == "person" for o in out):
        r["generation"] = r["generation"][:-1]
    if r["prompt_id"] == "long" and r["finish"] == "length":
        r["constraint"]["valid"] = True
    out.append(r)
assert any(r["prompt_id"] == "long" and r["finish"] == "length" for r in recs)
open(sys.argv[2], "w").writelines(json.dumps(r) + "\n" for r in out)
PYEOF
expect_status "verify discards the tampered prompts" 0 "$BIN/verify" "$TMP/bad.jsonl"
expect_stderr "a text that does not validate is named" "discarded prompt person: .*does not satisfy its constraint \(finish eos\)"
expect_stderr "a cut text called valid is named" "discarded prompt long: .*\"valid\" is true, the generation was cut \(finish length\)"
check "the other four prompts are kept" sh -c "[ \$(wc -l < '$TMP/out') -eq 48 ]"

# bad constraints: one line naming the file, line and field; exit 1, nothing generated
bad() {
    printf '%s\n' '{"prompt": "ok"}' "$1" > "$TMP/badp.jsonl"
    expect_status "$2: exit 1" 1 "$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" -n 4 "$TMP/badp.jsonl"
    expect_stderr "$2: one line" "^gen-candidates: .*badp.jsonl:2: $3"
    check "$2: nothing written, one line" sh -c "[ ! -s '$TMP/out' ] && [ \$(wc -l < '$TMP/err') -eq 1 ]"
}
bad '{"prompt": "x", "json_schema": {"type": "strin"}}' "unknown type" 'field "json_schema": parameter "schema": /type: type must be one of'
bad '{"prompt": "x", "json_schema": {"type": "object", "patternProperties": {"^a": {}, "^b": {}, "^c": {}, "^d": {}, "^e": {}}}}' "a keyword not supported in this form" \
    'field "json_schema": parameter "schema": /patternProperties: more than 4 patterns in patternProperties beside other names'
bad '{"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "n"}}}' "response_format without a schema" \
    'field "response_format.json_schema.schema" must be a JSON Schema'
bad '{"prompt": "x", "grammar": "root ::= [a-"}' "GBNF syntax error" 'field "grammar": parameter "gbnf": 1:10: '
bad '{"prompt": "x", "json_schema": {}, "grammar": "root ::= \"a\""}' "two constraints" 'give one of "response_format", "json_schema" and "grammar"'
