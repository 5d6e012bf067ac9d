# score_ngram.sh — score-ngram build and labelling on a small corpus
# (tests/data/ngram/), against a Python transcription of the reference's
# label_infinigram walk with existence checked by brute force over the
# corpus words; pass-through, schemas, determinism and the errors.
. "$ASN_ROOT/tests/lib/cli.sh"
SN="$BIN/score-ngram"
D="$DATA/ngram"
PY=/usr/bin/python3
V="$ROOT/tests/scripts/validate_schema.py"

expect_status "build an index" 0 "$SN" build -v -o "$TMP/ix" "$D/corpus_a.txt" "$D/corpus_b.txt"
expect_stderr "build -v reports the figures" "[0-9]+ words, [0-9]+ distinct, 2 documents; index"
expect_status "label candidates" 0 "$SN" --index "$TMP/ix" "$D/candidates.jsonl"
cp "$TMP/out" "$TMP/l.jsonl"
check "output is valid against ngram.schema.json" $PY "$V" ngram "$TMP/l.jsonl"

# reference: the reference's walk (binary search on the length, existence
# of an n-gram = it occurs inside one document, here one file)
cat > "$TMP/ref.py" <<'PYEOF'
import json, sys
mode, max_n, inp_path, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
files = sys.argv[5:]
docs = []
for f in files:
    text = open(f, encoding="utf-8").read()
    docs += [l.split() for l in text.split("\n")] if mode == "lines" else [text.split()]

def exists(ng):
    n = len(ng)
    return any(d[i:i + n] == ng for d in docs for i in range(len(d) - n + 1))

def label(text):
    tokens = text.split()
    total, breaks, longest, i, was = 0, 0, 0, 0, False
    while i < len(tokens):
        best, low, high = 0, 1, min(max_n, len(tokens) - i)
        while low <= high:
            n = low + (high - low) // 2
            if exists(tokens[i:i + n]):
                best, low = n, n + 1
            else:
                high = n - 1
        if best > 0:
            total += best; i += best; was = True; longest = max(longest, best)
        else:
            if was:
                breaks += 1
            i += 1; was = False
    return {"coverage": total, "breaks": breaks, "longest": longest, "words": len(tokens)}

inp = [json.loads(l) for l in open(inp_path)]
got = [json.loads(l) for l in open(out)]
assert len(inp) == len(got)
nonzero = 0
for a, b in zip(inp, got):
    exp = label(a["generation"])
    assert b.pop("ngram") == exp, (a["generation"], exp)
    assert b.pop("infinigram_scores") == {"infinigram_total_coverage": exp["coverage"], "infinigram_breaks": exp["breaks"]}
    assert a == b, (a, b)
    nonzero += exp["breaks"] > 0
assert nonzero >= 2
PYEOF
check "labels equal the reference's walk over a brute-force corpus scan; fields pass through" \
    $PY "$TMP/ref.py" files 10 "$D/candidates.jsonl" "$TMP/l.jsonl" "$D/corpus_a.txt" "$D/corpus_b.txt"
expect_status "label with --max-n 3" 0 "$SN" --index "$TMP/ix" --max-n 3 "$D/candidates.jsonl"
cp "$TMP/out" "$TMP/l3.jsonl"
check "--max-n 3 equals the reference's walk with max_n 3" \
    $PY "$TMP/ref.py" files 3 "$D/candidates.jsonl" "$TMP/l3.jsonl" "$D/corpus_a.txt" "$D/corpus_b.txt"
check "--max-n caps the longest match" $PY -c '
import json, sys
assert max(json.loads(l)["ngram"]["longest"] for l in open(sys.argv[1])) == 3
assert max(json.loads(l)["ngram"]["longest"] for l in open(sys.argv[2])) == 10' "$TMP/l3.jsonl" "$TMP/l.jsonl"
check "an empty generation gets zeros" $PY -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert r[4]["ngram"] == {"coverage": 0, "breaks": 0, "longest": 0, "words": 0} and r[5]["ngram"]["words"] == 0' "$TMP/l.jsonl"

expect_status "build with --lines" 0 "$SN" build --lines -o "$TMP/ixl" "$D/corpus_a.txt" "$D/corpus_b.txt"
"$SN" --index "$TMP/ixl" "$D/candidates.jsonl" > "$TMP/ll.jsonl" 2>/dev/null
check "--lines: no n-gram spans two lines" \
    $PY "$TMP/ref.py" lines 10 "$D/candidates.jsonl" "$TMP/ll.jsonl" "$D/corpus_a.txt" "$D/corpus_b.txt"
check "--lines changes the labels of text that spans a line" sh -c '! cmp -s "$1" "$2"' - "$TMP/l.jsonl" "$TMP/ll.jsonl"

# determinism
"$SN" build -o "$TMP/ix2" "$D/corpus_a.txt" "$D/corpus_b.txt" 2>/dev/null
check "building twice gives the same index bytes" cmp "$TMP/ix" "$TMP/ix2"
"$SN" --index "$TMP/ix2" < "$D/candidates.jsonl" > "$TMP/l2.jsonl" 2>/dev/null
check "labelling twice (stdin) gives the same bytes" cmp "$TMP/l.jsonl" "$TMP/l2.jsonl"
cat "$D/corpus_a.txt" | "$SN" build -o "$TMP/ix3" - "$D/corpus_b.txt" 2>/dev/null
check "a corpus on stdin (-) indexes the same" cmp "$TMP/ix" "$TMP/ix3"

# errors
printf '' > "$TMP/empty.jsonl"
expect_status "empty input" 0 "$SN" --index "$TMP/ix" "$TMP/empty.jsonl"
check "empty input gives empty output" test ! -s "$TMP/out"
head -n 2 "$D/candidates.jsonl" > "$TMP/bad.jsonl"
printf '{"id":"x","prompt_id":"x","text":"no generation"}\n' >> "$TMP/bad.jsonl"
tail -n 1 "$D/candidates.jsonl" >> "$TMP/bad.jsonl"
expect_status "missing generation is an error" 1 "$SN" --index "$TMP/ix" "$TMP/bad.jsonl"
expect_stderr "the error names file, line and field" 'bad\.jsonl:3: field "generation" is missing'
check "records before the error are written" test "$(grep -c . "$TMP/out")" = 2
expect_status "--skip-invalid goes on" 0 "$SN" --index "$TMP/ix" --skip-invalid "$TMP/bad.jsonl"
expect_stderr "--skip-invalid warns and counts" 'skipped 1 invalid record'
check "--skip-invalid writes the valid records" test "$(grep -c . "$TMP/out")" = 3
printf '{"generation":["a"]}\n' > "$TMP/arr.jsonl"
expect_status "a generation that is not a string is an error" 1 "$SN" --index "$TMP/ix" "$TMP/arr.jsonl"
expect_stderr "the type error names the field" 'arr\.jsonl:1: field "generation" must be a string'
printf '{"generation":"a",\n' > "$TMP/broken.jsonl"
expect_status "malformed JSON is an error" 1 "$SN" --index "$TMP/ix" "$TMP/broken.jsonl"
expect_status "--index is required" 2 "$SN" "$D/candidates.jsonl"
expect_status "--max-n 0 is a usage error" 2 "$SN" --index "$TMP/ix" --max-n 0 "$D/candidates.jsonl"
expect_status "a missing index is an error" 1 "$SN" --index "$TMP/nope.idx" "$D/candidates.jsonl"
expect_stderr "the missing index is named" "nope\.idx"
head -c 100 "$TMP/ix" > "$TMP/trunc.idx"
expect_status "a truncated index is an error" 1 "$SN" --index "$TMP/trunc.idx" "$D/candidates.jsonl"
expect_stderr "the truncated index is called damaged" "trunc\.idx: damaged index"
expect_status "a file that is not an index is an error" 1 "$SN" --index "$D/corpus_a.txt" "$D/candidates.jsonl"
expect_stderr "it says so" "not an n-gram index"
expect_status "build without -o is a usage error" 2 "$SN" build "$D/corpus_a.txt"
expect_status "build without a corpus is a usage error" 2 "$SN" build -o "$TMP/x.idx"
expect_status "build of a missing corpus file is an error" 1 "$SN" build -o "$TMP/x.idx" "$TMP/nope.txt"
check "a failed build leaves no index behind" test ! -e "$TMP/x.idx"
expect_status "--help" 0 "$SN" --help
expect_stdout "--help names the reference's fields" "infinigram_total_coverage"
expect_status "build --help" 0 "$SN" build --help
expect_stdout "build --help describes the documents" "--lines"
