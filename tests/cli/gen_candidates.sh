# gen_candidates.sh — gen-candidates: record format, determinism whatever
# --batch/--threads/--shard, resumption after SIGKILL, inputs and errors.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
H="$ROOT/tests/data/reference-configs/custom_logit_processors_test.yaml"
P="$ROOT/tests/data/reference-configs/test_prompts.jsonl"
PY=/usr/bin/python3
G() { "$BIN/gen-candidates" -m "$M" -H "$H" -n 16 --min-new-tokens 4 "$@"; }

expect_status "runs" 0 G --seeds 0-2 "$P"
cp "$TMP/out" "$TMP/base"
check "one record per prompt x heuristic x seed, prompts contiguous, canonical order" $PY - "$TMP/base" "$P" <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
prompts = [json.loads(l)["prompt"] for l in open(sys.argv[2])]
assert len(recs) == len(prompts) * 5 * 3, len(recs)
names = ["Test Typical Sampling", "Test Min-P Sampling", "Test Epsilon Sampling", "Test Eta Sampling", "Standard Top-P (for comparison)"]
i = 0
for p in prompts:
    for n in names:
        for s in range(3):
            r = recs[i]; i += 1
            assert r["prompt"] == p and r["heuristic"]["name"] == n and r["seed"] == s
            assert r["id"] == "%s/%s/%d" % (r["prompt_id"], r["heuristic"]["id"], s)
            assert r["n_tokens"] == len(r["tokens"]) and 4 <= r["n_tokens"] <= 16
            assert r["finish"] in ("eos", "length", "stop")
            assert r["settings"]["max_new_tokens"] == 16 and r["settings"]["min_new_tokens"] == 4
PYEOF
check "records validate against schemas/candidate.schema.json" $PY "$ROOT/tests/scripts/validate_schema.py" -q --format jsonl "$ROOT/schemas/candidate.schema.json" "$TMP/base"
check "prompt ids are the first 16 hex of sha256(system 0x1F prompt)" $PY -c "
import json, hashlib
for l in open('$TMP/base'):
    r = json.loads(l)
    assert r['prompt_id'] == hashlib.sha256(b'\x1f' + r['prompt'].encode()).hexdigest()[:16]"
G --seeds 0-2 "$P" > "$TMP/again" 2>/dev/null
check "same command, byte-identical output" cmp "$TMP/base" "$TMP/again"
G --seeds 0-2 -b 1 -t 1 "$P" > "$TMP/b1" 2>/dev/null
check "same output with --batch 1 --threads 1" cmp "$TMP/base" "$TMP/b1"
G --seeds 0-2 -b 7 -t 2 "$P" > "$TMP/b7" 2>/dev/null
check "same output with --batch 7 --threads 2" cmp "$TMP/base" "$TMP/b7"
# every kernel level this CPU can run gives the same bits (ASN_CPU caps the
# level: the integer panels, attention and activation quantization of AVX2
# and AVX-VNNI instead of AVX-512; a level above the CPU's changes nothing)
for level in avx2 avxvnni; do
    ASN_CPU=$level G --seeds 0-2 -b 7 -t 2 "$P" > "$TMP/cpu-$level" 2>/dev/null
    check "same output with ASN_CPU=$level" cmp "$TMP/base" "$TMP/cpu-$level"
done
# each kernel forced by name (ASN_MATMUL_KERNEL: the f32 kernels that fuse
# multiply-adds and every integer kernel, which docs/engine.md promises give
# the bits of one another; a name this CPU cannot run is ignored). The f32
# "base" kernel does not fuse, so it is promised nothing here.
for k in avx2 avx512 avxvnni avx512vnni; do
    ASN_MATMUL_KERNEL=$k G --seeds 0-2 -b 7 -t 2 "$P" > "$TMP/kernel-$k" 2>/dev/null
    check "same output with ASN_MATMUL_KERNEL=$k" cmp "$TMP/base" "$TMP/kernel-$k"
done
G --seeds 2,0-1 "$P" > "$TMP/seedorder" 2>/dev/null
check "a candidate depends on its seed, not on the other seeds" $PY -c "
import json
a = {json.loads(l)['id']: json.loads(l)['tokens'] for l in open('$TMP/base')}
b = {json.loads(l)['id']: json.loads(l)['tokens'] for l in open('$TMP/seedorder')}
assert a == b"
G --seeds 1 --only "Test Eta Sampling" "$P" > "$TMP/one" 2>/dev/null
check "--only and a single seed give the same candidates as the full run" $PY -c "
import json
a = {json.loads(l)['id']: json.loads(l) for l in open('$TMP/base')}
for l in open('$TMP/one'):
    r = json.loads(l); assert a[r['id']] == r, r['id']"
for k in 1 2 3; do G --seeds 0-2 --shard $k/3 "$P" > "$TMP/shard$k" 2>/dev/null; done
check "three shards hold exactly the records of one run" $PY -c "
import json
a = sorted(open('$TMP/base').read().splitlines())
b = sorted(sum((open('$TMP/shard%d' % k).read().splitlines() for k in (1, 2, 3)), []))
assert a == b and all(open('$TMP/shard%d' % k).read() for k in (1, 2))"

# resumption: kill -9 at several points, resume, compare with the full run
# (a whole run takes about 0.25 s here: the kills come at a quarter to a half)
rm -f "$TMP/res.jsonl"
for delay in 0.06 0.12 0.09; do
    # the binary itself in the background (not the shell function), so that kill reaches it
    "$BIN/gen-candidates" -m "$M" -H "$H" -n 16 --min-new-tokens 4 --seeds 0-2 -b 2 -t 1 \
        -o "$TMP/res.jsonl" --resume "$P" 2>/dev/null &
    pid=$!; sleep $delay; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
done
check "killed runs leave no res.jsonl (their records are in res.jsonl.part)" test ! -e "$TMP/res.jsonl"
printf '{"id":"partial' >> "$TMP/res.jsonl.part"   # a torn last line
G --seeds 0-2 -o "$TMP/res.jsonl" --resume "$P" 2>/dev/null
check "killed three times and resumed: byte-identical to one run" cmp "$TMP/base" "$TMP/res.jsonl"
check "... and the .part file is gone" test ! -e "$TMP/res.jsonl.part"
G --seeds 0-2 -o "$TMP/res.jsonl" --resume "$P" 2>/dev/null
check "resuming a finished file changes nothing" cmp "$TMP/base" "$TMP/res.jsonl"

# --skip-from: prompts whose candidates are all indexed are skipped
head -30 "$TMP/base" | "$BIN/index" --db "$TMP/done.db"
G --seeds 0-2 --skip-from "$TMP/done.db" "$P" > "$TMP/rest" 2>/dev/null
check "--skip-from DB generates only the prompts not in the index" $PY -c "
a = open('$TMP/base').read().splitlines(); b = open('$TMP/rest').read().splitlines()
assert b == a[30:], (len(a), len(b))"

# inputs
mkdir -p "$TMP/data"
printf '{"prompt":"Say hello.","dataset":"gsm8k","ground_truth":"42","id":"q1"}\n' > "$TMP/data/a.jsonl"
printf '{"text":"Tell a joke."}\n' > "$TMP/data/b.jsonl"
cat > "$TMP/src.yaml" <<'YEOF'
datasets:
  - name: "math"
    path: "data/a.jsonl"
    prompt_key: "prompt"
    incidence_vector: {check_factual: false, check_ifeval_or_math_or_gsm8k: true, check_diversity: false}
  - name: "jokes"
    path: "data/b.jsonl"
    prompt_key: "text"
    incidence_vector: {check_factual: false, check_ifeval_or_math_or_gsm8k: false, check_diversity: true}
YEOF
expect_status "--sources YAML in the reference format (--sources-paths yaml)" 0 G --seeds 0 --only "Test Eta Sampling" --sources-paths yaml --sources "$TMP/src.yaml"
check "sources: ids, pass-through fields, incidence_vector kept and as checks" $PY - "$TMP/out" <<'PYEOF'
import json, sys
a, b = [json.loads(l) for l in open(sys.argv[1])]
assert a["prompt_id"] == "q1" and a["dataset"] == "gsm8k" and a["ground_truth"] == "42" and a["source"] == "math"
assert a["checks"] == {"diversity": False, "verifiable": True, "factual": False}
assert a["incidence_vector"] == {"check_factual": False, "check_ifeval_or_math_or_gsm8k": True, "check_diversity": False}
assert b["prompt"] == "Tell a joke." and b["checks"]["diversity"] is True and b["incidence_vector"]["check_diversity"] is True
PYEOF
cp "$TMP/out" "$TMP/yaml.out"
# the research pipeline's rule: paths from the working directory
mkdir -p "$TMP/elsewhere"
expect_status "--sources: paths from the working directory by default (not found from elsewhere)" 1 sh -c 'cd "$1" && shift && "$@"' sh "$TMP/elsewhere" "$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0 -n 4 -t 1 --only "Test Eta Sampling" --sources "$TMP/src.yaml"
expect_stderr "... the error names the path as given" 'data/a\.jsonl: No such file'
(cd "$TMP" && "$BIN/gen-candidates" -m "$M" -H "$H" -n 16 --min-new-tokens 4 --seeds 0 --only "Test Eta Sampling" --sources "$TMP/src.yaml" > "$TMP/cwd.out" 2> "$TMP/cwd.err")
check "--sources from the YAML's working directory: the same candidates as --sources-paths yaml" cmp "$TMP/cwd.out" "$TMP/yaml.out"
# a prompt twice, as the research pipeline: generated twice
printf '{"prompt":"Say hello."}\n{"prompt":"Say hello."}\n' > "$TMP/data/dup.jsonl"
printf 'datasets:\n  - {name: d, path: "%s/data/dup.jsonl", prompt_key: prompt, incidence_vector: {check_diversity: true}}\n' "$TMP" > "$TMP/dup.yaml"
expect_status "--sources: a prompt that comes twice is generated twice" 0 G --seeds 0 --only "Test Eta Sampling" --sources "$TMP/dup.yaml"
check "... the second under ID#2" $PY -c "
import json; rs = [json.loads(l) for l in open('$TMP/out')]
assert len(rs) == 2 and rs[1]['prompt_id'] == rs[0]['prompt_id'] + '#2', rs"
expect_stderr "... and a warning says so" 'generated again as'
# stop conditions as token-id sequences
G --seeds 0 --only "Test Eta Sampling" "$TMP/data/a.jsonl" > "$TMP/free.jsonl" 2> /dev/null
ids=$($PY -c "
import json; t = json.loads(open('$TMP/free.jsonl').readline())['tokens']; assert len(t) >= 6, t; print('%d,%d' % (t[3], t[4]))")
expect_status "--stop-ids: a token-id sequence" 0 G --seeds 0 --only "Test Eta Sampling" --stop-ids "$ids" "$TMP/data/a.jsonl"
cp "$TMP/out" "$TMP/stopids.jsonl"
check "--stop-ids: stops after the sequence (kept in tokens), the text before it, finish stop, recorded" $PY - "$TMP/free.jsonl" "$TMP/stopids.jsonl" "$ids" <<'PYEOF'
import json, sys
free = json.loads(open(sys.argv[1]).readline()); got = json.loads(open(sys.argv[2]).readline())
seq = [int(x) for x in sys.argv[3].split(",")]
t = free["tokens"]
k = next(i for i in range(len(t) - 1) if t[i:i + 2] == seq)  # the first occurrence
assert got["tokens"] == t[:k + 2] and got["finish"] == "stop", (got["tokens"], t)
assert got["settings"]["stop_token_ids"] == [seq], got["settings"]
assert free["generation"].startswith(got["generation"]), (free["generation"], got["generation"])
PYEOF
expect_status "--stop-ids: verify -m accepts the text without the sequence" 0 "$BIN/verify" -m "$M" "$TMP/stopids.jsonl"
expect_stderr "... and keeps the prompt" "1 written"
expect_status "--stop-ids: not ids" 2 G --stop-ids "1,x" "$TMP/data/a.jsonl"
expect_stderr "... says so" "not a comma-separated list of token ids"
expect_status "--sources-paths: cwd or yaml" 2 G --sources-paths here --sources "$TMP/src.yaml"
expect_status "a system message and the chatml template" 0 G --seeds 0 --only "Test Eta Sampling" --chat-template chatml --system "Be brief." "$TMP/data/a.jsonl"
expect_stdout "system and template are recorded" '"system":"Be brief.".*"chat_template":"chatml"'
printf '{"prompt":"a"}\n{"prompt":7}\n' > "$TMP/bad.jsonl"
expect_status "a bad prompt record is an error" 1 G "$TMP/bad.jsonl"
expect_stderr "the error names file, line and field" 'bad.jsonl:2: field "prompt" must be a string'
printf '{"prompt":"a","id":"x"}\n{"prompt":"b","id":"x"}\n' > "$TMP/dup.jsonl"
expect_status "duplicate prompt ids are an error" 1 G "$TMP/dup.jsonl"
expect_status "bad --seeds" 2 G --seeds 3-1 "$P"
expect_status "bad --shard" 2 G --shard 4/3 "$P"
expect_status "--resume without -o" 2 G --resume "$P"
expect_status "unknown --only name" 1 G --only nope "$P"
expect_status "prompt longer than the context" 1 G --ctx 8 "$P"
expect_stderr "the context error names the prompt" "exceed the context of 8"
printf '' > "$TMP/empty.jsonl"
expect_status "empty input" 0 G "$TMP/empty.jsonl"

# the json constraint: whatever ends with end-of-generation parses as JSON
cat > "$TMP/json.yaml" <<'YEOF'
sampling_pipelines:
  - name: json object
    processors:
      - {name: json, params: {object: true}}
      - {name: temperature, params: {temperature: 0.8}}
  - name: json value
    processors:
      - {name: json}
YEOF
expect_status "a json-constrained heuristic" 0 "$BIN/gen-candidates" -m "$M" -H "$TMP/json.yaml" --seeds 0-9 -n 80 --min-new-tokens 4 "$P"
check "every generation that ended parses as JSON (objects where asked), and some did" $PY - "$TMP/out" <<'PYEOF'
import json, sys
ended = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["finish"] != "eos":
        continue
    ended += 1
    v = json.loads(r["generation"])
    if r["heuristic"]["name"] == "json object":
        assert isinstance(v, dict), r["generation"]
assert ended >= 10, ended
PYEOF
printf '{"logits":[1,2,3],"processors":[{"name":"json"}]}\n' > "$TMP/jl.jsonl"
expect_status "the json constraint without a tokenizer is a clear error" 1 "$BIN/process-logits" "$TMP/jl.jsonl"
expect_stderr "... that says why" "needs the model's tokenizer"
