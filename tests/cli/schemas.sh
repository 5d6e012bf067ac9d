#!/bin/sh
# schemas/: the JSON Schemas are valid, agree with what the tools read and
# write, and are not vacuous. Checked with an independent validator (Debian's
# python3-jsonschema, through tests/scripts/validate_schema.py).
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
V="$ROOT/tests/scripts/validate_schema.py"
S="$ROOT/schemas"
PL="$BIN/process-logits"
REF="$DATA/reference-configs"
VECTORS="$DATA/sampling/vectors.jsonl"
CASES="$DATA/cli/processor_cases.jsonl"

# valid NAME SCHEMA FILE...: the validator accepts every record of every FILE.
valid() {
    vname=$1; shift
    check "$vname" "$PY" "$V" "$@"
}

# rejects NAME SCHEMA FILE REGEX: the validator rejects FILE (exit status 1)
# with a message matching the extended regex.
rejects() {
    "$PY" "$V" -q "$2" "$3" > "$TMP/v.out" 2>&1; vrc=$?
    if [ "$vrc" != 1 ]; then
        not_ok "$1" "validator exit status $vrc, expected 1: $(head -c 300 "$TMP/v.out")"
    elif ! grep -Eq -- "$4" "$TMP/v.out"; then
        not_ok "$1" "validator output did not match /$4/: $(head -c 300 "$TMP/v.out")"
    else
        ok "$1"
    fi
}

# --------------------------------------------------------- the schemas

for f in logits-record logits-record-out processor heuristics; do
    if [ -f "$S/$f.schema.json" ]; then ok "schemas/$f.schema.json exists"; else not_ok "schemas/$f.schema.json exists" "missing"; fi
done
if [ -f "$ROOT/tools/gen-heuristics.c" ]; then
    if [ -f "$S/heuristics-grid.schema.json" ]; then ok "schemas/heuristics-grid.schema.json exists"
    else not_ok "schemas/heuristics-grid.schema.json exists" "tools/gen-heuristics.c reads grids, but there is no schema for them"; fi
fi

check "schemas are valid draft 2020-12 schemas, with title, description, \$id and resolvable \$refs" \
    "$PY" "$V" --check-schemas

# ... and the check is not vacuous
mkdir -p "$TMP/bad-schemas"
printf '{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://asn.invalid/schemas/t1.schema.json","title":"t","description":"t","type":"float"}\n' \
    > "$TMP/bad-schemas/t1.schema.json"
"$PY" "$V" --check-schemas "$TMP/bad-schemas/t1.schema.json" > "$TMP/v.out" 2>&1
if [ $? = 1 ] && grep -q 't1\.schema\.json: not a valid draft 2020-12 schema' "$TMP/v.out"; then ok "--check-schemas rejects an invalid schema"
else not_ok "--check-schemas rejects an invalid schema" "$(head -c 300 "$TMP/v.out")"; fi
printf '{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://asn.invalid/schemas/t2.schema.json","title":"t","description":"t","items":{"$ref":"processor.schema.json#/$defs/nucleus"}}\n' \
    > "$TMP/bad-schemas/t2.schema.json"
"$PY" "$V" --check-schemas "$TMP/bad-schemas/t2.schema.json" > "$TMP/v.out" 2>&1
if [ $? = 1 ] && grep -q 't2\.schema\.json: \$ref processor\.schema\.json#/\$defs/nucleus does not resolve' "$TMP/v.out"; then ok "--check-schemas rejects a \$ref that does not resolve"
else not_ok "--check-schemas rejects a \$ref that does not resolve" "$(head -c 300 "$TMP/v.out")"; fi

# The processor names of the schema are those of the library's KINDS table.
# the rows of the processor table: {.name = "NAME", .kind = ASN_PROC_...} in the family files
sed -n 's/^ *{\.name = "\([a-z0-9_]*\)", \.kind = ASN_PROC_.*/\1/p' "$ROOT"/lib/sampling/proc_*.c | LC_ALL=C sort > "$TMP/kinds"
"$PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
print("\n".join(sorted(s["properties"]["name"]["enum"])))
print("\n".join(sorted(k for k in s["$defs"] if k not in ("token_id", "sweep_processor", "sweep_values"))), file=open(sys.argv[2], "w"))' \
    "$S/processor.schema.json" "$TMP/defs" > "$TMP/enum"
if [ -s "$TMP/kinds" ] && cmp -s "$TMP/kinds" "$TMP/enum"; then
    ok "processor schema names every processor of the table (lib/sampling/proc_*.c), and no other"
else
    not_ok "processor schema names every processor of the table (lib/sampling/proc_*.c), and no other" \
        "$(diff "$TMP/kinds" "$TMP/enum" | grep '^[<>]' | tr '\n' ' ')"
fi
if cmp -s "$TMP/enum" "$TMP/defs"; then ok "processor schema describes the parameters of every processor"
else not_ok "processor schema describes the parameters of every processor" "$(diff "$TMP/enum" "$TMP/defs" | grep '^[<>]' | tr '\n' ' ')"; fi

# schemas/processor.schema.json is made from the processor table: it must be
# what process-logits --schema prints now (after a change to a row:
# bin/process-logits --schema > schemas/processor.schema.json).
if "$PL" --schema > "$TMP/processor.schema.json" 2> "$TMP/schema.err" && cmp -s "$TMP/processor.schema.json" "$S/processor.schema.json"; then
    ok "schemas/processor.schema.json is what process-logits --schema makes from the processor table"
else
    not_ok "schemas/processor.schema.json is what process-logits --schema makes from the processor table" \
        "$(cat "$TMP/schema.err"; diff "$S/processor.schema.json" "$TMP/processor.schema.json" | head -8 | tr '\n' ' ')"
fi
# ... every row there: a row of the table with a new parameter gives another schema
"$PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
d = s["$defs"]
ok = all(n in d for n in s["properties"]["name"]["enum"])
ok = ok and d["top_p"]["properties"]["top_p"] == {"type": "number", "minimum": 0, "maximum": 1, "description": "0 <= top_p <= 1."}
ok = ok and d["penalties"]["properties"]["penalty_last_n"].get("default") == 64 and "required" not in d["penalties"]
ok = ok and d["penalties"]["type"] == ["object", "null"] and d["mirostat_v2"]["required"] == ["tau", "eta"]
ok = ok and d["epsilon"]["properties"]["min_tokens_to_keep"]["exclusiveMaximum"] == 2000000001
ok = ok and "xtc" not in d["sweep_processor"]["enum"] and "top_k" in d["sweep_processor"]["enum"]
sys.exit(0 if ok else 1)' "$TMP/processor.schema.json"
if [ $? = 0 ]; then ok "process-logits --schema: ranges, defaults, required parameters and sweepable processors as the rows say"
else not_ok "process-logits --schema: ranges, defaults, required parameters and sweepable processors as the rows say" "$(head -c 300 "$TMP/processor.schema.json")"; fi
expect_status "process-logits --schema takes no file" 2 "$PL" --schema "$VECTORS"

# ------------------------------------------------------- valid documents

valid "every sampling test vector is a valid logits-record" logits-record "$VECTORS"

"$PL" --sample "$VECTORS" > "$TMP/sampled.jsonl" 2> "$TMP/sampled.err"
if [ $? -eq 0 ] && [ "$(wc -l < "$TMP/sampled.jsonl")" -eq "$(grep -c . "$VECTORS")" ]; then
    ok "process-logits --sample processes every vector"
else
    not_ok "process-logits --sample processes every vector" "$(head -c 300 "$TMP/sampled.err")"
fi
valid "process-logits --sample output is valid logits-record-out" logits-record-out "$TMP/sampled.jsonl"
valid "process-logits output is again a valid logits-record" logits-record "$TMP/sampled.jsonl"
check "each sampled token indexes a token that was not removed" "$PY" -c 'import json, sys
for n, line in enumerate(open(sys.argv[1]), 1):
    r = json.loads(line)
    t = r.get("token")
    if not isinstance(t, int) or not 0 <= t < len(r["logits"]) or r["logits"][t] is None:
        sys.exit("line %d: token %r, logits %r" % (n, t, r["logits"][:10]))' "$TMP/sampled.jsonl"

for f in "$REF"/generated_config_*.yaml "$REF/custom_logit_processors_test.yaml" \
         "$REF/test_greedy.yaml" "$REF/heuristics_min_p_0.05.yaml"; do
    valid "reference heuristics file $(basename "$f") is a valid heuristics file" heuristics "$f"
done
# JSON is YAML: the same heuristics as a JSON document
"$PY" -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout, indent=1)' \
    "$REF/custom_logit_processors_test.yaml" > "$TMP/custom.json"
valid "a heuristics file in JSON is a valid heuristics file" heuristics "$TMP/custom.json"

# The processor schema and process-logits agree with the expected verdict of
# every case: each processor with its required parameters, each parameter at
# and past the ends of its range, wrong types, unknown and missing parameters,
# and the record's own fields.
grep -n '"valid":false' "$CASES" | cut -d: -f1 | sort -n > "$TMP/cases.expected"
"$PY" "$V" -q logits-record "$CASES" | sed -n 's/^[^:]*:\([0-9][0-9]*\): .*/\1/p' | sort -nu > "$TMP/cases.schema"
"$PL" --skip-invalid "$CASES" 2>&1 > "$TMP/cases.out" | sed -n 's/^process-logits: warning: [^:]*:\([0-9][0-9]*\): .*/\1/p' \
    | sort -nu > "$TMP/cases.tool"
ncases=$(grep -c . "$CASES")
nbad=$(wc -l < "$TMP/cases.expected")
# mismatches FILE: the cases whose verdict in FILE differs from the expected one
mismatches() {
    diff "$TMP/cases.expected" "$1" | sed -n 's/^[<>] //p' | while read -r n; do
        sed -n "${n}p" "$CASES" | sed 's/^{"case":"\([^"]*\)","valid":\([a-z]*\).*/\1 (valid: \2);/'
    done | tr '\n' ' ' | head -c 600
}
if [ "$nbad" -gt 50 ] && [ "$nbad" -lt "$ncases" ] && cmp -s "$TMP/cases.expected" "$TMP/cases.schema"; then
    ok "schema verdicts on $ncases processor/record cases are the expected ones"
else
    not_ok "schema verdicts on $ncases processor/record cases are the expected ones" "$(mismatches "$TMP/cases.schema")"
fi
if cmp -s "$TMP/cases.expected" "$TMP/cases.tool" && [ "$(wc -l < "$TMP/cases.out")" -eq $((ncases - nbad)) ]; then
    ok "process-logits verdicts on $ncases processor/record cases are the expected ones"
else
    not_ok "process-logits verdicts on $ncases processor/record cases are the expected ones" "$(mismatches "$TMP/cases.tool")"
fi

# ----------------------------------------------------- invalid documents

rec() { # FILE PROCESSORS-JSON: one logits record with these processors
    printf '{"logits":[1.0,2.0,3.0],"processors":%s}\n' "$2" > "$1"
}
rec "$TMP/top_p.jsonl" '[{"name":"top_p","params":{"top_p":1.5}}]'
rejects "logits-record rejects top_p 1.5" logits-record "$TMP/top_p.jsonl" \
    ':1: /processors/0/params/top_p: 1.5 is greater than the maximum of 1'
rec "$TMP/top_k.jsonl" '[{"name":"top_k","params":{"top_k":2.5}}]'
rejects "logits-record rejects top_k 2.5" logits-record "$TMP/top_k.jsonl" "/processors/0/params/top_k: 2.5 is not of type 'integer'"
rec "$TMP/temp0.jsonl" '[{"name":"temperature","params":{"temperature":0}}]'
rejects "logits-record rejects temperature 0" logits-record "$TMP/temp0.jsonl" "/params/temperature: 0 is less than or equal to the minimum of 0"
rec "$TMP/unknown.jsonl" '[{"name":"nucleus","params":{"top_p":0.9}}]'
rejects "logits-record rejects an unknown processor" logits-record "$TMP/unknown.jsonl" "/processors/0/name: 'nucleus' is not one of"
rec "$TMP/param.jsonl" '[{"name":"min_p","params":{"min_p":0.1,"top_p":0.9}}]'
rejects "logits-record rejects an unknown parameter" logits-record "$TMP/param.jsonl" "'top_p' was unexpected"
rec "$TMP/req.jsonl" '[{"name":"typical","params":{"min_tokens_to_keep":2}}]'
rejects "logits-record rejects a missing required parameter" logits-record "$TMP/req.jsonl" "'mass' is a required property"
printf '{"logits":"1 2 3","processors":[]}\n' > "$TMP/notarray.jsonl"
rejects "logits-record rejects logits that are not an array" logits-record "$TMP/notarray.jsonl" "/logits: '1 2 3' is not of type 'array'"
printf '{"processors":[]}\n' > "$TMP/nologits.jsonl"
rejects "logits-record rejects a record without logits" logits-record "$TMP/nologits.jsonl" "'logits' is a required property"
printf '{"logits":[1,"2"],"processors":[]}\n' > "$TMP/strlogit.jsonl"
rejects "logits-record rejects a logit that is a string" logits-record "$TMP/strlogit.jsonl" "/logits/1: '2' is not of type"
printf '{"logits":[null,null],"processors":[]}\n' > "$TMP/allinf.jsonl"
rejects "logits-record rejects a row that is all -inf" logits-record "$TMP/allinf.jsonl" "/logits: .*does not contain"
printf '{"logits":[1,1e39],"processors":[]}\n' > "$TMP/big.jsonl"
rejects "logits-record rejects a logit beyond float32" logits-record "$TMP/big.jsonl" "/logits/1: 1e\\+39 is greater than"
printf '[1,2,3]\n' > "$TMP/array.jsonl"
rejects "logits-record rejects a record that is not an object" logits-record "$TMP/array.jsonl" "is not of type 'object'"
printf '{"logits":[1,2],"processors":[]}\n{"logits":[1,2],"processors":[]}\n{"logits":[1,2\n' > "$TMP/broken.jsonl"
rejects "the validator names FILE:LINE of malformed JSON" logits-record "$TMP/broken.jsonl" 'broken\.jsonl:3: invalid JSON'
printf '{"logits":[NaN],"processors":[]}\n' > "$TMP/nan.jsonl"
rejects "the validator rejects NaN, as asn's JSON reader does" logits-record "$TMP/nan.jsonl" 'nan\.jsonl:1: invalid JSON: NaN'

printf '{"logits":[1.0,null],"token":-1}\n' > "$TMP/tokneg.jsonl"
rejects "logits-record-out rejects a negative token" logits-record-out "$TMP/tokneg.jsonl" "/token: -1 is less than the minimum of 0"
printf '{"logits":[1.0,null],"token":"0"}\n' > "$TMP/tokstr.jsonl"
rejects "logits-record-out rejects a token that is a string" logits-record-out "$TMP/tokstr.jsonl" "/token: '0' is not of type 'integer'"
printf '{"token":0}\n' > "$TMP/toknologits.jsonl"
rejects "logits-record-out rejects a record without logits" logits-record-out "$TMP/toknologits.jsonl" "'logits' is a required property"

cat > "$TMP/h_top_p.yaml" <<'EOF'
sampling_pipelines:
  - name: ok
    weight: 1
    processors:
      - name: top_k
        params: {top_k: 5}
  - name: too much
    weight: 1
    processors:
      - name: top_p
        params:
          top_p: 1.5
EOF
rejects "heuristics rejects top_p 1.5, naming FILE:LINE:COL of the value" heuristics "$TMP/h_top_p.yaml" \
    'h_top_p\.yaml:12:18: /sampling_pipelines/1/processors/0/params/top_p: 1\.5 is greater than the maximum of 1'
cat > "$TMP/h_eps.yaml" <<'EOF'
name: eta
processors:
  - name: eta
    params: {epsilon: 3e-4, min_tokens_to_keep: 0}
EOF
rejects "heuristics reads 3e-4 as a number, as asn does, and rejects min_tokens_to_keep 0" heuristics "$TMP/h_eps.yaml" \
    '^[^ ]*h_eps\.yaml:4:[0-9]+: /processors/0/params/min_tokens_to_keep: 0 is less than the minimum of 1$'
printf 'sampling_pipelines: []\n' > "$TMP/h_empty.yaml"
rejects "heuristics rejects an empty sampling_pipelines" heuristics "$TMP/h_empty.yaml" "/sampling_pipelines: \[\] (should be non-empty|is too short)"
printf 'sampling_pipelines:\n  - name: a\n    weight: 1\n' > "$TMP/h_noprocs.yaml"
rejects "heuristics rejects a pipeline without processors" heuristics "$TMP/h_noprocs.yaml" "/sampling_pipelines/0: 'processors' is a required property"
printf 'weight: 1\nprocessors: []\n' > "$TMP/h_noname.yaml"
rejects "heuristics rejects a bare pipeline without a name" heuristics "$TMP/h_noname.yaml" "'name' is a required property"
printf 'name: a\nweight: heavy\nprocessors: []\n' > "$TMP/h_weight.yaml"
rejects "heuristics rejects a weight that is not a number" heuristics "$TMP/h_weight.yaml" "/weight: 'heavy' is not of type"
printf 'name: a\nprocessors:\n  - name: top_k\n    parmas: {top_k: 5}\n' > "$TMP/h_typo.yaml"
rejects "heuristics rejects a misspelt key of a processor" heuristics "$TMP/h_typo.yaml" "'parmas' was unexpected"
printf 'pipelines:\n  - name: a\n    processors: []\n' > "$TMP/h_other.yaml"
rejects "heuristics rejects a file that is neither form" heuristics "$TMP/h_other.yaml" "'(name|processors)' is a required property"
printf 'name: a\nprocessors:\n  - name: top_k\n    params: {top_k: 5\n' > "$TMP/h_syntax.yaml"
rejects "the validator names FILE:LINE:COL of a YAML syntax error" heuristics "$TMP/h_syntax.yaml" 'h_syntax\.yaml:[0-9]+:[0-9]+: '

# ------------------------------------------------ gen-heuristics and grids

GH="$BIN/gen-heuristics"
GRIDS="$DATA/cli/grid_cases.jsonl"
if [ -x "$GH" ] && [ -f "$S/heuristics-grid.schema.json" ]; then
    valid "the shipped grid is a valid heuristics-grid" heuristics-grid "$ROOT/configs/heuristics/grid.yaml"
    for f in "$ROOT"/configs/heuristics/*.yaml; do
        case "$(basename "$f")" in grid.yaml|*-grid.yaml) valid "shipped grid $(basename "$f") is a valid heuristics-grid" heuristics-grid "$f"; continue ;; esac
        valid "shipped heuristics $(basename "$f") is a valid heuristics file" heuristics "$f"
    done
    for fam in llama gemma qwen none; do
        if "$GH" --grid "$ROOT/configs/heuristics/grid.yaml" --family $fam -o "$TMP/gen-$fam.yaml" 2> "$TMP/gen.err"; then
            valid "gen-heuristics --family $fam output is a valid heuristics file" heuristics "$TMP/gen-$fam.yaml"
        else
            not_ok "gen-heuristics --family $fam output is a valid heuristics file" "$(head -c 300 "$TMP/gen.err")"
        fi
    done
    # Each grid case (written as JSON, which is YAML) gets the expected verdict
    # from both the schema and gen-heuristics --family f.
    n=0; wrong_schema=""; wrong_tool=""
    while IFS= read -r line; do
        n=$((n + 1))
        printf '%s\n' "$line" | "$PY" -c 'import json, sys; json.dump(json.load(sys.stdin)["grid"], sys.stdout)' > "$TMP/grid.json"
        case "$line" in *'"valid":true'*) want=0 ;; *) want=1 ;; esac
        "$PY" "$V" -q heuristics-grid "$TMP/grid.json" > /dev/null 2>&1; got=$?
        [ "$got" = "$want" ] || wrong_schema="$wrong_schema $n"
        "$GH" --grid "$TMP/grid.json" --family f > /dev/null 2>&1; got=$?
        [ "$got" = "$want" ] || wrong_tool="$wrong_tool $n(status $got)"
    done < "$GRIDS"
    if [ "$n" -gt 40 ] && [ -z "$wrong_schema" ]; then ok "schema verdicts on $n grid cases are the expected ones"
    else not_ok "schema verdicts on $n grid cases are the expected ones" "wrong on lines:$wrong_schema of grid_cases.jsonl"; fi
    if [ "$n" -gt 40 ] && [ -z "$wrong_tool" ]; then ok "gen-heuristics verdicts on $n grid cases are the expected ones"
    else not_ok "gen-heuristics verdicts on $n grid cases are the expected ones" "wrong on lines:$wrong_tool of grid_cases.jsonl"; fi

    cat > "$TMP/g_top_p.yaml" <<'EOF'
temperatures: [0.7]
families: {f: []}
sweeps:
  - {processor: top_p, param: top_p, values: [0.9, 1.5]}
EOF
    rejects "heuristics-grid rejects a swept top_p of 1.5, naming FILE:LINE:COL" heuristics-grid "$TMP/g_top_p.yaml" \
        'g_top_p\.yaml:4:52: /sweeps/0/values/1: 1\.5 is greater than the maximum of 1'
    expect_status "gen-heuristics rejects the swept top_p of 1.5 too" 1 "$GH" --grid "$TMP/g_top_p.yaml" --family f
    expect_stderr "gen-heuristics names the same FILE:LINE:COL as the validator" \
        'g_top_p\.yaml:4:52: sweep "top_p": .*"top_p" must be >= 0 and <= 1, got 1\.5'
fi
