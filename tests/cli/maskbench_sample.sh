# maskbench_sample.sh — a sample of JSONSchemaBench's MaskBench (schemas and
# instances labelled valid or invalid by its authors, tests/data/maskbench)
# through constrain with Llama-3's vocabulary: every valid instance of a
# compiled schema is accepted token by token, no invalid one is (those the
# grammar only relaxes judged at the end by the full validator); the schema
# refused holds an integer beyond 64 bits.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
V="$ROOT/tests/data/vocab/ggml-vocab-llama-bpe.gguf"

# --timeout: this test is about verdicts, not speed; under the sanitizers on
# a loaded machine the long counted strings of o14471 take over 30 s
expect_status "maskbench.py --check over the sample" 0 $PY "$ROOT/bench/maskbench.py" --constrain "$BIN/constrain" -m "$V" \
    --check --timeout 1200 --out "$TMP/recs.jsonl" "$DATA/maskbench"
expect_stdout "60 of 61 schemas compiled" "^schemas compiled: +60/61 "
expect_stdout "every valid instance of a compiled schema accepted" "^valid instances accepted: +([0-9]+)/\\1 \\(100.0%\\)"
expect_stdout "a maximum of 2^64 - 1 (Github_medium---o83275) refuses its schema, the run goes on" "^ +1  integer 18446744073709551615 does not fit in 64 bits"
expect_stdout "every invalid instance rejected" "^invalid instances rejected: +([0-9]+)/\\1 \\(100.0%\\)"
for f in Snowplow---sp_175_Normalized MCPspec---SubscribeRequest Github_easy---o33695 \
    JsonSchemaStore---es6importsorterrc Synthesized---draft2019_09_valid_type_id47_subschema1_not_2 \
    Synthesized---draft2019_09_nonvalid_properties_id10_subschema1_not_2 Github_easy---o14471 Github_medium---o17648 \
    Glaiveai2K---calculate_volume_82c6c066 Glaiveai2K---calculate_area_ef245c1f Github_medium---o68277 Github_easy---o58910 \
    Github_easy---o90246 JsonSchemaStore---package-configuration-schema Glaiveai2K---calculate_area_d1be6fdf \
    Github_easy---o74459 Github_easy---o74561 Handwritten---pnmp2 Github_easy---o17460 Github_trivial---o21864 \
    Github_easy---o69159 Github_trivial---o64859; do
    check "$f (maxLength > 2000, uri, unknown format, oneOf of values, not, patternProperties, oneOf/anyOf of required, minProperties, dependencies, pattern with a length, patternProperties beside additionalProperties; with a final check: not, multipleOf, oneOf that may overlap, dependentRequired on 9+ properties, anyOf inside allOf) compiled" \
        grep -q "\"file\": \"$f.json\", \"text\": .*\"compiled\": true" "$TMP/recs.jsonl"
done
check "the verdicts agree with Python's jsonschema on the instances it can judge" $PY - "$TMP/recs.jsonl" <<'PYEOF'
import json, sys
import jsonschema
from jsonschema import validators
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    s = r["json_schema"]
    V = validators.validator_for(s, default=jsonschema.Draft202012Validator)
    assert r["valid"] == V(s).is_valid(json.loads(r["text"])) or not r["expect"], r["file"]
    n += 1
assert n > 60, n
PYEOF
