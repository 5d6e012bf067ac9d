# structured_server.sh — structured output through servers: serve takes
# OpenAI's response_format and llama.cpp's json_schema and grammar fields
# (outputs validated by Python's jsonschema, and a schema request gives
# gen-candidates' tokens for the heuristic with the same constraint); the
# client maps a heuristic's json_schema, grammar, regex and choice onto
# vLLM's, SGLang's and llama-server's request fields (the bodies a stub
# records, checked in Python), and refuses what a kind cannot express.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/examples/models/demo-base.gguf"
PY=/usr/bin/python3
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
wait_port() { for i in $(seq 200); do [ -s "$1" ] && break; sleep 0.05; done; }

# ---------------------------------------------------------------- serve
timeout 120 "$BIN/serve" -m "$M" --port 0 --port-file "$TMP/s.port" -t 1 > /dev/null 2> "$TMP/s.log" &
PIDS="$PIDS $!"
wait_port "$TMP/s.port"
export URL="http://127.0.0.1:$(cat "$TMP/s.port")"

cat > "$TMP/schema.json" <<'EOF'
{"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "age": {"type": "integer", "minimum": 0, "maximum": 99}},
 "required": ["name", "age"], "additionalProperties": false}
EOF
$PY - "$TMP/schema.json" > "$TMP/h.yaml" <<'PYEOF'
import json, sys, yaml
s = json.load(open(sys.argv[1]))
print(yaml.safe_dump({"sampling_pipelines": [{"name": "schema", "processors": [
    {"name": "temperature", "params": {"temperature": 0.9}}, {"name": "json_schema", "params": {"schema": s}}]}]}))
PYEOF
printf '%s\n' '{"prompt": "The record of the king:"}' > "$TMP/p.jsonl"
"$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" -n 40 --min-new-tokens 0 --seeds 0-2 --no-system -t 1 "$TMP/p.jsonl" > "$TMP/ref.jsonl" 2>/dev/null

check "serve: response_format json_schema gives gen-candidates' tokens for the same constraint; jsonschema validates" $PY - "$TMP/ref.jsonl" "$TMP/schema.json" <<'PYEOF'
import json, os, sys, urllib.request, jsonschema
schema = json.load(open(sys.argv[2]))
def call(body):
    req = urllib.request.Request(os.environ["URL"] + "/v1/completions", json.dumps(body).encode())
    return json.load(urllib.request.urlopen(req, timeout=60))["choices"][0]
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    # the heuristic's other processors by definition (its name keys the draws), the constraint as a server takes it
    base = {"prompt": r["prompt"], "max_tokens": 40, "seed": r["seed"], "return_token_ids": True,
            "asn_heuristic": {"name": "schema", "processors": [{"name": "temperature", "params": {"temperature": 0.9}}]}}
    c = call(dict(base, response_format={"type": "json_schema", "json_schema": {"name": "rec", "schema": schema, "strict": True}}))
    assert c["token_ids"] == r["tokens"] and c["text"] == r["generation"], (c, r["generation"])
    if c["asn_finish"] == "eos":
        jsonschema.validate(json.loads(c["text"]), schema)
        n += 1
    c2 = call(dict(base, json_schema=schema))   # llama.cpp's field: the same
    assert c2["token_ids"] == r["tokens"]
assert n >= 1, n
PYEOF

check "serve: json_object gives a JSON object; a GBNF grammar gives one of its sentences" $PY - <<'PYEOF'
import json, os, urllib.request
def call(body):
    req = urllib.request.Request(os.environ["URL"] + "/v1/completions", json.dumps(body).encode())
    return json.load(urllib.request.urlopen(req, timeout=60))["choices"][0]
seen = set()
for seed in range(6):
    c = call({"prompt": "Answer:", "max_tokens": 8, "seed": seed, "temperature": 5, "grammar": 'root ::= "yes" | "no" | "maybe so"'})
    assert c["text"] in ("yes", "no", "maybe so") and c["asn_finish"] == "eos", c
    seen.add(c["text"])
    c = call({"prompt": "Data:", "max_tokens": 48, "seed": seed, "temperature": 0.7, "response_format": {"type": "json_object"}})
    if c["asn_finish"] == "eos":
        assert isinstance(json.loads(c["text"]), dict), c["text"]
    else:
        assert c["finish_reason"] == "length", c
assert len(seen) >= 2, seen
PYEOF

check "serve: bad structured-output fields are 400s naming the field" $PY - <<'PYEOF'
import json, os, urllib.request, urllib.error
for body, word in (({"response_format": {"type": "xml"}}, "response_format.type"),
                   ({"response_format": {"type": "json_schema", "json_schema": {}}}, "response_format.json_schema.schema"),
                   ({"grammar": 'root ::= "a'}, "structured output"),
                   ({"grammar": "root ::= \"a\"", "json_schema": {}}, "one of"),
                   ({"json_schema": {"type": "object", "patternProperties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}}}},
                    "patternProperties")):
    body.update(prompt="x", max_tokens=4)
    try:
        urllib.request.urlopen(urllib.request.Request(os.environ["URL"] + "/v1/completions", json.dumps(body).encode()), timeout=30)
        raise SystemExit("accepted %r" % body)
    except urllib.error.HTTPError as e:
        msg = json.load(e)["error"]["message"]
        assert e.code == 400 and word in msg, (body, msg)
PYEOF

# ------------------------------------------------- the client's mapping
cat > "$TMP/c.yaml" <<'EOF'
sampling_pipelines:
  - name: schema compact
    processors:
      - {name: temperature, params: {temperature: 0.8}}
      - {name: json_schema, params: {schema: {type: object, properties: {a: {type: integer}}, required: [a]}}}
  - name: schema any
    processors:
      - {name: json_schema, params: {schema: {type: array, items: {type: number}, minItems: 3, maxItems: 3}, whitespace: any}}
  - name: regex
    processors:
      - {name: regex, params: {pattern: "[0-9]{3}-[a-z]+"}}
  - name: choice
    processors:
      - {name: choice, params: {options: ["yes", "no", "a.b (c)", "say \"hi\""]}}
  - name: grammar
    processors:
      - {name: top_p, params: {top_p: 0.9}}
      - {name: grammar, params: {gbnf: "root ::= \"x\" [0-9]+"}}
  - name: two
    processors:
      - {name: regex, params: {pattern: "a+"}}
      - {name: choice, params: {options: ["a"]}}
EOF
# any records will do: the stub answers every request with the first one
"$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" -n 8 --min-new-tokens 0 --seeds 0 --no-system -t 1 "$TMP/p.jsonl" > "$TMP/any.jsonl" 2>/dev/null
stub() { # stub KIND: records bodies in $TMP/KIND.bodies; URL in $S
    rm -f "$TMP/$1.port" "$TMP/$1.bodies"
    timeout 120 $PY "$ROOT/tests/scripts/stub_server.py" "$TMP/any.jsonl" "$TMP/$1.port" --kind "$1" --fixed \
        --record "$TMP/$1.bodies" > /dev/null 2> "$TMP/$1.log" &
    PIDS="$PIDS $!"
    wait_port "$TMP/$1.port"
    S="http://127.0.0.1:$(cat "$TMP/$1.port")"
}
GEN="-H $TMP/c.yaml -m $M -n 8 --min-new-tokens 0 --seeds 0 --no-system $TMP/p.jsonl"
stub vllm
expect_status "vllm: every constraint is sent" 0 "$BIN/gen-candidates" --server "$S" --server-kind vllm $GEN \
    --only "schema compact" --only "schema any" --only regex --only choice
check "  ... as structured_outputs json (with disable_any_whitespace), regex, choice" $PY - "$TMP/vllm.bodies" <<'PYEOF'
import json, sys
b = [json.loads(l) for l in open(sys.argv[1])]   # in the order they arrived
assert len(b) == 4, b
by = {}
for x in b:
    so = x["structured_outputs"]
    by[("json", "object") if "json" in so and so["json"]["type"] == "object" else ("json", "array") if "json" in so else tuple(so)] = x
obj, arr = by[("json", "object")], by[("json", "array")]
assert obj["structured_outputs"] == {"json": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                     "disable_any_whitespace": True}, obj
assert arr["structured_outputs"]["disable_any_whitespace"] is False and arr["structured_outputs"]["json"]["minItems"] == 3, arr
assert by[("regex",)]["structured_outputs"] == {"regex": "[0-9]{3}-[a-z]+"}, by
assert by[("choice",)]["structured_outputs"] == {"choice": ["yes", "no", "a.b (c)", 'say "hi"']}, by
assert obj["temperature"] == 0.8 and "json_schema" not in obj, obj
PYEOF
expect_status "vllm: a GBNF grammar is sent too" 0 "$BIN/gen-candidates" --server "$S" --server-kind vllm $GEN --only grammar
check "  ... as structured_outputs grammar" $PY -c "
import json
b = [json.loads(l) for l in open('$TMP/vllm.bodies')][-1]
assert b['structured_outputs'] == {'grammar': 'root ::= \"x\" [0-9]+'} and b['top_p'] == 0.9, b"

stub sglang
expect_status "sglang: schema (whitespace any), regex, choice, grammar are sent" 0 "$BIN/gen-candidates" --server "$S" --server-kind sglang $GEN \
    --only "schema any" --only regex --only choice --only grammar
check "  ... as sampling_params json_schema (JSON text), regex, the choice as an escaped regex, ebnf" $PY - "$TMP/sglang.bodies" <<'PYEOF'
import json, re, sys
sp = [json.loads(l)["sampling_params"] for l in open(sys.argv[1])]
assert len(sp) == 4, sp
order = ["json_schema", "regex", "choice", "ebnf"]   # the arrival order is any: sort them
key = lambda x: 0 if "json_schema" in x else 3 if "ebnf" in x else 1 if x.get("regex") == "[0-9]{3}-[a-z]+" else 2
sp.sort(key=key)
assert json.loads(sp[0]["json_schema"]) == {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}, sp[0]
assert sp[1]["regex"] == "[0-9]{3}-[a-z]+", sp[1]
opts = ["yes", "no", "a.b (c)", 'say "hi"']
assert all(re.fullmatch(sp[2]["regex"], o) for o in opts), sp[2]
assert not any(re.fullmatch(sp[2]["regex"], o) for o in ("a-b (c)", "ye", "yesno", "a.b c")), sp[2]
assert sp[3]["ebnf"] == 'root ::= "x" [0-9]+', sp[3]
PYEOF
expect_status "sglang: a compact JSON schema is refused (its whitespace is the server's setting)" 1 "$BIN/gen-candidates" --server "$S" --server-kind sglang $GEN --only "schema compact"
expect_stderr "  ... naming heuristic, processor and parameter" 'heuristic "schema compact": sglang cannot express processor 2 \(json_schema\) parameter "whitespace"'

stub llama-server
expect_status "llama-server: schema and choice are sent" 0 "$BIN/gen-candidates" --server "$S" --server-kind llama-server $GEN \
    --only "schema any" --only choice
check "  ... as json_schema, and the choice as a GBNF of quoted options" $PY - "$TMP/llama-server.bodies" <<'PYEOF'
import json, sys
b = sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda x: "grammar" in x)
assert len(b) == 2, b
assert b[0]["json_schema"]["items"] == {"type": "number"} and "samplers" in b[0], b[0]
assert b[1]["grammar"] == 'root ::= "yes" | "no" | "a.b (c)" | "say \\"hi\\""', b[1]["grammar"]
PYEOF
expect_status "llama-server: a regex is refused" 1 "$BIN/gen-candidates" --server "$S" --server-kind llama-server $GEN --only regex
expect_stderr "  ... naming heuristic and processor" 'heuristic "regex": llama-server cannot express processor 1 \(regex\)'
expect_status "two constraints in one heuristic are refused" 1 "$BIN/gen-candidates" --server "$S" --server-kind vllm $GEN --only two
expect_stderr "  ... saying so" 'takes one constraint; processor 2 \(choice\)'
