#!/bin/sh
# Records llama-server's answers to asn's clients as the fixtures of
# tests/data/servers/llama-server/ (see the README there):
#   scripts/record-llama-server.sh PATH/TO/llama-server
# Serves examples/models/demo-base.gguf on 127.0.0.1 (4 slots, one thread),
# puts tests/scripts/record_proxy.py in front of it, and runs through the
# proxy: gen-candidates --server (the heuristics of heuristics.yaml, two
# prompts, two seeds, one request at a time: llama-server's tokens depend
# on what else its batch holds), rank-bt --judge-server (refused: no prompt
# log-probabilities), and the requests of misc.jsonl's comments. Needs make
# to have built bin/.
set -eu
LS=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/tests/data/servers/llama-server
BIN=$ROOT/bin
TMP=$(mktemp -d)
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# relative model path: the answers name "demo-base.gguf", no directory of this machine
(cd "$ROOT/examples/models" && exec timeout 600 "$LS" -m demo-base.gguf --host 127.0.0.1 --port "$PORT" \
    -t 1 -c 1024 -np 4 > "$TMP/server.log" 2>&1) &
PIDS="$PIDS $!"
for i in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 0.2; done
record() { # record LOG: proxy in front of the server, its URL in $U
    rm -f "$TMP/proxy.port"
    timeout 600 python3 "$ROOT/tests/scripts/record_proxy.py" "http://127.0.0.1:$PORT" "$TMP/proxy.port" "$1" &
    PIDS="$PIDS $!"
    for i in $(seq 100); do [ -s "$TMP/proxy.port" ] && break; sleep 0.05; done
    U="http://127.0.0.1:$(cat "$TMP/proxy.port")"
}
M="$ROOT/examples/models/demo-base.gguf"
head -2 "$ROOT/examples/prompts/demo.jsonl" > "$OUT/prompts.jsonl"
GEN="-H $OUT/heuristics.yaml --seeds 0-1 -n 16 --min-new-tokens 0 --stop ."

rm -f "$OUT/generate.jsonl"
record "$OUT/generate.jsonl"
"$BIN/gen-candidates" --server "$U" --tokenizer "$M" --max-inflight 1 $GEN "$OUT/prompts.jsonl" > "$OUT/records.jsonl"

rm -f "$OUT/rank.jsonl"
record "$OUT/rank.jsonl"
if "$BIN/rank-bt" --judge pairwise --judge-server "$U" --tokenizer "$M" "$OUT/records.jsonl" > /dev/null 2> "$TMP/rank.err"; then
    echo "rank-bt --judge-server was expected to refuse llama-server" >&2; exit 1
fi
cat "$TMP/rank.err" >&2

rm -f "$OUT/misc.jsonl"
record "$OUT/misc.jsonl"
python3 - "$U" <<'EOF'
import json, sys, urllib.request, urllib.error
u = sys.argv[1]
def call(path, body=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(u + path, data=data, headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req).read()
    except urllib.error.HTTPError as e:
        e.read()
ids = [422, 365, 883, 278, 749]  # "And it came to pass", as llama-server's /tokenize makes it
for p in ["/health", "/props", "/v1/models", "/get_model_info", "/version"]:
    call(p)
# the sampled tokens' log-probabilities and the top 3 of each step (n_probs)
call("/completion", {"prompt": ids, "n_predict": 4, "seed": 7, "samplers": ["top_k", "temperature"], "top_k": 40,
                     "temperature": 0.8, "return_tokens": True, "n_probs": 3})
# OpenAI's legacy completions with a token-id prompt and logprobs
call("/v1/completions", {"model": "demo-base.gguf", "prompt": ids, "max_tokens": 4, "seed": 7,
                         "temperature": 0, "logprobs": 2, "return_tokens": True})
# errors: prompt echo (what rank-bt's judges need), an id outside the vocabulary, bad JSON, a bad sampler list
call("/v1/completions", {"prompt": ids, "max_tokens": 1, "echo": True, "logprobs": 1})
call("/completion", {"prompt": [999999], "n_predict": 1})
call("/completion", raw=b"{\"prompt\": [1, 2")
call("/completion", {"prompt": ids, "n_predict": 2, "samplers": 5})
EOF
echo "recorded: $(wc -l < "$OUT/generate.jsonl") + $(wc -l < "$OUT/rank.jsonl") + $(wc -l < "$OUT/misc.jsonl") exchanges in $OUT"
