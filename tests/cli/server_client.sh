# server_client.sh — gen-candidates --server: the demo's generation against
# serve on loopback gives the records of --model byte for byte, with two
# servers, with a server killed (kill -9) and restarted mid-run, with the
# client killed and resumed, and against a stub that answers 503s, slowly or
# not at all; heuristics a server kind cannot express are refused up front.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/examples/models/demo-base.gguf"
PY=/usr/bin/python3
PIDS=""
# servers run under timeout; a kill reaches the server itself through its parent's id
kill_child() { pkill -9 -P "$1" 2>/dev/null; kill -9 "$1" 2>/dev/null; }
trap 'for p in $PIDS; do kill_child $p; done; rm -rf "$TMP"' EXIT

start_serve() { # start_serve NAME [ARGS...]: port in $TMP/NAME.port, pid in $TMP/NAME.pid
    name=$1; shift
    rm -f "$TMP/$name.port"
    timeout 120 "$BIN/serve" -m "$M" --port-file "$TMP/$name.port" -t 1 "$@" > /dev/null 2> "$TMP/$name.log" &
    echo $! > "$TMP/$name.pid"
    PIDS="$PIDS $!"
    for i in $(seq 200); do [ -s "$TMP/$name.port" ] && break; sleep 0.05; done
}
wait_port() { for i in $(seq 200); do [ -s "$1" ] && break; sleep 0.05; done; }

# the demo's heuristics (a third of the grid) and prompts
"$BIN/gen-heuristics" --grid "$ROOT/configs/heuristics/demo-grid.yaml" --family none -o "$TMP/all.yaml"
$PY - "$TMP/all.yaml" "$TMP/h.yaml" <<'PYEOF'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
d["sampling_pipelines"] = d["sampling_pipelines"][::3]
yaml.safe_dump(d, open(sys.argv[2], "w"))
PYEOF
P="$ROOT/examples/prompts/demo.jsonl"
GEN="-H $TMP/h.yaml --seeds 0-1 -n 24 --min-new-tokens 4 --stop ."
"$BIN/gen-candidates" -m "$M" $GEN -t 1 "$P" > "$TMP/ref.jsonl" 2>/dev/null

start_serve a --port 0
A="http://127.0.0.1:$(cat "$TMP/a.port")"
expect_status "gen-candidates --server against serve runs" 0 "$BIN/gen-candidates" --server "$A" --tokenizer "$M" $GEN "$P"
check "--server gives --model's records, byte for byte" cmp "$TMP/ref.jsonl" "$TMP/out"
"$BIN/verify" --expected-seeds 2 -H "$TMP/h.yaml" -m "$M" "$TMP/out" > /dev/null 2> "$TMP/verify.err"
check "verify accepts the records (tokens, texts and digest against the model)" test $? -eq 0

start_serve b --port 0
B="http://127.0.0.1:$(cat "$TMP/b.port")"
"$BIN/gen-candidates" --server "$A" --server "$B" -m "$M" --max-inflight 8 $GEN "$P" > "$TMP/two.jsonl" 2>/dev/null
check "two servers share the load: same records" cmp "$TMP/ref.jsonl" "$TMP/two.jsonl"

# a server killed mid-run: its requests go to the other; restarted, it comes back
"$BIN/gen-candidates" --server "$A" --server "$B" -m "$M" --max-inflight 4 $GEN -o "$TMP/killed.jsonl" "$P" 2> "$TMP/killed.err" &
gpid=$!
sleep 0.4; kill_child "$(cat "$TMP/b.pid")"
wait $gpid; rc=$?
check "a server killed (kill -9) mid-run: the run ends (status $rc) with the same records" cmp "$TMP/ref.jsonl" "$TMP/killed.jsonl"
check "  ... the killed server was gone" $PY -c "
import urllib.request
try: urllib.request.urlopen('$B/health', timeout=2); raise SystemExit('still up')
except OSError: pass"

# the only server killed, then restarted on the same port: the client waits and goes on
PA=$(cat "$TMP/a.port")
"$BIN/gen-candidates" --server "$A" -m "$M" --max-inflight 4 --retries 20 $GEN -o "$TMP/restart.jsonl" "$P" 2> "$TMP/restart.err" &
gpid=$!
sleep 0.4; kill_child "$(cat "$TMP/a.pid")"; sleep 0.5
start_serve a --port "$PA"
wait $gpid
check "the only server killed and restarted: same records" cmp "$TMP/ref.jsonl" "$TMP/restart.jsonl"

# the client killed and resumed
rm -f "$TMP/res.jsonl"
for d in 0.3 0.5; do
    "$BIN/gen-candidates" --server "$A" -m "$M" --max-inflight 2 $GEN -o "$TMP/res.jsonl" --resume "$P" 2>/dev/null &
    gpid=$!; sleep $d; kill -9 $gpid 2>/dev/null; wait $gpid 2>/dev/null
done
"$BIN/gen-candidates" --server "$A" -m "$M" $GEN -o "$TMP/res.jsonl" --resume "$P" 2>/dev/null
check "gen-candidates --server killed twice and resumed: same records" cmp "$TMP/ref.jsonl" "$TMP/res.jsonl"

# a stub answering from the recorded candidates, with faults
stub() { # stub NAME ARGS...
    name=$1; shift
    rm -f "$TMP/$name.port"
    timeout 120 $PY "$ROOT/tests/scripts/stub_server.py" "$TMP/ref.jsonl" "$TMP/$name.port" "$@" > /dev/null 2> "$TMP/$name.log" &
    PIDS="$PIDS $!"
    wait_port "$TMP/$name.port"
}
stub s1 --fail-every 3 --slow-every 5 --slow-s 0.3 --drop-every 7
S1="http://127.0.0.1:$(cat "$TMP/s1.port")"
"$BIN/gen-candidates" --server "$S1" -m "$M" --max-inflight 16 --timeout 5 $GEN --progress "$P" > "$TMP/stub.jsonl" 2> "$TMP/stub.err"
check "a server answering 503s, slowly and dropping connections: same records" cmp "$TMP/ref.jsonl" "$TMP/stub.jsonl"
check "the retries were counted" grep -Eq "\(([1-9][0-9]*) retried\)" "$TMP/stub.err"
stub s2 --slow-every 2 --slow-s 3
S2="http://127.0.0.1:$(cat "$TMP/s2.port")"
"$BIN/gen-candidates" --server "$S2" -m "$M" --max-inflight 16 --timeout 1 --retries 2 $GEN "$P" > "$TMP/slow.jsonl" 2> "$TMP/slow.err"
check "requests slower than --timeout are retried and the run gives up after --retries" test $? -eq 1
check "  ... naming the server and the last error" grep -q "failed 3 times, last: Timeout" "$TMP/slow.err"
stub s3 --status-every 4:400
S3="http://127.0.0.1:$(cat "$TMP/s3.port")"
expect_status "a 4xx answer ends the run" 1 "$BIN/gen-candidates" --server "$S3" -m "$M" $GEN "$P"
expect_stderr "  ... with the server's message" "HTTP 400: injected status 400"

# what a kind cannot express is refused before anything runs
cat > "$TMP/typ.yaml" <<'EOF'
sampling_pipelines:
  - name: top_p then temp
    processors:
      - {name: top_p, params: {top_p: 0.9}}
      - {name: temperature, params: {temperature: 0.7}}
  - name: typical
    processors:
      - {name: typical, params: {mass: 0.9}}
EOF
expect_status "vllm: a processor order the server does not follow is refused" 1 "$BIN/gen-candidates" --server "$S3" --server-kind vllm -m "$M" -H "$TMP/typ.yaml" --only "top_p then temp" "$P"
expect_stderr "  ... naming heuristic and processor" 'heuristic "top_p then temp": vllm applies processor 2 \(temperature\) before'
expect_status "vllm: typical is refused" 1 "$BIN/gen-candidates" --server "$S3" --server-kind vllm -m "$M" -H "$TMP/typ.yaml" --only typical "$P"
expect_stderr "  ... naming heuristic and processor" 'heuristic "typical": vllm cannot express processor 1 \(typical\)'
expect_status "llama-server: --min-new-tokens is refused" 1 "$BIN/gen-candidates" --server "$S3" --server-kind llama-server -m "$M" -H "$TMP/h.yaml" --min-new-tokens 3 "$P"
expect_stderr "  ... naming the setting" "llama-server cannot express --min-new-tokens 3"
expect_status "--server without a tokenizer is a usage error" 2 "$BIN/gen-candidates" --server "$S3" -H "$TMP/h.yaml" "$P"
expect_status "an unknown --server-kind is a usage error" 2 "$BIN/gen-candidates" --server "$S3" --server-kind tgi -m "$M" -H "$TMP/h.yaml" "$P"
expect_status "no server listening: the run fails after its retries" 1 "$BIN/gen-candidates" --server http://127.0.0.1:1 --retries 1 -m "$M" -H "$TMP/h.yaml" "$P"
