# llama_server_replay.sh — the clients against llama-server's recorded
# answers (tests/data/servers/llama-server/, recorded from a live
# llama-server by scripts/record-llama-server.sh; see the README there):
# the kind is detected (owned_by, else /props), at most its 4 slots are in
# flight, the records are those of the live run, each text is the one
# llama-server detokenized, llama-server read back every sampling field
# asn sent, and rank-bt's judges are refused (no prompt log-probabilities).
. "$ASN_ROOT/tests/lib/cli.sh"
F="$ROOT/tests/data/servers/llama-server"
M="$ROOT/examples/models/demo-base.gguf"
PY=/usr/bin/python3
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
replay() { # replay NAME ARGS...: URL in $U
    name=$1; shift
    rm -f "$TMP/$name.port"
    timeout 120 $PY "$ROOT/tests/scripts/replay_server.py" "$F/generate.jsonl" "$TMP/$name.port" "$@" > /dev/null 2>&1 &
    PIDS="$PIDS $!"
    for i in $(seq 200); do [ -s "$TMP/$name.port" ] && break; sleep 0.05; done
    U="http://127.0.0.1:$(cat "$TMP/$name.port")"
}
GEN="-H $F/heuristics.yaml --seeds 0-1 -n 16 --min-new-tokens 0 --stop ."

replay a --max-inflight-file "$TMP/most"
expect_status "gen-candidates --server against llama-server's recorded answers" 0 \
    "$BIN/gen-candidates" --server "$U" --tokenizer "$M" $GEN "$F/prompts.jsonl"
check "the records of the live run, byte for byte" cmp "$F/records.jsonl" "$TMP/out"
expect_stderr "the kind detected from /v1/models owned_by, its slots read from /props" \
    'is llama-server \(detected: /v1/models owned_by "llamacpp"; 4 slots'
check "at most 4 requests (its slots) were in flight, of --max-inflight 64" test "$(cat "$TMP/most")" -le 4

check "each record's text is llama-server's own detokenization of its tokens (content)" $PY - "$F/generate.jsonl" "$TMP/out" <<'EOF'
import json, sys
content = {}
for line in open(sys.argv[1]):
    x = json.loads(line)
    if x["method"] == "POST":
        content[(tuple(x["response"]["tokens"]), x["request"]["seed"])] = x["response"]["content"]
n = 0
for line in open(sys.argv[2]):
    r = json.loads(line)
    c = content[(tuple(r["tokens"]), r["seed"])]
    assert r["generation"] == c, (r["id"], r["generation"], c)
    n += 1
assert n == 28, n
EOF

check "llama-server read back every sampling field asn sent (generation_settings)" $PY - "$F/generate.jsonl" <<'EOF'
import json, sys
names = {"n_predict": "n_predict", "seed": "seed", "samplers": "samplers", "temperature": "temperature",
         "top_k": "top_k", "top_p": "top_p", "min_p": "min_p", "typical_p": "typical_p",
         "top_n_sigma": "top_n_sigma", "xtc_probability": "xtc_probability", "xtc_threshold": "xtc_threshold",
         "repeat_last_n": "repeat_last_n", "repeat_penalty": "repeat_penalty",
         "frequency_penalty": "frequency_penalty", "presence_penalty": "presence_penalty",
         "min_keep": "min_keep", "mirostat": "mirostat", "dynatemp_range": "dynatemp_range",
         "ignore_eos": "ignore_eos", "n_probs": "n_probs", "stop": "stop"}
n = 0
for line in open(sys.argv[1]):
    x = json.loads(line)
    if x["method"] != "POST":
        continue
    req, gs = x["request"], x["response"]["generation_settings"]
    for k, v in req.items():
        if k not in names:
            continue
        got = gs[names[k]]
        if isinstance(v, float):  # llama.cpp keeps them as float32
            assert abs(got - v) <= 1e-6 * max(1, abs(v)), (k, v, got)
        else:
            assert got == v, (k, v, got)
        n += 1
    assert req["samplers"] == gs["samplers"] and gs["grammar"] or "json_schema" not in req
assert n > 28 * 10, n
EOF

replay b --no-owner
"$BIN/gen-candidates" --server "$U" --tokenizer "$M" $GEN "$F/prompts.jsonl" > "$TMP/noowner.jsonl" 2> "$TMP/err"
check "no owned_by in /v1/models: detected from GET /props, same records" cmp "$F/records.jsonl" "$TMP/noowner.jsonl"
expect_stderr "  ... saying so" 'is llama-server \(detected: GET /props'

expect_status "rank-bt --judge-server: llama-server is refused" 1 "$BIN/rank-bt" --judge pairwise --judge-server "$U" \
    --tokenizer "$M" "$F/records.jsonl"
expect_stderr "  ... no prompt log-probabilities" 'llama-server returns no log-probabilities of prompt tokens'
