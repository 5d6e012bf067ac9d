# reward_server.sh — score-reward --server against serve's /classify on
# loopback: the rewards of score-reward -m, byte for byte (with and without
# a chat template, two servers); /classify in vLLM's layout, its activation
# against Python's; kinds without a reward endpoint refused.
. "$ASN_ROOT/tests/lib/cli.sh"
RM="$DATA/models/tiny-rm-q8_0.gguf"
TINY="$DATA/models/tiny-spm-q8_0.gguf"
SR="$BIN/score-reward"
PY=/usr/bin/python3

$PY - > "$TMP/c.jsonl" <<'PYEOF'
import json
words = ["Hello", "world", "how", "are", "you", "today", "fine", "thanks", "and", "the", "end"]
for p in range(3):
    for s in range(5):
        gen = " " + " ".join(words[(p * 5 + s + k) % len(words)] for k in range(1 + (s * 7 + p) % 9))
        print(json.dumps({"prompt_id": "p%d" % p, "prompt": "Say %d words." % (p + s), "generation": gen, "seed": s}))
PYEOF
start_serve rm "$RM"
S="http://127.0.0.1:$(cat "$TMP/rm.port")"
"$SR" -m "$RM" -t 1 "$TMP/c.jsonl" > "$TMP/local.jsonl" 2>/dev/null
expect_status "score-reward --server against serve runs" 0 "$SR" --server "$S" -m "$RM" "$TMP/c.jsonl"
check "the server's rewards are -m's, byte for byte" cmp "$TMP/local.jsonl" "$TMP/out"
check "  ... and they differ from record to record (the test can fail)" $PY -c "
import json
v = {json.loads(l)['reward'] for l in open('$TMP/out')}
assert len(v) >= 12, v"
"$SR" -m "$RM" --chat-template none --ctx 6 "$TMP/c.jsonl" > "$TMP/local2.jsonl" 2>/dev/null
"$SR" --server "$S" --server "$S" --max-inflight 3 --tokenizer "$RM" --chat-template none --ctx 6 "$TMP/c.jsonl" > "$TMP/remote2.jsonl" 2>/dev/null
check "no template, the last 6 tokens, two servers: -m's rewards" cmp "$TMP/local2.jsonl" "$TMP/remote2.jsonl"

check "/classify: vLLM's layout; the sigmoid of the raw output (Python) unless use_activation is false" $PY - "$S" "$TMP/local2.jsonl" <<'PYEOF'
import json, math, sys, urllib.request
url = sys.argv[1] + "/classify"
def post(body):
    return json.load(urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode()), timeout=30))
raw = post({"input": ["Hello world", "Hello, world!"], "use_activation": False})
act = post({"model": raw["model"], "input": ["Hello world", "Hello, world!"]})
assert raw["object"] == "list" and raw["id"].startswith("classify-") and len(raw["data"]) == 2, raw
for r, a in zip(raw["data"], act["data"]):
    assert r["num_classes"] == 1 and r["label"] == "LABEL_0" and len(r["probs"]) == 1, r
    assert abs(a["probs"][0] - 1 / (1 + math.exp(-r["probs"][0]))) < 1e-15, (a, r)
assert raw["usage"]["prompt_tokens"] == raw["usage"]["total_tokens"] > 4, raw["usage"]
ids = post({"input": [1, 15043, 3186], "activation": False})
assert ids["data"][0]["probs"] == raw["data"][0]["probs"], (ids, raw)   # "Hello world" is BOS 15043 3186
PYEOF
check "/classify: bad input is a 400 naming the field" $PY - "$S" <<'PYEOF'
import json, sys, urllib.request, urllib.error
for body, word in (({"input": []}, "input"), ({"input": [[1, 99999999]]}, "token"), ({"input": "x", "use_activation": 3}, "use_activation")):
    try:
        urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/classify", json.dumps(body).encode()), timeout=30)
        raise SystemExit("accepted %r" % body)
    except urllib.error.HTTPError as e:
        assert e.code == 400 and word in json.load(e)["error"]["message"], body
PYEOF
start_serve tiny "$TINY"
T="http://127.0.0.1:$(cat "$TMP/tiny.port")"
expect_status "a server whose model has no classification head answers 400" 1 "$SR" --server "$T" -m "$RM" "$TMP/c.jsonl"
expect_stderr "  ... saying so" "no classification head"
expect_status "llama-server (no reward endpoint) is refused" 2 "$SR" --server "$S" --server-kind llama-server -m "$RM" "$TMP/c.jsonl"
expect_stderr "  ... saying why" "llama-server has no classify/reward endpoint"
expect_status "--server without a tokenizer is a usage error" 2 "$SR" --server "$S" "$TMP/c.jsonl"
