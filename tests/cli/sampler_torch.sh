#!/bin/sh
# Sampler checkpoints both ways with the research pipeline
# (NavneelSinghal/Adaptive-Sampling-Networks): samplers train-sampler trains
# go through scripts/convert-sampler-to-torch.py to a state_dict and config
# YAML that its model classes load (load_state_dict, strict); their forward
# on some rows equals asn's learned processor (process-logits) within float
# tolerance; and scripts/convert-torch-sampler.py turns them back into the
# same GGUF, byte for byte. The classes are those of the independent
# PyTorch implementation tests/reference/sampler_ref.py (written from its
# published architecture), or, when ASN_REFERENCE_SRC names a checkout of
# its source, its own src/models.py (float32). Needs python3-torch.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
H="$ROOT/tests/data/reference-configs/custom_logit_processors_test.yaml"
P="$ROOT/tests/data/reference-configs/test_prompts.jsonl"
TO="$ROOT/scripts/convert-sampler-to-torch.py"
FROM="$ROOT/scripts/convert-torch-sampler.py"
REFSRC=${ASN_REFERENCE_SRC:-}
if ! $PY -c 'import torch, yaml, numpy' 2> /dev/null; then
    skip "sampler checkpoints both ways" "needs python3-torch, python3-yaml and python3-numpy"
    exit 0
fi
"$BIN/gen-candidates" -m "$M" -H "$H" -n 12 --min-new-tokens 4 --seeds 0-1 "$P" > "$TMP/c.jsonl" 2> /dev/null
printf 'hidden_dims: 8\n' > "$TMP/local.yaml"
printf 'hidden_dims: 6\nuse_dynamic_truncation: true\n' > "$TMP/dist.yaml"
printf 'hidden_dims: 6\nuse_dynamic_truncation: false\n' > "$TMP/dists.yaml"
printf 'd_model: 8\nd_ff: 16\nn_blocks: 1\nn_heads: 2\nscale: true\n' > "$TMP/net.yaml"
MODELS="local:LocalProbabilityTransform dist:SimpleDistributionAwareTransform dists:SimpleDistributionAwareTransform net:SamplingNetwork"
for m in $MODELS; do
    n=${m%%:*} cls=${m#*:}
    expect_status "train-sampler trains a $cls ($n)" 0 "$BIN/train-sampler" -m "$M" -q -b 5 --max-steps 2 \
        --num-warmup-steps 1 -a "$cls" -c "$TMP/$n.yaml" -o "$TMP/$n.gguf" "$TMP/c.jsonl"
    expect_status "... converts to a state_dict and config ($n)" 0 $PY "$TO" "$TMP/$n.gguf" "$TMP/$n.bin" "$TMP/$n-out.yaml"
    expect_stdout "... naming the class" "^$cls\$"
    expect_status "... and back to GGUF ($n)" 0 $PY "$FROM" --config "$TMP/$n-out.yaml" "$TMP/$n.bin" "$TMP/$n-back.gguf"
    check "... byte-identical to train-sampler's ($n)" cmp "$TMP/$n.gguf" "$TMP/$n-back.gguf"
done

# rows: finite logits (its classes take finite rows), V = 7, 300 and 300
$PY - "$TMP" $MODELS > "$TMP/rows.jsonl" <<'PYEOF'
import json, sys
import numpy as np
tmp = sys.argv[1]
rng = np.random.default_rng(7)
for m in sys.argv[2:]:
    n = m.split(":")[0]
    for k, V in enumerate((7, 300, 300)):
        row = [float(np.float32(x)) for x in rng.normal(0, 3, V)]
        print(json.dumps({"id": "%s/%d" % (n, k), "logits": row,
                          "processors": [{"name": "learned", "params": {"path": "%s/%s.gguf" % (tmp, n)}}]}))
PYEOF
expect_status "process-logits runs the samplers (learned)" 0 "$BIN/process-logits" "$TMP/rows.jsonl"
cp "$TMP/out" "$TMP/asn-out.jsonl"
if [ -n "$REFSRC" ] && [ -f "$REFSRC/src/models.py" ]; then
    SRCNOTE="its src/models.py"
else
    REFSRC="" SRCNOTE="tests/reference/sampler_ref.py"
fi
check "its classes ($SRCNOTE) load the converted state_dicts (strict) and their forward = asn's (|d| <= 1e-4 max(1, |ref|))" \
    $PY - "$TMP" "$ROOT" "$REFSRC" <<'PYEOF'
import json, sys, yaml
import torch
tmp, root, refsrc = sys.argv[1:4]
if refsrc:
    sys.path.insert(0, refsrc)
    import src.models as M
    build = lambda cls, cfg: getattr(M, cls)(dtype=torch.float32, **cfg)
    dtype = torch.float32
else:
    sys.path.insert(0, root + "/tests/reference")
    import sampler_ref as M
    build = lambda cls, cfg: getattr(M, cls)(**cfg)
    dtype = torch.float64
models = {}
rows = {q["id"]: q["logits"] for q in map(json.loads, open(tmp + "/rows.jsonl"))}
n_rows = 0
for line in open(tmp + "/asn-out.jsonl"):
    r = json.loads(line)
    name = r["id"].split("/")[0]
    if name not in models:
        text = open("%s/%s-out.yaml" % (tmp, name)).read()
        cls = text.splitlines()[0].split(": ")[1]
        model = build(cls, yaml.safe_load(text))
        model.load_state_dict(torch.load("%s/%s.bin" % (tmp, name)), strict=True)
        models[name] = model.eval()
    x = torch.tensor(rows[r["id"]], dtype=dtype)
    with torch.no_grad():
        ref = (models[name](x[None, :])[0] if refsrc else models[name](x)).double()
    ours = torch.tensor(r["logits"], dtype=torch.float64)
    tol = 1e-4 * max(1.0, ref.abs().max().item())
    d = (ours - ref).abs().max().item()
    assert d <= tol, (r["id"], d, tol)
    n_rows += 1
assert n_rows == 12, n_rows
PYEOF

# errors
printf 'hidden_dims: 4\n' > "$TMP/equi.yaml"
"$BIN/train-sampler" -m "$M" -q -b 5 --max-steps 1 -a EquivariantLocalTransform -c "$TMP/equi.yaml" \
    -o "$TMP/equi.gguf" "$TMP/c.jsonl" 2> /dev/null
expect_status "a class the reference does not have is an error" 1 $PY "$TO" "$TMP/equi.gguf" "$TMP/e.bin" "$TMP/e.yaml"
expect_stderr "... naming it" "EquivariantLocalTransform.*no counterpart"
expect_status "a model GGUF is not a sampler" 1 $PY "$TO" "$M" "$TMP/e.bin" "$TMP/e.yaml"
expect_stderr "... saying so" "not an asn sampler file"
