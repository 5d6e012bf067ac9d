# score_reward.sh — score-reward with a small random-weight reward model
# (tests/data/models/tiny-rm-q8_0.gguf: llama.cpp's SPM test vocabulary and a
# one-output cls.output head, written by tests/fixtures/make_arch_fixtures.py
# with the PyTorch float64 reward of two token sequences): the reward of a
# conversation against that reference, invariance to batching and threads,
# pass-through, and the errors.
. "$ASN_ROOT/tests/lib/cli.sh"
RM="$DATA/models/tiny-rm-q8_0.gguf"
SR="$BIN/score-reward"
PY=/usr/bin/python3

# With no chat template, prompt + generation: "Hello" + " world" is
# llama.cpp's "Hello world" (BOS 15043 3186), "Hello," + " world!" its
# "Hello, world!" (BOS 15043 29892 3186 29991).
cat > "$TMP/c.jsonl" <<'J'
{"prompt_id": "a", "prompt": "Hello", "generation": " world", "seed": 0, "extra": [1, 2]}
{"prompt_id": "a", "prompt": "Hello,", "generation": " world!", "seed": 1}
{"prompt_id": "b", "prompt": "Hello", "generation": " world", "seed": 0}
J
export ASN_EXACT_MATMUL=1
expect_status "score-reward runs" 0 "$SR" -m "$RM" --chat-template none "$TMP/c.jsonl"
cp "$TMP/out" "$TMP/r.jsonl"
check "rewards equal the PyTorch float64 head on llama.cpp's tokens (1e-4); other fields unchanged" \
    $PY - "$TMP/c.jsonl" "$TMP/r.jsonl" "$DATA/models/tiny-rm-q8_0.json" <<'PYEOF'
import json, sys
inp = [json.loads(l) for l in open(sys.argv[1])]
out = [json.loads(l) for l in open(sys.argv[2])]
ref = [s["reward"] for s in json.load(open(sys.argv[3]))["scored"]]
assert len(inp) == len(out)
for a, b in zip(inp, out):
    r = b.pop("reward")
    assert a == b, (a, b)
    a["reward"] = r
want = [ref[0], ref[1], ref[0]]
for a, w in zip(inp, want):
    assert abs(a["reward"] - w) <= 1e-4, (a["reward"], w)
PYEOF
expect_status "one text per pass, 2 threads" 0 "$SR" -m "$RM" --chat-template none --batch-tokens 1 -t 2 "$TMP/c.jsonl"
check "rewards do not depend on batching or threads" cmp "$TMP/out" "$TMP/r.jsonl"
unset ASN_EXACT_MATMUL
expect_status "the integer product" 0 "$SR" -m "$RM" --chat-template none "$TMP/c.jsonl"
check "integer rewards are near the exact ones" $PY - "$TMP/r.jsonl" "$TMP/out" <<'PYEOF'
import json, sys
a = [json.loads(l)["reward"] for l in open(sys.argv[1])]
b = [json.loads(l)["reward"] for l in open(sys.argv[2])]
assert all(abs(x - y) <= 0.05 * (1 + abs(x)) for x, y in zip(a, b)), (a, b)
PYEOF
expect_status "a chat template formats the conversation" 0 "$SR" -m "$RM" --chat-template chatml "$TMP/c.jsonl"
check "the template changes the reward" $PY -c "
import json, sys
a = [json.loads(l)['reward'] for l in open('$TMP/r.jsonl')]
b = [json.loads(l)['reward'] for l in open('$TMP/out')]
assert all(abs(x - y) > 1e-6 for x, y in zip(a, b)), (a, b)"

printf '{"prompt": "x", "generation": "y"}\n{"prompt": "x"}\n' > "$TMP/bad.jsonl"
expect_status "a record without generation fails" 1 "$SR" -m "$RM" --chat-template none "$TMP/bad.jsonl"
expect_stderr "the error names file, line and field" 'bad.jsonl:2: .*"generation"'
expect_status "--skip-invalid leaves it out" 0 "$SR" -m "$RM" --chat-template none --skip-invalid "$TMP/bad.jsonl"
check "one record written" test "$(wc -l < "$TMP/out")" = 1
expect_status "a model without a classification head is refused" 1 "$SR" -m "$DATA/models/tiny-spm-q8_0.gguf" "$TMP/c.jsonl"
expect_stderr "the error says why" 'no classification head'
expect_status "--model is required" 2 "$SR" "$TMP/c.jsonl"
