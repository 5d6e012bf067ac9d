# analyze_sampler.sh — analyze-sampler on candidates made here with
# gen-candidates: its measures against values computed independently (a
# heuristic that keeps the raw row gives KL 0; greedy targets give
# -log p(token), checked against perplexity's log-probabilities; numpy
# recomputes the KLs, the masses, the min_p target and the
# LocalProbabilityTransform output from the full distributions), prompt
# mode equals replaying the same generation, the SVG plots, --json, errors,
# and byte-identical output whatever --threads.
. "$ASN_ROOT/tests/lib/cli.sh"
# The greedy check re-scores the generated text with perplexity, so the text
# must tokenize back to the generated tokens; with this random model that
# holds for the generation of the exact path (quantized weights in f32).
export ASN_EXACT_MATMUL=1
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
S="$ROOT/tests/fixtures/sampler"
PY=/usr/bin/python3
A() { "$BIN/analyze-sampler" -m "$M" "$@"; }

cat > "$TMP/h.yaml" <<'EOF'
sampling_pipelines:
  - name: temp one
    processors:
      - name: temperature
        params: {temperature: 1.0}
  - name: top one
    processors:
      - name: top_k
        params: {top_k: 1}
  - name: min_p 0.05 temp 0.7
    processors:
      - name: temperature
        params: {temperature: 0.7}
      - name: min_p
        params: {min_p: 0.05}
EOF
# "Once upon a time" and its generations tokenize back to the same ids
# (checked below), so perplexity scores exactly the generated tokens.
printf '{"prompt":"Once upon a time"}\n{"prompt":"The cat"}\n' > "$TMP/p.jsonl"
"$BIN/gen-candidates" -m "$M" -H "$TMP/h.yaml" -n 6 --min-new-tokens 0 --seeds 0-1 "$TMP/p.jsonl" > "$TMP/c.jsonl" 2>/dev/null
C="$TMP/c.jsonl"
id_of() { $PY -c "import json,sys; print([r['id'] for r in map(json.loads, open(sys.argv[1])) if r['prompt'] == sys.argv[2] and r['heuristic']['name'] == sys.argv[3] and r['seed'] == int(sys.argv[4])][0])" "$C" "$1" "$2" "$3"; }
ID_TEMP=$(id_of "Once upon a time" "temp one" 0)
ID_TOP=$(id_of "Once upon a time" "top one" 1)
ID_MINP=$(id_of "Once upon a time" "min_p 0.05 temp 0.7" 0)

# ------------------------------------------------------------- text output

expect_status "candidates with a sampler: runs" 0 A -s "$S/local.gguf" --candidates "$C"
cp "$TMP/out" "$TMP/text"
expect_stdout "a header per record" '^record 1 \(id [0-9a-f]{16}/[0-9a-f]{12}/0\): heuristic "temp one", seed 0, 6 tokens, 6 analyzed$'
expect_stdout "the table's columns" '^ step  token \(id\) +KL\(t\|\|raw\) +KL\(t\|\|lrn\) +mass raw +mass lrn$'
expect_stdout "the summary counts every record and step" '^summary: 12 records, 72 steps analyzed$'
expect_stdout "the summary has the ratio" '^  KL ratio raw / learned +[0-9]+\.[0-9]{4}$'
expect_stdout "spaces in token texts are visible" '␣'
expect_status "without a sampler: runs" 0 A --candidates "$C" --steps 2
expect_stdout "without a sampler: raw vs target only" '^ step  token \(id\) +KL\(t\|\|raw\) +mass raw$'
if grep -q 'learned' "$TMP/out"; then not_ok "without a sampler: no learned column or mean" "$(grep learned "$TMP/out" | head -2)"
else ok "without a sampler: no learned column or mean"; fi
expect_stdout "--steps 2: two steps per record" '^summary: 12 records, 24 steps analyzed$'

# ------------------------------------------------------------- --json

A -s "$S/local.gguf" --candidates "$C" --json > "$TMP/all.json" 2>"$TMP/err"
check "--json: every line is JSON, one per step, then the summary with the means" $PY - "$TMP/all.json" "$C" <<'PYEOF'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
recs = [json.loads(l) for l in open(sys.argv[2])]
steps, summ = lines[:-1], lines[-1]["summary"]
assert len(steps) == sum(len(r["tokens"]) for r in recs) == summ["steps"] == 72
assert summ["records"] == len(recs) == 12
i = 0
for k, r in enumerate(recs):
    for t, tok in enumerate(r["tokens"]):
        s = steps[i]; i += 1
        assert s["record"] == k + 1 and s["id"] == r["id"] and s["step"] == t and s["token"] == tok, s
        assert s["drawn"] is True, s
        for f in ("kl_raw", "kl_learned", "mass_raw", "mass_learned", "p_raw", "p_target", "p_learned"):
            assert isinstance(s[f], float) and s[f] >= 0, (f, s)
for f in ("kl_raw", "kl_learned", "mass_raw", "mass_learned"):
    m = sum(s[f] for s in steps) / len(steps)
    assert abs(m - summ[f]) <= 1e-12 * max(1, m), (f, m, summ[f])
assert abs(summ["kl_ratio"] - summ["kl_raw"] / summ["kl_learned"]) < 1e-12
PYEOF

check "a target that keeps the raw row (temperature 1): KL(target||raw) and its mass are exactly 0" $PY - "$TMP/all.json" "$ID_TEMP" <<'PYEOF'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"step"' in l]
s = [x for x in s if x["id"] == sys.argv[2]]
assert len(s) == 6
for x in s:
    assert x["kl_raw"] == 0.0 and x["mass_raw"] == 0.0 and x["kept"] == 32000 and x["p_raw"] == x["p_target"], x
PYEOF

# greedy (top_k 1): KL(target||raw) = -log p_raw(token) = perplexity's NLL
# of the token; the raw mass is 1 - p_raw(token)
printf '{"text":"Once upon a time"}\n' | "$BIN/perplexity" -m "$M" > "$TMP/ppl_prompt.json"
$PY -c "
import json, sys
r = [json.loads(l) for l in open('$C') if json.loads(l)['id'] == '$ID_TOP'][0]
print(json.dumps({'text': r['prompt'] + ' ' + r['generation']}))" | "$BIN/perplexity" -m "$M" > "$TMP/ppl_top.json"
check "greedy target: KL(target||raw) is perplexity's -log p of each token, mass is 1 - p" $PY - "$TMP/all.json" "$ID_TOP" "$TMP/ppl_prompt.json" "$TMP/ppl_top.json" "$C" <<'PYEOF'
import json, math, sys
s = [x for x in map(json.loads, open(sys.argv[1])) if x.get("id") == sys.argv[2]]
n_prompt = len(json.load(open(sys.argv[3]))["tokens"])
ppl = json.load(open(sys.argv[4]))
rec = [r for r in map(json.loads, open(sys.argv[5])) if r["id"] == sys.argv[2]][0]
assert ppl["tokens"][n_prompt:] == rec["tokens"], "the text does not tokenize back to the record's tokens"
assert len(s) == 6
for t, x in enumerate(s):
    lp = ppl["logprobs"][n_prompt + t]
    assert x["kept"] == 1 and x["p_target"] == 1.0, x
    assert abs(x["kl_raw"] - (-lp)) < 1e-6, (t, x["kl_raw"], lp)
    assert abs(x["mass_raw"] - (1 - math.exp(lp))) < 1e-6, (t, x["mass_raw"], lp)
    assert abs(x["kl_learned"] + math.log(1 - x["mass_learned"])) < 1e-9, x
PYEOF

# the whole distributions (--json-top 32000), recomputed with numpy
A -s "$S/local.gguf" --candidates "$C" --id "$ID_MINP" --steps 3 --json --json-top 32000 > "$TMP/full.json" 2>"$TMP/err"
cat > "$TMP/gguf.py" <<'PYEOF'
import struct, numpy as np
def read_gguf(path):
    """GGUF key-values and F32/F16 tensors (numpy, PyTorch's shapes)."""
    b = open(path, "rb").read()
    assert b[:4] == b"GGUF"
    pos = 4
    def u(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, b, pos)[0]; pos += struct.calcsize(fmt); return v
    def s():
        nonlocal pos
        n = u("Q"); v = b[pos:pos + n].decode(); pos += n; return v
    sizes = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    def val(t):
        if t == 8: return s()
        if t == 9:
            et = u("I"); n = u("Q"); return [val(et) for _ in range(n)]
        return u(sizes[t])
    u("I"); nt = u("Q"); nkv = u("Q")
    kv = {}
    for _ in range(nkv):
        k = s(); kv[k] = val(u("I"))
    infos = []
    for _ in range(nt):
        name = s(); nd = u("I"); ne = [u("Q") for _ in range(nd)]; infos.append((name, ne, u("I"), u("Q")))
    al = kv.get("general.alignment", 32)
    base = (pos + al - 1) // al * al
    t = {}
    for name, ne, ty, off in infos:
        a = np.frombuffer(b, dtype={0: np.float32, 1: np.float16}[ty], count=int(np.prod(ne)), offset=base + off)
        t[name] = a.astype(np.float64).reshape(list(reversed(ne)))
    return kv, t
PYEOF
check "numpy from the full distributions: KLs, masses, the min_p target, the learned distribution" $PY - "$TMP/full.json" "$S/local.gguf" "$TMP/gguf.py" <<'PYEOF'
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[3].rsplit("/", 1)[0])
from gguf import read_gguf
kv, W = read_gguf(sys.argv[2])
assert kv["asn-sampler.type"] == "LocalProbabilityTransform"
steps = [json.loads(l) for l in open(sys.argv[1])][:-1]
assert len(steps) == 3
def logsigmoid(x): return -np.logaddexp(0, -x)
for x in steps:
    top = x["top"]
    assert len(top) == 32000 and sorted(t["id"] for t in top) == list(range(32000))
    top.sort(key=lambda t: t["id"])
    raw = np.array([t["raw"] for t in top]); tgt = np.array([t["target"] for t in top])
    lrn = np.array([t["learned"] for t in top])
    assert abs(raw.sum() - 1) < 1e-9 and abs(tgt.sum() - 1) < 1e-9 and abs(lrn.sum() - 1) < 1e-6
    # the target: temperature 0.7, then min_p 0.05 (HuggingFace: keep p >= 0.05 max p)
    lp = np.log(raw)
    q = np.exp((lp - lp.max()) / 0.7); q /= q.sum()
    keep = q >= 0.05 * q.max()
    want = np.where(keep, q, 0); want /= want.sum()
    assert np.array_equal(tgt > 0, keep), (np.flatnonzero(tgt > 0), np.flatnonzero(keep))
    assert np.abs(tgt - want).max() < 1e-6 and x["kept"] == keep.sum()
    # the measures over the target's kept tokens
    k = tgt > 0
    kl_raw = np.sum(tgt[k] * (np.log(tgt[k]) - np.log(raw[k])))
    kl_lrn = np.sum(tgt[k] * (np.log(tgt[k]) - np.log(lrn[k])))
    assert abs(kl_raw - x["kl_raw"]) < 1e-9 and abs(kl_lrn - x["kl_learned"]) < 1e-9, (kl_raw, kl_lrn, x)
    assert abs(raw[~k].sum() - x["mass_raw"]) < 1e-9 and abs(lrn[~k].sum() - x["mass_learned"]) < 1e-9
    # LocalProbabilityTransform: lp + MLP(lp), soft-truncated, from the file's weights
    g = lp[:, None] * W["mlp.gate_proj.weight"][:, 0] + W["mlp.gate_proj.bias"]
    up = lp[:, None] * W["mlp.up_proj.weight"][:, 0] + W["mlp.up_proj.bias"]
    h = g / (1 + np.exp(-g)) * up
    l = lp + h @ W["mlp.down_proj.weight"][0] + W["mlp.down_proj.bias"][0]
    l = l + logsigmoid(l * W["truncation_scale"][0] + W["truncation_threshold"][0])
    p = np.exp(l - l.max()); p /= p.sum()
    assert np.abs(p - lrn).max() < 1e-5, np.abs(p - lrn).max()
    # the token's probabilities
    assert x["p_raw"] == raw[x["token"]] and x["p_target"] == tgt[x["token"]] and x["p_learned"] == lrn[x["token"]]
PYEOF
check "--json-top: tokens ordered by target, then raw probability" $PY - "$TMP/full.json" <<'PYEOF'
import json, sys
for x in [json.loads(l) for l in open(sys.argv[1])][:-1]:
    keys = [(-t["target"], -t["raw"], t["id"]) for t in x["top"]]
    assert keys == sorted(keys)
PYEOF

# ------------------------------------------------------------- prompt mode

A -s "$S/dist_static.gguf" -H "$TMP/h.yaml" --heuristic "min_p 0.05 temp 0.7" --seed 0 -n 6 --json "Once upon a time" > "$TMP/prompt.json" 2>"$TMP/err"
A -s "$S/dist_static.gguf" --candidates "$C" --id "$ID_MINP" --json > "$TMP/replayed.json" 2>"$TMP/err"
check "prompt mode: the same steps as replaying the candidate gen-candidates made with those settings" $PY - "$TMP/prompt.json" "$TMP/replayed.json" <<'PYEOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b) == 7
for x, y in zip(a, b):
    y.pop("id", None)
    assert x == y, (x, y)
PYEOF
printf 'Once upon a time' > "$TMP/prompt.txt"
A -s "$S/dist_static.gguf" -H "$TMP/h.yaml" --heuristic "min_p 0.05 temp 0.7" -n 6 --json -f "$TMP/prompt.txt" > "$TMP/prompt_f.json" 2>"$TMP/err"
check "prompt mode: --file reads the prompt" cmp "$TMP/prompt.json" "$TMP/prompt_f.json"
A -s "$S/dist_static.gguf" -H "$TMP/h.yaml" --heuristic "min_p 0.05 temp 0.7" -n 6 --json < "$TMP/prompt.txt" > "$TMP/prompt_s.json" 2>"$TMP/err"
check "prompt mode: stdin gives the prompt" cmp "$TMP/prompt.json" "$TMP/prompt_s.json"
expect_status "prompt mode, default settings: runs" 0 A -H "$TMP/h.yaml" --heuristic "top one" "The cat"
expect_stdout "prompt mode analyzes 20 tokens by default" '^summary: 1 record, 20 steps analyzed$'

# ------------------------------------------------------------- plots

A -s "$S/local.gguf" --candidates "$C" --id "$ID_TOP" --plot-dir "$TMP/plots" --plot-steps 3 --top 7 > /dev/null 2>"$TMP/err"
A --candidates "$C" --id "$ID_TOP" --plot-dir "$TMP/plots_nos" > /dev/null 2>"$TMP/err"
check "plots: one SVG per step, well-formed, 3 x 7 bars, 7 labels, legend and title" $PY - "$TMP/plots" "$TMP/plots_nos" <<'PYEOF'
import os, sys
import xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
def parse(path):
    root = ET.parse(path).getroot()
    cls = lambda c: [e for e in root.iter() if e.get("class") == c]
    return root, cls
d = sys.argv[1]
assert sorted(os.listdir(d)) == ["record-1-step-%d.svg" % i for i in range(3)], os.listdir(d)
for i in range(3):
    root, cls = parse(os.path.join(d, "record-1-step-%d.svg" % i))
    assert root.tag == NS + "svg"
    for c in ("bar raw", "bar target", "bar learned"):
        assert len(cls(c)) == 7, (c, len(cls(c)))
    labels = cls("label")
    assert len(labels) == 7 and all(l.text for l in labels)
    assert len(cls("legend-entry")) == 3
    title = " ".join(t.text for t in cls("title"))
    assert "step %d" % i in title and "KL(target||raw)" in title and "KL(target||learned)" in title, title
    # greedy target: the first bar is the token, target probability 1 (the full height), the others 0
    t = cls("bar target")
    assert float(t[0].get("height")) > 0 and all(float(b.get("height")) == 0 for b in t[1:])
    assert all(b.find(NS + "title") is not None for b in cls("bar raw"))
d = sys.argv[2]
assert sorted(os.listdir(d)) == ["record-1-step-%d.svg" % i for i in range(5)], os.listdir(d)
root, cls = parse(os.path.join(d, "record-1-step-0.svg"))
assert len(cls("bar raw")) == 50 and len(cls("bar target")) == 50 and not cls("bar learned")
assert len(cls("label")) == 50 and len(cls("legend-entry")) == 2
PYEOF

# a hand-made record whose tokens need escaping: <, &, a newline byte, a
# lone UTF-8 lead byte, </s> (the target does not draw them: a warning)
$PY -c "
import json
r = [json.loads(l) for l in open('$C') if json.loads(l)['id'] == '$ID_TEMP'][0]
r['tokens'] = [29966, 29987, 13, 229, 2]; r['n_tokens'] = 5; r['id'] = 'odd'
print(json.dumps(r))" > "$TMP/odd.jsonl"
expect_status "tokens that need escaping: runs" 0 A --candidates "$TMP/odd.jsonl" --plot-dir "$TMP/plots_odd" --plot-steps 5
expect_stderr "tokens the target does not draw: a warning" 'warning: 5 of the analyzed steps do not draw their recorded token again'
expect_stdout "tokens the target does not draw: marked" '^ +0  < \(29966\) .*  \*$'
expect_stdout "a newline is shown as a symbol" '^ +2  ␊ \(13\)'
expect_stdout "a byte that is not UTF-8 is shown as \\xNN" '^ +3  \\xE2 \(229\)'
check "tokens that need escaping: the SVG files parse and their titles hold the texts" $PY - "$TMP/plots_odd" <<'PYEOF'
import os, sys
import xml.etree.ElementTree as ET
want = ["<", "&", "\u240a", "\\xE2", "</s>"]
for i, w in enumerate(want):
    root = ET.parse(os.path.join(sys.argv[1], "record-1-step-%d.svg" % i)).getroot()
    title = [e for e in root.iter() if e.get("class") == "title"][0].text
    assert "token %s (id" % w in title, (i, title)
PYEOF
A --candidates "$TMP/odd.jsonl" --json > "$TMP/odd.json" 2>/dev/null
check "--json: pieces as text, drawn false" $PY -c "
import json
s = [json.loads(l) for l in open('$TMP/odd.json')][:-1]
assert [x['piece'] for x in s] == ['<', '&', '\n', '\ufffd', '</s>'], [x['piece'] for x in s]
assert not any(x['drawn'] for x in s)"

# ------------------------------------------------------------- determinism

A -s "$S/dist_static.gguf" --candidates "$C" -t 1 --plot-dir "$TMP/d1" --plot-steps 2 > "$TMP/t1.txt" 2>/dev/null
A -s "$S/dist_static.gguf" --candidates "$C" -t 2 --plot-dir "$TMP/d2" --plot-steps 2 > "$TMP/t2.txt" 2>/dev/null
check "--threads 1 and 2: byte-identical tables" cmp "$TMP/t1.txt" "$TMP/t2.txt"
check "--threads 1 and 2: byte-identical plots" diff -r "$TMP/d1" "$TMP/d2"
A -s "$S/dist_static.gguf" --candidates "$C" -t 2 --json > "$TMP/j2.json" 2>/dev/null
A -s "$S/dist_static.gguf" --candidates "$C" -t 1 --json > "$TMP/j1.json" 2>/dev/null
check "--threads 1 and 2: byte-identical JSON" cmp "$TMP/j1.json" "$TMP/j2.json"
A -s "$S/local.gguf" --candidates - < "$C" > "$TMP/stdin.txt" 2>/dev/null
check "--candidates - reads stdin" cmp "$TMP/text" "$TMP/stdin.txt"

# ------------------------------------------------------------- errors

(head -1 "$C"; printf '{"id": x}\n') > "$TMP/bad_json.jsonl"
expect_status "a malformed line: exit status 1" 1 A --candidates "$TMP/bad_json.jsonl"
expect_stderr "a malformed line: FILE:LINE" '^analyze-sampler: [^ ]*bad_json\.jsonl:2: invalid JSON'
head -1 "$C" | $PY -c "import json,sys; r = json.loads(sys.stdin.read()); del r['tokens']; print(json.dumps(r))" > "$TMP/no_tokens.jsonl"
expect_status "a record without tokens: exit status 1" 1 A --candidates "$TMP/no_tokens.jsonl"
expect_stderr "a record without tokens: FILE:LINE and the field" 'no_tokens\.jsonl:1: field "tokens": missing$'
head -1 "$C" | sed 's/"sha256":"[0-9a-f]*"/"sha256":"0000"/' > "$TMP/other_model.jsonl"
expect_status "a record of another model: exit status 1" 1 A --candidates "$TMP/other_model.jsonl"
expect_stderr "a record of another model: FILE:LINE and the field" 'other_model\.jsonl:1: field "model\.sha256": the record was generated by model 0000\.\.\., not by '
head -1 "$C" | sed 's/"name":"temperature"/"name":"nucleus"/' > "$TMP/bad_proc.jsonl"
expect_status "a record with an unknown processor: exit status 1" 1 A --candidates "$TMP/bad_proc.jsonl"
expect_stderr "a record with an unknown processor: FILE:LINE and the field" 'bad_proc\.jsonl:1: field "heuristic": processor 1 \(nucleus\): unknown processor'
head -1 "$C" | $PY -c "import json,sys; r = json.loads(sys.stdin.read()); r['tokens'][2] = 99999; print(json.dumps(r))" > "$TMP/big_id.jsonl"
expect_status "a token id out of the vocabulary: exit status 1" 1 A --candidates "$TMP/big_id.jsonl"
expect_stderr "a token id out of the vocabulary: FILE:LINE and the field" 'big_id\.jsonl:1: field "tokens": element 2 is not a token id of this model'
expect_status "a record longer than --ctx: exit status 1" 1 A --candidates "$C" --ctx 6
expect_stderr "a record longer than --ctx: FILE:LINE and why" 'c\.jsonl:1: prompt \([0-9]+ tokens\) and generation \(6\) exceed the context of 6'
printf '[1]\n' > "$TMP/array.jsonl"
expect_status "a line that is not an object: exit status 1" 1 A --candidates "$TMP/array.jsonl"
expect_stderr "a line that is not an object: FILE:LINE" 'array\.jsonl:1: record must be a JSON object'
: > "$TMP/empty.jsonl"
expect_status "no records: exit status 1" 1 A --candidates "$TMP/empty.jsonl"
expect_stderr "no records: said so" 'empty\.jsonl: no candidate records'
expect_status "--id that no record has: exit status 1" 1 A --candidates "$C" --id nope
expect_stderr "--id that no record has: said so" 'c\.jsonl: no record with id "nope"'
expect_status "an unknown heuristic name: exit status 1" 1 A -H "$TMP/h.yaml" --heuristic nope "hi"
expect_stderr "an unknown heuristic name: names the file and the name" 'h\.yaml: no pipeline named "nope"'
expect_status "a model as the sampler: exit status 1" 1 A -s "$M" --candidates "$C"
expect_stderr "a model as the sampler: names the file and says what is wrong" 'tiny-spm-q8_0\.gguf: general\.architecture is "llama", not "asn-sampler" \(not a sampler file\)'
printf 'not a gguf\n' > "$TMP/junk.gguf"
expect_status "a sampler file that is not GGUF: exit status 1" 1 A -s "$TMP/junk.gguf" --candidates "$C"
expect_stderr "a sampler file that is not GGUF: names it" 'junk\.gguf: '
expect_status "a candidates file that does not exist: exit status 1" 1 A --candidates "$TMP/nope.jsonl"
expect_status "no --model: usage error" 2 "$BIN/analyze-sampler" --candidates "$C"
expect_status "neither --candidates nor a heuristic: usage error" 2 A "hi"
expect_status "--candidates with a prompt: usage error" 2 A --candidates "$C" "hi"
expect_status "--json-top without --json: usage error" 2 A --candidates "$C" --json-top 3
expect_status "--top 0: usage error" 2 A --candidates "$C" --top 0
