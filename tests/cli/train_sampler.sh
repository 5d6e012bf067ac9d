# train_sampler.sh — train-sampler: runs for every architecture, is
# deterministic, resumes to the same weights, reads stdin, detects records
# that do not come from the model, and rejects bad input with file:line.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
OTHER="$ROOT/examples/models/demo-base.gguf"
H="$ROOT/tests/data/reference-configs/custom_logit_processors_test.yaml"
P="$ROOT/tests/data/reference-configs/test_prompts.jsonl"
PY=/usr/bin/python3
"$BIN/gen-candidates" -m "$M" -H "$H" -n 12 --min-new-tokens 4 --seeds 0-1 "$P" > "$TMP/c.jsonl" 2>/dev/null
printf 'hidden_dims: 8\n' > "$TMP/local.yaml"
printf 'hidden_dims: 6\nuse_dynamic_truncation: true\n' > "$TMP/dist.yaml"
printf 'd_model: 8\nd_ff: 16\nn_blocks: 1\nn_heads: 2\nscale: true\n' > "$TMP/net.yaml"
T() { "$BIN/train-sampler" -m "$M" -q -b 5 --gradient-accumulation-steps 2 --num-warmup-steps 2 "$@"; }

expect_status "LocalProbabilityTransform trains" 0 T -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/a.gguf" "$TMP/c.jsonl"
expect_status "SimpleDistributionAwareTransform (dynamic) trains" 0 T -a SimpleDistributionAwareTransform -c "$TMP/dist.yaml" -o "$TMP/d.gguf" "$TMP/c.jsonl"
expect_status "SamplingNetwork (scale) trains" 0 T -a SamplingNetwork -c "$TMP/net.yaml" -o "$TMP/n.gguf" --max-steps 3 "$TMP/c.jsonl"
check "outputs are asn-sampler GGUF files of the right type" $PY - "$TMP/a.gguf" "$TMP/d.gguf" "$TMP/n.gguf" <<'PYEOF'
import struct, sys
def kv(path):
    b = open(path, "rb").read()
    assert b[:4] == b"GGUF"
    n_t, n_kv = struct.unpack_from("<QQ", b, 8)
    off, out = 24, {}
    def s(o):
        n, = struct.unpack_from("<Q", b, o); return b[o+8:o+8+n].decode(), o + 8 + n
    for _ in range(n_kv):
        k, off = s(off); t, = struct.unpack_from("<I", b, off); off += 4
        if t == 8: v, off = s(off)
        elif t in (4, 5, 6): v = struct.unpack_from("<I", b, off)[0]; off += 4
        elif t == 7: v = b[off]; off += 1
        elif t == 10: v = struct.unpack_from("<Q", b, off)[0]; off += 8
        else: raise SystemExit("type %d" % t)
        out[k] = v
    return out, n_t
want = ["LocalProbabilityTransform", "SimpleDistributionAwareTransform", "SamplingNetwork"]
for p, w in zip(sys.argv[1:], want):
    k, n_t = kv(p)
    assert k["general.architecture"] == "asn-sampler" and k["asn-sampler.type"] == w, (p, k)
    assert not any(x.startswith("train.") for x in k), "checkpoint keys in the model"
PYEOF
check "the log has one JSON line per log step with loss, kl, penalty, lr" $PY -c "
import json
rows = [json.loads(l) for l in open('$TMP/a.log.jsonl')]
assert rows and all(set(r) >= {'step','epoch','rows','loss','kl','penalty','lr','grad_norm','rows_per_s','time'} for r in rows)
assert all(abs(r['loss'] - r['kl'] - 5.0 * r['penalty']) < 1e-6 * max(1, r['loss']) for r in rows), rows[0]
assert [r['step'] for r in rows] == sorted(r['step'] for r in rows)"

T -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/a2.gguf" "$TMP/c.jsonl"
check "same command, byte-identical sampler" cmp "$TMP/a.gguf" "$TMP/a2.gguf"
T -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/a3.gguf" < "$TMP/c.jsonl"
check "stdin gives the same sampler as the file" cmp "$TMP/a.gguf" "$TMP/a3.gguf"
T -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/t2a.gguf" -t 2 "$TMP/c.jsonl"
T -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/t2b.gguf" -t 2 "$TMP/c.jsonl"
check "two threads: the same sampler twice" cmp "$TMP/t2a.gguf" "$TMP/t2b.gguf"
T -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/s1.gguf" --seed 7 "$TMP/c.jsonl"
if cmp -s "$TMP/a.gguf" "$TMP/s1.gguf"; then not_ok "another seed, another sampler" "identical"; else ok "another seed, another sampler"; fi

# resume: stop at step 3 and 7 (token batches of 5 rows end inside records), continue
for arch in "SimpleDistributionAwareTransform $TMP/dist.yaml" "SamplingNetwork $TMP/net.yaml"; do
    set -- $arch
    T -a "$1" -c "$2" -o "$TMP/full.gguf" --num-epochs 2 --max-steps 12 "$TMP/c.jsonl"
    T -a "$1" -c "$2" -o "$TMP/part.gguf" --num-epochs 2 --max-steps 12 --stop-at 3 "$TMP/c.jsonl"
    T -a "$1" -c "$2" -o "$TMP/part.gguf" --num-epochs 2 --max-steps 12 --stop-at 7 --resume "$TMP/part.ckpt.gguf" "$TMP/c.jsonl"
    T -o "$TMP/part.gguf" --num-epochs 2 --max-steps 12 --resume "$TMP/part.ckpt.gguf" "$TMP/c.jsonl"
    check "$1: stopped twice and resumed = uninterrupted, byte for byte" cmp "$TMP/full.gguf" "$TMP/part.gguf"
    rm -f "$TMP/part.gguf" "$TMP/part.ckpt.gguf"
done
T -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/e.gguf" --num-epochs 3 "$TMP/c.jsonl"
check "three epochs run three times the steps" $PY -c "
import json
a = [json.loads(l) for l in open('$TMP/a.log.jsonl')][-1]; e = [json.loads(l) for l in open('$TMP/e.log.jsonl')][-1]
assert e['step'] >= 3 * a['step'] - 1 and e['epoch'] == 2, (a, e)"

# records that were not drawn by this model and settings
$PY - "$TMP/c.jsonl" > "$TMP/changed.jsonl" <<'PYEOF'
import json, sys
for i, l in enumerate(open(sys.argv[1])):
    r = json.loads(l)
    if i == 0:
        r["tokens"][1] = (r["tokens"][1] + 7) % 200
    print(json.dumps(r))
PYEOF
expect_status "changed tokens: still trains" 0 T -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/x.gguf" "$TMP/changed.jsonl"
expect_stderr "changed tokens: the replayed steps that do not draw their token are reported" "warning: [1-9][0-9]* of the replayed steps do not draw their recorded token"

# errors
L() { T -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/err.gguf" "$@"; }
expect_status "records of another model" 1 "$BIN/train-sampler" -m "$OTHER" -a LocalProbabilityTransform -c "$TMP/local.yaml" -o "$TMP/err.gguf" "$TMP/c.jsonl"
expect_stderr "records of another model: file, line, field" "c.jsonl:1: field \"model.sha256\""
{ head -n 2 "$TMP/c.jsonl"; echo '{"prompt": '; } > "$TMP/broken.jsonl"
expect_status "malformed JSON line" 1 L "$TMP/broken.jsonl"
expect_stderr "malformed JSON line: file and line" "broken.jsonl:3: "
head -n 3 "$TMP/c.jsonl" | $PY -c "
import json, sys
for i, l in enumerate(sys.stdin):
    r = json.loads(l)
    if i == 2: del r['tokens']
    print(json.dumps(r))" > "$TMP/notokens.jsonl"
expect_status "record without tokens" 1 L "$TMP/notokens.jsonl"
expect_stderr "record without tokens: file, line, field" "notokens.jsonl:3: field \"tokens\": missing"
head -n 1 "$TMP/c.jsonl" | sed 's/"model":{[^}]*}/"model":null/' > "$TMP/nomodel.jsonl"
expect_status "record without model digest" 1 L "$TMP/nomodel.jsonl"
expect_stderr "record without model digest: names the field" "nomodel.jsonl:1: field \"model.sha256\": missing"
: > "$TMP/empty.jsonl"
expect_status "empty input" 1 L "$TMP/empty.jsonl"
expect_stderr "empty input: says why" "fewer than one token batch"
expect_status "unknown architecture" 2 T -a Transformer -c "$TMP/local.yaml" -o "$TMP/err.gguf" "$TMP/c.jsonl"
printf 'hidden_dims: 8\nwidth: 3\n' > "$TMP/badcfg.yaml"
expect_status "config with an unknown key" 1 T -a LocalProbabilityTransform -c "$TMP/badcfg.yaml" -o "$TMP/err.gguf" "$TMP/c.jsonl"
expect_stderr "config with an unknown key: names file and key" "badcfg.yaml.*width"
expect_status "missing --config" 2 T -a LocalProbabilityTransform -o "$TMP/err.gguf" "$TMP/c.jsonl"
expect_status "resume from a file that is not a checkpoint" 1 T -o "$TMP/err.gguf" --resume "$TMP/a.gguf" "$TMP/c.jsonl"
expect_stderr "resume from a sampler: says it is not a checkpoint" "not a train-sampler checkpoint"
