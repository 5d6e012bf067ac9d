# server_detect.sh — without --server-kind the clients ask the server what
# it is: /v1/models owned_by ("vllm", "sglang", "llamacpp"; serve's "asn"
# object), else the kind's own endpoint (vLLM's /version, SGLang's
# /get_model_info, llama-server's /props), and say what they found; a
# server that names no kind is an error asking for --server-kind.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/examples/models/demo-base.gguf"
PY=/usr/bin/python3
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
printf '{"id": "p1", "prompt": "And it came to pass"}\n' > "$TMP/p.jsonl"
cat > "$TMP/h.yaml" <<'YAML'
sampling_pipelines:
  - name: t
    processors:
      - {name: llama_temp, params: {temp: 0.8}}
  - name: g
    processors:
      - {name: greedy, params: {}}
YAML
"$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" -n 8 --min-new-tokens 0 --seeds 0-3 -t 1 "$TMP/p.jsonl" > "$TMP/any.jsonl" 2>/dev/null
stub() { # stub NAME ARGS...: URL in $S
    name=$1; shift
    rm -f "$TMP/$name.port"
    timeout 60 $PY "$ROOT/tests/scripts/stub_server.py" "$TMP/any.jsonl" "$TMP/$name.port" --fixed "$@" > /dev/null 2>&1 &
    PIDS="$PIDS $!"
    for i in $(seq 200); do [ -s "$TMP/$name.port" ] && break; sleep 0.05; done
    S="http://127.0.0.1:$(cat "$TMP/$name.port")"
}
GEN="-m $M -n 8 --min-new-tokens 0 --seeds 0-3 $TMP/p.jsonl"
for k in vllm sglang llama-server; do
    only=$([ $k = llama-server ] && echo t || echo g)
    stub $k --kind $k
    expect_status "$k: detected without --server-kind" 0 "$BIN/gen-candidates" --server "$S" -H "$TMP/h.yaml" --only $only $GEN
    expect_stderr "  ... from /v1/models owned_by" "is $k \\(detected: /v1/models owned_by"
    stub $k-bare --kind $k --no-owner
    expect_status "$k: no owned_by, detected from its own endpoint" 0 "$BIN/gen-candidates" --server "$S" -H "$TMP/h.yaml" --only $only $GEN
    expect_stderr "  ... naming it" "is $k \\(detected: GET /(version|get_model_info|props)"
done
expect_status "llama-server: its 2 slots bound the requests in flight" 0 "$BIN/gen-candidates" --server "$S" -H "$TMP/h.yaml" --only t $GEN
expect_stderr "  ... and it says so" "2 slots, at most 2 requests in flight there"
stub asn --kind asn
expect_status "serve (the asn object in /v1/models): detected" 0 "$BIN/gen-candidates" --server "$S" -H "$TMP/h.yaml" $GEN
expect_stderr "  ... as asn" 'is asn \(detected: /v1/models has "asn"\)'
# a server naming no kind: a stub of vLLM without owned_by and without /version
cat > "$TMP/anon.py" <<'PYEOF'
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "someone"}]}
                          if self.path == "/v1/models" else {"error": {"message": "no", "code": 404}}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PYEOF
# (its stderr to a file: a traceback written while a check prints would
# break that check's "ok" line)
timeout 60 $PY "$TMP/anon.py" "$TMP/anon.port" > /dev/null 2> "$TMP/anon.log" & PIDS="$PIDS $!"
for i in $(seq 200); do [ -s "$TMP/anon.port" ] && break; sleep 0.05; done
expect_status "a server naming no kind: an error" 1 "$BIN/gen-candidates" --server "http://127.0.0.1:$(cat "$TMP/anon.port")" -H "$TMP/h.yaml" $GEN
expect_stderr "  ... asking for --server-kind" "cannot tell the server's kind .*give --server-kind"
"$BIN/gen-candidates" --server "http://127.0.0.1:$(cat "$TMP/anon.port")" --server-kind llama-server \
    -H "$TMP/h.yaml" --only t $GEN --retries 0 > /dev/null 2> "$TMP/err"
expect_stderr "  ... which --server-kind settles (the run goes on to POST /completion)" '/completion: request 0 failed'
