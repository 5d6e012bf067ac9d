# serve.sh — serve on loopback: a seeded request gives gen-candidates'
# tokens (alone, under load, streamed, by chat), the bearer key, the bounded
# queue (503 + Retry-After), and malformed or hostile requests answered with
# 4xx JSON errors while the server stays up.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
H="$ROOT/tests/data/reference-configs/custom_logit_processors_test.yaml"
PY=/usr/bin/python3
PIDS=""
# servers run under timeout; a kill reaches the server itself through its parent's id
kill_child() { pkill -9 -P "$1" 2>/dev/null; kill -9 "$1" 2>/dev/null; }
trap 'for p in $PIDS; do kill_child $p; done; rm -rf "$TMP"' EXIT

start_serve() { # start_serve NAME ARGS...: port in $TMP/NAME.port
    name=$1; shift
    rm -f "$TMP/$name.port"
    timeout 120 "$BIN/serve" -m "$M" --port 0 --port-file "$TMP/$name.port" -t 1 "$@" > /dev/null 2> "$TMP/$name.log" &
    PIDS="$PIDS $!"
    for i in $(seq 200); do [ -s "$TMP/$name.port" ] && break; sleep 0.05; done
}

start_serve a -H "$H" --api-key sekret --queue 4 --max-tokens 64 --max-body 4096
PORT=$(cat "$TMP/a.port")
export URL="http://127.0.0.1:$PORT"

# the reference: gen-candidates with the engine in-process
printf '%s\n' '{"prompt": "The capital of France is"}' '{"prompt": "Once upon a time", "system": "Be brief."}' > "$TMP/p.jsonl"
"$BIN/gen-candidates" -m "$M" -H "$H" -n 24 --min-new-tokens 3 --seeds 0-1 --no-system "$TMP/p.jsonl" > "$TMP/ref.jsonl" 2>/dev/null

cat > "$TMP/client.py" <<'PYEOF'
import json, os, sys, urllib.request, urllib.error
URL = os.environ["URL"]
def call(path, body=None, key="sekret", raw=None, method=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(URL + path, data=data, method=method)
    if key:
        req.add_header("Authorization", "Bearer " + key)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)
PYEOF

check "a seeded request returns gen-candidates' tokens and text (completions, token-id and text prompts)" $PY - "$TMP/ref.jsonl" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["system"] is not None:
        continue
    body = {"prompt": r["prompt"], "max_tokens": 24, "min_tokens": 3, "seed": r["seed"],
            "asn_heuristic": r["heuristic"]["name"], "return_token_ids": True}
    st, out, _ = call("/v1/completions", body)
    assert st == 200, (st, out)
    c = json.loads(out)["choices"][0]
    assert c["token_ids"] == r["tokens"], (c["token_ids"], r["tokens"])
    assert c["text"] == r["generation"] and c["asn_finish"] == r["finish"]
    # the heuristic by definition, the same
    body["asn_heuristic"] = {k: r["heuristic"][k] for k in ("name", "id", "processors")}
    st, out, _ = call("/v1/completions", body)
    assert json.loads(out)["choices"][0]["token_ids"] == r["tokens"]
PYEOF

check "one request after another for one prompt: one prefill, every later request starts from the kept one" $PY - "$TMP/ref.jsonl" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
n = sum(1 for line in open(sys.argv[1]) if json.loads(line)["system"] is None)
st, out, _ = call("/v1/models", method="GET")
a = json.loads(out)["data"][0]["asn"]
# the check above sent 2 requests per record without a system text, all of one prompt
assert (a["prompts_prefilled"], a["prompts_reused"]) == (1, 2 * n - 1), (a, n)
PYEOF

check "chat: system and user message through the template, the record's prompt id, same tokens" $PY - "$TMP/ref.jsonl" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    msgs = ([{"role": "system", "content": r["system"]}] if r["system"] else []) + [{"role": "user", "content": r["prompt"]}]
    st, out, _ = call("/v1/chat/completions", {"messages": msgs, "max_tokens": 24, "min_tokens": 3, "seed": r["seed"],
                                               "asn_heuristic": r["heuristic"]["name"], "return_token_ids": True})
    assert st == 200, out
    o = json.loads(out)
    assert o["object"] == "chat.completion" and o["choices"][0]["message"]["role"] == "assistant"
    assert o["choices"][0]["token_ids"] == r["tokens"] and o["choices"][0]["message"]["content"] == r["generation"]
    n += 1
assert n == 20, n
PYEOF

check "the same seeded request under load (6 other sequences in flight) returns the same tokens" $PY - "$TMP/ref.jsonl" <<'PYEOF'
import json, sys, threading
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
r = json.loads(open(sys.argv[1]).readline())
body = {"prompt": r["prompt"], "max_tokens": 24, "min_tokens": 3, "seed": r["seed"], "asn_heuristic": r["heuristic"]["name"],
        "return_token_ids": True}
outs = []
def other(i):
    call("/v1/completions", {"prompt": "noise %d" % i, "max_tokens": 40, "n": 2, "seed": i, "temperature": 0.9})
def mine():
    outs.append(json.loads(call("/v1/completions", body)[1])["choices"][0]["token_ids"])
ts = [threading.Thread(target=other, args=(i,)) for i in range(3)] + [threading.Thread(target=mine) for _ in range(1)]
for t in ts: t.start()
for t in ts: t.join()
assert outs == [r["tokens"]], outs
PYEOF

check "streaming: deltas add up to the whole text, token ids to the tokens, then [DONE]" $PY - "$TMP/ref.jsonl" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
r = json.loads(open(sys.argv[1]).readlines()[3])
body = {"prompt": r["prompt"], "max_tokens": 24, "min_tokens": 3, "seed": r["seed"], "asn_heuristic": r["heuristic"]["name"],
        "return_token_ids": True, "stream": True, "stop": ["zzzz"]}
st, out, hd = call("/v1/completions", body)
assert st == 200 and hd["Content-Type"].startswith("text/event-stream"), (st, hd)
events = [e for e in out.decode().split("\n\n") if e]
assert events[-1] == "data: [DONE]", events[-1]
chunks = [json.loads(e[len("data: "):]) for e in events[:-1]]
text = "".join(c["choices"][0]["text"] for c in chunks)
ids = sum((c["choices"][0]["token_ids"] for c in chunks), [])
assert ids == r["tokens"] and text == r["generation"], (ids, text)
assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")
PYEOF

check "logprobs: log-softmax of the model's row, top alternatives sorted, the drawn token's among them when greedy" $PY - "$TMP/ref.jsonl" <<'PYEOF'
import json, math, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
st, out, _ = call("/v1/completions", {"prompt": "Hello", "max_tokens": 5, "temperature": 0, "logprobs": 3, "return_token_ids": True})
c = json.loads(out)["choices"][0]
lp = c["logprobs"]
assert len(lp["token_logprobs"]) == 5 and len(lp["top_logprobs"]) == 5
for chosen, tops in zip(lp["token_logprobs"], lp["top_logprobs"]):
    vals = list(tops.values())
    assert len(vals) <= 3 and vals == sorted(vals, reverse=True)
    assert abs(chosen - vals[0]) < 1e-6    # greedy: the most likely token
    assert sum(math.exp(v) for v in vals) <= 1 + 1e-5 and all(v <= 0 for v in vals)
PYEOF

check "n choices draw with seeds seed..seed+n-1" $PY - "$TMP/ref.jsonl" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
rs = [json.loads(l) for l in open(sys.argv[1])][:2]   # seeds 0 and 1 of one prompt and heuristic
assert rs[0]["seed"] == 0 and rs[1]["seed"] == 1 and rs[0]["heuristic"]["id"] == rs[1]["heuristic"]["id"]
st, out, _ = call("/v1/completions", {"prompt": rs[0]["prompt"], "max_tokens": 24, "min_tokens": 3, "seed": 0, "n": 2,
                                      "asn_heuristic": rs[0]["heuristic"]["name"], "return_token_ids": True})
ch = json.loads(out)["choices"]
assert [c["token_ids"] for c in ch] == [rs[0]["tokens"], rs[1]["tokens"]]
PYEOF

check "the bearer key: 401 without it, /health open; /v1/models gives the GGUF's SHA-256" $PY - "$TMP/ref.jsonl" "$M" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
st, out, _ = call("/v1/models", key=None); assert st == 401 and json.loads(out)["error"]["code"] == 401
st, out, _ = call("/v1/models", key="wrong"); assert st == 401
st, out, _ = call("/health", key=None); assert st == 200 and json.loads(out)["status"] == "ok"
st, out, _ = call("/v1/models"); m = json.loads(out)["data"][0]
import hashlib
assert m["asn"]["sha256"] == hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
assert m["asn"]["batch"] == 16 and m["asn"]["queue"] == 4, m["asn"]  # the default batch, --queue 4
PYEOF
expect_status "a client keeps twice serve's batch in flight, at most its queue" 0 "$BIN/gen-candidates" --server "$URL" \
    --api-key sekret --tokenizer "$M" -H "$H" -n 4 --min-new-tokens 1 --seeds 0 --no-system "$TMP/p.jsonl"
expect_stderr "  ... and says so" "16 in a batch, at most 4 requests in flight there"

check "malformed and hostile requests: 4xx JSON errors naming the field; the server stays up" $PY - "$TMP/ref.jsonl" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
cases = [
    ("/v1/completions", b"{not json", 400, "not JSON"),
    ("/v1/completions", b"[1,2]", 400, "JSON object"),
    ("/v1/completions", json.dumps({"prompt": "x", "max_tokens": "many"}).encode(), 400, "max_tokens"),
    ("/v1/completions", json.dumps({"prompt": "x", "max_tokens": 65}).encode(), 400, "max_tokens"),
    ("/v1/completions", json.dumps({"prompt": "x", "max_tokens": 0}).encode(), 400, "max_tokens"),
    ("/v1/completions", json.dumps({"prompt": [1, 99999999]}).encode(), 400, "token id"),
    ("/v1/completions", json.dumps({"prompt": []}).encode(), 400, "prompt"),
    ("/v1/completions", json.dumps({"prompt": "x", "temperature": -1}).encode(), 400, "temperature"),
    ("/v1/completions", json.dumps({"prompt": "x", "top_p": 2}).encode(), 400, "top_p"),
    ("/v1/completions", json.dumps({"prompt": "x", "seed": -3}).encode(), 400, "seed"),
    ("/v1/completions", json.dumps({"prompt": "x", "n": 1000}).encode(), 400, "\"n\""),
    ("/v1/completions", json.dumps({"prompt": "x", "stop": [1]}).encode(), 400, "stop"),
    ("/v1/completions", json.dumps({"prompt": "x", "asn_heuristic": "nope"}).encode(), 400, "nope"),
    ("/v1/completions", json.dumps({"prompt": "x", "asn_heuristic": {"name": "h", "processors": [{"name": "top_k", "params": {"top_k": -5}}]}}).encode(), 400, "top_k"),
    ("/v1/completions", json.dumps({"prompt": "x", "asn_heuristic": {"name": "h", "processors": [{"name": "learned", "params": {"path": "/etc/passwd"}}]}}).encode(), 400, "learned"),
    ("/v1/completions", json.dumps({"prompt": "x", "asn_heuristic": {"name": "h", "id": "000000000000", "processors": []}}).encode(), 400, "id"),
    ("/v1/completions", json.dumps({"prompt": "x", "model": "other"}).encode(), 404, "other"),
    ("/v1/completions", json.dumps({"prompt": "x" * 5000}).encode(), 413, "limit"),
    ("/v1/completions", json.dumps({"prompt": list(range(2, 250)), "max_tokens": 64}).encode(), 400, "context"),
    ("/v1/chat/completions", json.dumps({"messages": [{"role": "user"}]}).encode(), 400, "messages"),
    ("/v1/chat/completions", json.dumps({"messages": "hi"}).encode(), 400, "messages"),
    ("/v1/nowhere", b"{}", 404, "nowhere"),
    ("/v1/completions", json.dumps({"prompt": "a\u0000b"}).encode(), 400, "NUL"),
    ("/v1/completions", b'{"prompt": "x", "prompt": "y"}', 400, "duplicate"),
]
for path, raw, want, word in cases:
    st, out, _ = call(path, raw=raw)
    o = json.loads(out)
    assert st == want, (raw[:60], st, out)
    if want != 200:
        assert o["error"]["code"] == want and word in o["error"]["message"], (raw[:60], o)
st, _, _ = call("/v1/completions", method="GET"); assert st == 405
st, out, _ = call("/health", key=None); assert st == 200
PYEOF

check "a full queue answers 503 with Retry-After; the server goes on" $PY - "$TMP/ref.jsonl" <<'PYEOF'
import json, sys, threading, time
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0]); from client import call
res = []
def long():
    res.append(call("/v1/completions", {"prompt": "long one", "max_tokens": 64, "n": 1, "seed": 1, "min_tokens": 64})[0])
ts = [threading.Thread(target=long) for _ in range(4)]
for t in ts: t.start()
for _ in range(400):
    if json.loads(call("/health", key=None)[1])["accepted"] >= 4: break
    time.sleep(0.005)
st, out, hd = call("/v1/completions", {"prompt": "one more", "max_tokens": 2})
for t in ts: t.join()
assert st == 503 and hd.get("Retry-After") == "1" and json.loads(out)["error"]["code"] == 503, (st, hd)
assert res == [200] * 4, res
st, _, _ = call("/v1/completions", {"prompt": "after", "max_tokens": 2}); assert st == 200
PYEOF

check "a streaming client that goes away does not stop the server" $PY - <<'PYEOF'
import os, socket, json
port = int(os.environ["URL"].rsplit(":", 1)[1])
s = socket.create_connection(("127.0.0.1", port))
body = json.dumps({"prompt": "bye", "max_tokens": 64, "min_tokens": 64, "stream": True}).encode()
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekret\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
s.recv(100); s.close()
import urllib.request
assert json.loads(urllib.request.urlopen(os.environ["URL"] + "/health", timeout=10).read())["status"] == "ok"
PYEOF

# stopped while requests wait (whole and streamed), serve ends them (503 or
# a closed stream) and exits 0 at once: one HTTP thread polls every
# connection, and a waiting one is suspended until resumed at the stop
start_serve c --queue 8 --ctx 4096
SPID=$(pgrep -P "$(echo $PIDS | awk '{print $NF}')")
check "stopped with requests waiting and streaming, serve answers them and exits 0 at once" $PY - "$TMP/c.port" "$SPID" <<'PYEOF'
import http.client, json, os, signal, sys, threading, time, urllib.request, urllib.error
url = "http://127.0.0.1:%d" % int(open(sys.argv[1]).read()); pid = int(sys.argv[2])
res = []
def one(stream):
    body = json.dumps({"prompt": "on and on", "max_tokens": 4000, "min_tokens": 4000, "stream": stream}).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url + "/v1/completions", data=body), timeout=30) as r:
            d = r.read()
            res.append("stream" if stream and r.status == 200 else r.status)
    except urllib.error.HTTPError as e:
        res.append(e.code)
    except (ConnectionError, urllib.error.URLError, http.client.HTTPException):
        res.append("closed")
ts = [threading.Thread(target=one, args=(i < 2,)) for i in range(5)]
for t in ts: t.start()
for _ in range(400):
    if json.loads(urllib.request.urlopen(url + "/health", timeout=10).read())["accepted"] >= 5: break
    time.sleep(0.01)
else:
    sys.exit("the requests did not all start")
t0 = time.time(); os.kill(pid, signal.SIGTERM)
for t in ts: t.join(20)
assert all(not t.is_alive() for t in ts) and len(res) == 5 and set(res) <= {503, "stream", "closed"}, res
for _ in range(500):
    try: os.kill(pid, 0)
    except ProcessLookupError: break
    time.sleep(0.01)
else:
    sys.exit("serve still runs 5 s after SIGTERM")
PYEOF
pkill -TERM -P "$(echo $PIDS | awk '{print $NF}')" 2>/dev/null # (when the check failed before its stop)
wait $(echo $PIDS | awk '{print $NF}'); st=$?
expect_status "serve exits 0 after a stop with requests in flight" 0 sh -c "exit $st"
