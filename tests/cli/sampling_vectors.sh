# sampling_vectors.sh — tests/data/sampling/vectors.jsonl is what its
# generator (tests/fixtures/make_sampling_vectors.py: HF's processors in
# float32 torch, llama.cpp's samplers in numpy float32) makes of its
# inputs: every expected row recomputed and written byte for byte the same.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
if ! "$PY" -c 'import torch, numpy' 2> /dev/null; then
    skip "the sampling vectors regenerate identically" "python3-torch or python3-numpy is not installed"
    exit 0
fi
check "the sampling vectors regenerate identically" "$PY" "$ROOT/tests/fixtures/make_sampling_vectors.py" \
    "$DATA/sampling/vectors.jsonl" "$TMP/vectors.jsonl"
check "regenerated file == committed file" cmp "$DATA/sampling/vectors.jsonl" "$TMP/vectors.jsonl"
# the generator is not vacuous: a wrong expected value is found
sed '1s/"expected":\[5.399218,/"expected":[5.399219,/' "$DATA/sampling/vectors.jsonl" > "$TMP/bad.jsonl"
expect_status "a changed expected value is reported" 1 "$PY" "$ROOT/tests/fixtures/make_sampling_vectors.py" --check "$TMP/bad.jsonl"
expect_stdout "and named" 'DIFFERS: temperature/V8/random/temperature=0.3'
