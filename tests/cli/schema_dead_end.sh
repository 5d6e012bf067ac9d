# schema_dead_end.sh — a schema checked when the value completes
# (uniqueItems) whose mask reaches a dead end: two items of [1, 2] that
# repeat ([1,1], [2,2]) close the array, the final check refuses it and no
# token may follow. gen-candidates then ends the candidate (the end of
# generation stays allowed, also before --min-new-tokens, default 50)
# rather than failing on an empty row; the prompt's own constraint records
# valid false exactly when Python's jsonschema refuses the text, and verify
# discards exactly those records.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
SCHEMA='{"type": "array", "items": {"enum": [1, 2]}, "minItems": 2, "maxItems": 2, "uniqueItems": true}'

cat > "$TMP/own.yaml" <<EOF
sampling_pipelines:
  - name: pair
    processors:
      - name: json_schema
        params: {schema: $SCHEMA}
EOF
cat > "$TMP/warm.yaml" <<'EOF'
sampling_pipelines:
  - name: warm
    processors:
      - name: temperature
        params: {temperature: 1.0}
EOF
printf '{"id": "a", "prompt": "Two numbers:"}\n' > "$TMP/p.jsonl"
printf '{"id": "a", "prompt": "Two numbers:", "json_schema": %s}\n' "$SCHEMA" > "$TMP/pc.jsonl"

expect_status "gen-candidates, the schema in a heuristic: no error at the dead end" 0 \
    "$BIN/gen-candidates" -m "$M" -H "$TMP/own.yaml" -n 16 --seeds 0-15 -t 1 "$TMP/p.jsonl"
cp "$TMP/out" "$TMP/own.out"
expect_status "gen-candidates, the schema as the prompt's own constraint: no error at the dead end" 0 \
    "$BIN/gen-candidates" -m "$M" -H "$TMP/warm.yaml" -n 16 --seeds 0-15 -t 1 "$TMP/pc.jsonl"
cp "$TMP/out" "$TMP/pc.out"

check "ended candidates: jsonschema refuses exactly those recorded valid false, some reach the dead end" \
    $PY - "$TMP/own.out" "$TMP/pc.out" "$SCHEMA" "$TMP/dead.txt" <<'PYEOF'
import json, sys
import jsonschema
schema = json.loads(sys.argv[3])
def ok(t):
    try:
        jsonschema.validate(json.loads(t), schema)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False
own = [json.loads(l) for l in open(sys.argv[1])]
pc = [json.loads(l) for l in open(sys.argv[2])]
assert len(own) == 16 and len(pc) == 16, (len(own), len(pc))
dead = 0
for r in own:
    assert "constraint" not in r, r
    if r["finish"] == "eos" and not ok(r["generation"]):
        v = json.loads(r["generation"])  # closed: a whole array, items repeated
        assert len(v) == 2 and v[0] == v[1], r["generation"]
        dead += 1
for r in pc:
    good = r["finish"] != "length" and ok(r["generation"])
    assert r["constraint"]["valid"] is good, (r["generation"], r["finish"], r["constraint"])
    if r["finish"] == "eos" and not good:
        v = json.loads(r["generation"])
        assert len(v) == 2 and v[0] == v[1], r["generation"]
        dead += 1
open(sys.argv[4], "w").write("# %d of 32 candidates ended at the dead end ([1,1] or [2,2])\n" % dead)
assert dead >= 1 and any(r["constraint"]["valid"] for r in pc), dead
PYEOF
[ ! -s "$TMP/dead.txt" ] || cat "$TMP/dead.txt"

# verify, one record at a time (each its own prompt group): a record whose
# text the schema refuses is discarded, one it accepts is written
i=0
bad=""
while IFS= read -r line; do
    i=$((i + 1))
    printf '%s\n' "$line" > "$TMP/one.jsonl"
    want=$(printf '%s\n' "$line" | $PY -c 'import json, sys; print(1 if json.load(sys.stdin)["constraint"]["valid"] else 0)')
    "$BIN/verify" "$TMP/one.jsonl" > "$TMP/one.out" 2> "$TMP/one.err" || bad="$bad record $i: exit status $?;"
    got=$(wc -l < "$TMP/one.out")
    [ "$got" -eq "$want" ] || bad="$bad record $i: $got written, $want expected;"
    [ "$want" = 1 ] || grep -q "does not satisfy its constraint" "$TMP/one.err" || bad="$bad record $i: no reason;"
done < "$TMP/pc.out"
if [ -z "$bad" ] && [ "$i" = 16 ]; then ok "verify discards exactly the records the schema refuses"; else not_ok "verify discards exactly the records the schema refuses" "$i records;$bad"; fi
