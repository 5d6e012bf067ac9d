#!/bin/sh
# The learned processor (and its alias adaptive_sampler) from the command
# line: process-logits against the outputs of the independent PyTorch
# reference (tests/fixtures/sampler/, read here with a GGUF reader of its
# own), min_p then learned, --heuristics, the heuristic id, errors; and
# generation with learned heuristics, the same whatever --batch and --threads.
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
PL="$BIN/process-logits"
FIX="$ROOT/tests/fixtures/sampler"
CFG="$ROOT/tests/data/reference-configs"
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
P="$CFG/test_prompts.jsonl"

# A GGUF reader (standard library only) shared by the checks below.
cat > "$TMP/gguf.py" <<'PYEOF'
import json, math, struct

def read(path):
    """(keys, {name: list of floats}) of a GGUF file with F32 tensors."""
    b = open(path, "rb").read()
    assert b[:4] == b"GGUF", path
    _, n_t, n_kv = struct.unpack_from("<IQQ", b, 4)
    o = 24
    fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    def string(o):
        n, = struct.unpack_from("<Q", b, o)
        return b[o + 8:o + 8 + n].decode(), o + 8 + n
    def value(t, o):
        if t == 8:
            return string(o)
        if t == 9:
            at, n = struct.unpack_from("<IQ", b, o)
            o += 12
            out = []
            for _ in range(n):
                v, o = value(at, o)
                out.append(v)
            return out, o
        f = "<" + fmt[t]
        return struct.unpack_from(f, b, o)[0], o + struct.calcsize(f)
    kv = {}
    for _ in range(n_kv):
        k, o = string(o)
        t, = struct.unpack_from("<I", b, o)
        kv[k], o = value(t, o + 4)
    infos = []
    for _ in range(n_t):
        name, o = string(o)
        nd, = struct.unpack_from("<I", b, o)
        ne = struct.unpack_from("<%dQ" % nd, b, o + 4)
        o += 4 + 8 * nd
        t, off = struct.unpack_from("<IQ", b, o)
        o += 12
        infos.append((name, ne, t, off))
    align = kv.get("general.alignment", 32)
    base = (o + align - 1) // align * align
    tensors = {}
    for name, ne, t, off in infos:
        if t == 0:
            tensors[name] = list(struct.unpack_from("<%df" % math.prod(ne), b, base + off))
    return kv, tensors

def jrow(xs):
    return [None if x == -math.inf else x for x in xs]

def close(got, ref, tol=1e-5):
    """|got - ref| <= tol * max |ref| over the finite entries; null where ref is -inf."""
    if len(got) != len(ref):
        return "length %d, expected %d" % (len(got), len(ref))
    m = max(abs(r) for r in ref if r != -math.inf)
    for i, (g, r) in enumerate(zip(got, ref)):
        if r == -math.inf:
            if g is not None:
                return "token %d: %r where the reference has -inf" % (i, g)
        elif g is None or abs(g - r) > tol * m:
            return "token %d: %r, reference %r" % (i, g, r)
    return None
PYEOF

# ------------------------------------------- process-logits vs the reference

# Records: each fixture row under learned, under adaptive_sampler (with the
# class and config as the reference passes them), and (V = 50) with its -inf
# tokens made merely improbable and min_p 1e-6 before learned, which removes
# exactly those.
$PY - "$TMP" "$FIX" "$CFG" > "$TMP/rows.jsonl" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1])
import gguf
tmp, fix, cfg = sys.argv[1:4]
configs = {"local": ("LocalProbabilityTransform", "hidden_dims: 32\n"),
           "dist_static": ("SimpleDistributionAwareTransform", "hidden_dims: 32\nuse_dynamic_truncation: false\n"),
           "dist_dynamic": ("SimpleDistributionAwareTransform", "hidden_dims: 32\nuse_dynamic_truncation: true\n"),
           "net": ("SamplingNetwork", None), "net_scale": ("SamplingNetwork", None)}
for model, (cls, text) in configs.items():
    if text:
        path = "%s/%s.yaml" % (tmp, model)
        open(path, "w").write(text)
    else:
        path = "%s/%s.yaml" % (cfg, "model_config" if model == "net" else "model_config_scale")
    ckpt = "%s/%s.gguf" % (fix, model)
    for V in (50, 5000):
        _, t = gguf.read("%s/%s_v%d.gguf" % (fix, model, V))
        learned = [{"name": "learned", "params": {"path": ckpt}}]
        alias = [{"name": "adaptive_sampler", "params": {"sampler_model_name": cls, "sampler_config_path": path,
                                                          "sampler_checkpoint_path": ckpt, "device": "cuda:0"}}]
        row = gguf.jrow(t["logits"])
        print(json.dumps({"id": "%s/%d/learned" % (model, V), "logits": row, "processors": learned}))
        print(json.dumps({"id": "%s/%d/alias" % (model, V), "logits": row, "processors": alias}))
        if V == 50:
            top = max(x for x in row if x is not None)
            soft = [top - 200 if x is None else x for x in row]
            assert soft != row
            min_p = [{"name": "min_p", "params": {"min_p": 1e-6}}] + learned
            print(json.dumps({"id": "%s/%d/min_p" % (model, V), "logits": soft, "processors": min_p}))
PYEOF
expect_status "process-logits with learned and adaptive_sampler heuristics: exit status 0" 0 "$PL" "$TMP/rows.jsonl"
check "process-logits output = PyTorch reference output (|d| <= 1e-5 max |ref|), -inf kept; min_p then learned too" \
    $PY - "$TMP" "$FIX" "$TMP/out" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1])
import gguf
n = 0
for line in open(sys.argv[3]):
    r = json.loads(line)
    model, V, how = r["id"].split("/")
    _, t = gguf.read("%s/%s_v%s.gguf" % (sys.argv[2], model, V))
    why = gguf.close(r["logits"], t["out"])
    assert not why, "%s: %s" % (r["id"], why)
    n += 1
assert n == 25, n
PYEOF

# --heuristics: a heuristics file naming the sampler, with --sample
cat > "$TMP/h.yaml" <<EOF
sampling_pipelines:
  - name: learned net
    weight: 1
    processors:
      - name: learned
        params: {path: "$FIX/net.gguf"}
  - name: top_k then learned
    processors:
      - {name: top_k, params: {top_k: 40}}
      - {name: learned, params: {path: "$FIX/net.gguf"}}
  - name: learned local
    processors:
      - {name: learned, params: {path: "$FIX/local.gguf"}}
  - name: learned equivariant
    processors:
      - {name: learned, params: {path: "$ROOT/tests/data/sampler/equivariant.gguf"}}
EOF
grep '"net/50/learned"' "$TMP/rows.jsonl" | sed 's/"processors": \[[^]]*\]/"processors": []/' > "$TMP/one.jsonl"
expect_status "--heuristics with a learned pipeline, --sample: exit status 0" 0 \
    "$PL" --heuristics "$TMP/h.yaml" --heuristic "learned net" --sample "$TMP/one.jsonl"
check "--heuristics: the reference output, and a token drawn from a kept one" $PY - "$TMP" "$FIX" "$TMP/out" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1])
import gguf
r = json.loads(open(sys.argv[3]).read())
_, t = gguf.read(sys.argv[2] + "/net_v50.gguf")
why = gguf.close(r["logits"], t["out"])
assert not why, why
assert r["logits"][r["token"]] is not None
PYEOF

# ------------------------------------------------------------------ errors

# bad NAME PROCESSORS-JSON REGEX
bad() {
    printf '{"logits":[1,2,3,4],"processors":%s}\n' "$2" > "$TMP/bad.jsonl"
    expect_status "$1: exit status 1" 1 "$PL" "$TMP/bad.jsonl"
    expect_stderr "$1: one line naming the processor, the parameter and the file" "^process-logits: [^ ]*bad\\.jsonl:1: field \"processors\": $3"
    lines=$(wc -l < "$TMP/err" | tr -d ' ')
    if [ "$lines" = 1 ]; then ok "$1: a one-line message"; else not_ok "$1: a one-line message" "$lines lines"; fi
}
bad "a sampler file that does not exist" "[{\"name\":\"learned\",\"params\":{\"path\":\"$TMP/none.gguf\"}}]" \
    'processor 1 \(learned\): parameter "path": [^ ]*none\.gguf: No such file or directory$'
printf 'PK\003\004archive' > "$TMP/sampler_model.bin"
bad "a PyTorch checkpoint" "[{\"name\":\"learned\",\"params\":{\"path\":\"$TMP/sampler_model.bin\"}}]" \
    'processor 1 \(learned\): parameter "path": [^ ]*sampler_model\.bin: a PyTorch checkpoint.*scripts/convert-torch-sampler\.py'
printf 'hello\n' > "$TMP/sampler.pt"
bad "a file that is not GGUF, under adaptive_sampler" \
    "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"$TMP/sampler.pt\"}}]" \
    'processor 1 \(adaptive_sampler\): parameter "sampler_checkpoint_path": [^ ]*sampler\.pt: not an asn sampler file \(GGUF\).*scripts/convert-torch-sampler\.py'
bad "a model file, not a sampler" "[{\"name\":\"learned\",\"params\":{\"path\":\"$M\"}}]" \
    'processor 1 \(learned\): parameter "path": [^ ]*tiny-spm-q8_0\.gguf: general\.architecture is "llama", not "asn-sampler"'
bad "no path" '[{"name":"learned","params":{}}]' 'processor 1 \(learned\): parameter "path" is required'
bad "a path that is not a string" '[{"name":"temperature","params":{"temperature":1}},{"name":"learned","params":{"path":true}}]' \
    'processor 2 \(learned\): parameter "path" must be a string, not boolean'
bad "a class name other than the file's" \
    "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"$FIX/local.gguf\",\"sampler_model_name\":\"SamplingNetwork\"}}]" \
    'processor 1 \(adaptive_sampler\): parameter "sampler_model_name" is "SamplingNetwork", but [^ ]*local\.gguf holds a LocalProbabilityTransform'
bad "a config other than the file's" \
    "[{\"name\":\"adaptive_sampler\",\"params\":{\"sampler_checkpoint_path\":\"$FIX/net_scale.gguf\",\"sampler_config_path\":\"$CFG/model_config.yaml\"}}]" \
    'processor 1 \(adaptive_sampler\): parameter "sampler_config_path": [^ ]*model_config\.yaml gives scale false, but [^ ]*net_scale\.gguf holds true'
printf 'sampling_pipelines:\n  - name: a\n    processors:\n      - name: min_p\n        params: {min_p: 0.1}\n      - name: learned\n        params: {path: %s/none.gguf}\n' "$TMP" > "$TMP/bad.yaml"
expect_status "a heuristics file naming a missing sampler: exit status 1" 1 "$PL" --heuristics "$TMP/bad.yaml" --heuristic a "$TMP/one.jsonl"
expect_stderr "a heuristics file naming a missing sampler: FILE:LINE:COL, pipeline, processor, parameter, file" \
    'bad\.yaml:6:[0-9]+: pipeline "a": processor 2 \(learned\): parameter "path": [^ ]*none\.gguf: No such file or directory'

# ------------------------------------------------------------ generation

# (a SamplingNetwork over the whole vocabulary of 32000 costs about 60 ms a
# row: the generation tests give it the 40 tokens top_k keeps)
G() { "$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" --only "top_k then learned" --only "learned local" \
        --only "learned equivariant" -n 8 --min-new-tokens 2 --seeds 0-1 "$@" "$P"; }
expect_status "gen-candidates with learned heuristics" 0 G -t 1 -b 64
cp "$TMP/out" "$TMP/g1"
G -t 2 -b 5 > "$TMP/g2" 2>/dev/null
check "gen-candidates: byte-identical with --threads 2 --batch 5" cmp "$TMP/g1" "$TMP/g2"
G -t 2 -b 1 > "$TMP/g3" 2>/dev/null
check "gen-candidates: byte-identical with --threads 2 --batch 1" cmp "$TMP/g1" "$TMP/g3"
# the equivariant transform sorts each row: rows sorted at once on two
# threads must not share anything (a batch of 16, four seeds)
E() { "$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" --only "learned equivariant" -n 8 --min-new-tokens 2 \
        --seeds 0-3 "$@" "$P" 2>/dev/null; }
E -t 1 -b 1 > "$TMP/e1"
E -t 2 -b 16 > "$TMP/e2"
check "gen-candidates: the equivariant sampler byte-identical with --threads 2 --batch 16" cmp "$TMP/e1" "$TMP/e2"
check "gen-candidates: every prompt x heuristic x seed, ids as the reference computes them" $PY - "$TMP/g1" "$P" <<'PYEOF'
import hashlib, json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
n_prompts = sum(1 for l in open(sys.argv[2]) if l.strip())
assert len(recs) == n_prompts * 3 * 2, len(recs)
for r in recs:
    h = r["heuristic"]
    # a learned processor's path counts by its file's bytes, not its name
    procs = json.loads(json.dumps(h["processors"]))
    for p in procs:
        if p["name"] == "learned":
            p["params"]["path"] = "sha256:" + hashlib.sha256(open(p["params"]["path"], "rb").read()).hexdigest()
    canon = json.dumps({"name": h["name"], "processors": procs}, sort_keys=True,
                       separators=(",", ":"), ensure_ascii=False)
    assert h["id"] == hashlib.sha256(canon.encode()).hexdigest()[:12], h
    assert 2 <= r["n_tokens"] <= 8
assert len({tuple(r["tokens"]) for r in recs}) > 1
PYEOF
# the id (and every draw) follows the sampler's bytes: the same file under
# another name gives the same ids and tokens; other bytes under the same
# name, other ids
mkdir -p "$TMP/elsewhere"
sed "s|$FIX/|$TMP/elsewhere/|g" "$TMP/h.yaml" > "$TMP/h2.yaml"
cp "$FIX"/*.gguf "$TMP/elsewhere/"
G2() { "$BIN/gen-candidates" -m "$M" -H "$TMP/h2.yaml" --only "top_k then learned" --only "learned local" \
        --only "learned equivariant" -n 8 --min-new-tokens 2 --seeds 0-1 -t 1 "$P" 2>/dev/null; }
ids_tokens() { $PY -c 'import json,sys
for l in open(sys.argv[1]): r = json.loads(l); print(r["id"], r["heuristic"]["id"], r["tokens"])' "$1"; }
G2 > "$TMP/g4"
ids_tokens "$TMP/g1" > "$TMP/g1.ids"
ids_tokens "$TMP/g4" > "$TMP/g4.ids"
check "gen-candidates: a copied sampler file gives the same ids and tokens" cmp "$TMP/g1.ids" "$TMP/g4.ids"
check "... though the records name the other path" grep -q elsewhere "$TMP/g4"
printf 'x' >> "$TMP/elsewhere/net.gguf"
G2 > "$TMP/g5"
ids_tokens "$TMP/g5" > "$TMP/g5.ids"
n_new=$($PY -c 'import json,sys
a = {json.loads(l)["heuristic"]["name"]: json.loads(l)["heuristic"]["id"] for l in open(sys.argv[1])}
b = {json.loads(l)["heuristic"]["name"]: json.loads(l)["heuristic"]["id"] for l in open(sys.argv[2])}
print(sum(a[k] != b[k] for k in a))' "$TMP/g1" "$TMP/g5" 2>/dev/null)
check "... and other bytes under the same name change that heuristic's id (only its)" [ "${n_new:-0}" = 1 ]
# verify checks each record's heuristic id the same way, against the
# sampler file's bytes as they are when it runs
V() { "$BIN/verify" --expected-seeds 2 "$@"; }
expect_status "verify: records of learned heuristics" 0 V "$TMP/g1"
expect_stderr "... keep every prompt" ' 0 discarded'
check "... and every record" cmp "$TMP/g1" "$TMP/out"
V "$TMP/g4" > "$TMP/out" 2> "$TMP/err"
expect_stderr "verify: a sampler file whose bytes changed since: its heuristic's id does not match" \
    'discarded prompt [^:]+: heuristic "[^"]+": id does not match its name and processors'
V "$TMP/g5" > "$TMP/out" 2> "$TMP/err"
expect_stderr "... the records drawn with the new bytes do" ' 0 discarded'
rm "$TMP/elsewhere/net.gguf"
V "$TMP/g5" > "$TMP/out" 2> "$TMP/err"
expect_stderr "verify: a sampler file gone: its prompts discarded, naming processor, parameter and file" \
    'heuristic "[^"]+": cannot check its id: processor [0-9]+ \(learned\): parameter "path": [^ ]*elsewhere/net\.gguf: No such file'
GEN() { "$BIN/generate" -m "$M" --heuristics "$TMP/h.yaml" --heuristic "top_k then learned" -n 12 -s 3 "$@" "Once upon a time"; }
expect_status "generate with a learned heuristic" 0 GEN -t 1
cp "$TMP/out" "$TMP/s1"
GEN -t 2 > "$TMP/s2" 2>/dev/null
if [ -s "$TMP/s1" ] && cmp -s "$TMP/s1" "$TMP/s2"; then ok "generate: the same text with --threads 1 and 2"
else not_ok "generate: the same text with --threads 1 and 2" "$(head -c 200 "$TMP/s1") / $(head -c 200 "$TMP/s2")"; fi
