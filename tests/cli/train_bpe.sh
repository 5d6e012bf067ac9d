#!/bin/sh
# train-bpe from the command line: --help; on tests/data/bpe/train.txt the
# tokens and merges are exactly those of a naive Python trainer written here
# (split by the GPT-2 regex with classes from unicodedata, every pair
# recounted at every step), for both pre-tokenizers and for two files; the
# same input twice, or through stdin, gives a byte-identical file; --check;
# the file works with the tokenize tool; special tokens; errors with their
# exit codes.
. "$(dirname "$0")/../lib/cli.sh"

PY=/usr/bin/python3
TB="$BIN/train-bpe"
D="$DATA/bpe"

# ------------------------------------------------------------ the basics

expect_status "--help: exit status 0" 0 "$TB" --help
for o in --output --vocab-size --pre --bos --eos --pad --special --min-count --check; do
    if grep -q -- "$o" "$TMP/out"; then ok "--help: mentions $o"; else not_ok "--help: mentions $o" "missing"; fi
done

expect_status "train: exit status 0" 0 "$TB" -n 512 -o "$TMP/a.gguf" "$D/train.txt"
if [ -s "$TMP/err" ]; then not_ok "train: silent on success" "$(head -c 300 "$TMP/err")"; else ok "train: silent on success"; fi
expect_status "train again: exit status 0" 0 "$TB" -n 512 -o "$TMP/b.gguf" "$D/train.txt"
check "the same input gives a byte-identical file" cmp "$TMP/a.gguf" "$TMP/b.gguf"
expect_status "stdin: exit status 0" 0 sh -c '"$1" -n 512 -o "$2" < "$3"' sh "$TB" "$TMP/c.gguf" "$D/train.txt"
check "stdin gives the same file" cmp "$TMP/a.gguf" "$TMP/c.gguf"
expect_status "-v: exit status 0" 0 "$TB" -n 512 -v -o "$TMP/c.gguf" - < "$D/train.txt"
expect_stderr "-v: statistics" "42223 bytes.*254 merges.*512 tokens.*bytes/token"

expect_status "--check: exit status 0" 0 "$TB" -n 512 --check -o "$TMP/d.gguf" "$D/train.txt"
expect_stderr "--check: bytes per token, as predicted" "42223 bytes -> [0-9]+ tokens \([0-9.]+ bytes/token\), as training predicted"
check "--check: the same file" cmp "$TMP/a.gguf" "$TMP/d.gguf"
expect_status "--check, gpt-2, two files: exit status 0" 0 "$TB" -n 700 --pre gpt-2 --check -o "$TMP/s.gguf" "$D/train.txt" "$D/valid.txt"

# the vocab through the tokenize tool: BOS (id 510 = 512 - 2) first, then the text back
expect_status "tokenize with the vocab: exit status 0" 0 "$BIN/tokenize" -m "$TMP/a.gguf" --pieces "In the beginning God created the heaven and the earth."
check "tokenize: BOS first, pieces give the text back" "$PY" -c '
import json, sys
objs = json.load(open(sys.argv[1]))
assert objs[0]["id"] == 510, objs[0]
text = "".join(o["piece"] for o in objs[1:])
assert text == "In the beginning God created the heaven and the earth.", text
assert len(objs) < 20, len(objs)
' "$TMP/out"

# ------------------------------------------------ against a naive trainer

cat > "$TMP/gguf_kv.py" <<'EOF'
# read_gguf(path) -> {key: value}: the metadata of a GGUF file.
import struct

def read_gguf(path):
    d = open(path, "rb").read()
    assert d[:4] == b"GGUF", "not a GGUF"
    _, _, nkv = struct.unpack_from("<IQQ", d, 4)
    pos = 24
    fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    def val(t):
        nonlocal pos
        if t == 8:
            n, = struct.unpack_from("<Q", d, pos); pos += 8 + n
            return d[pos - n:pos].decode("utf-8")
        if t == 9:
            et, n = struct.unpack_from("<IQ", d, pos); pos += 12
            return [val(et) for _ in range(n)]
        v, = struct.unpack_from("<" + fmt[t], d, pos); pos += struct.calcsize(fmt[t])
        return v
    kv = {}
    for _ in range(nkv):
        k = val(8); t, = struct.unpack_from("<I", d, pos); pos += 4
        kv[k] = val(t)
    return kv
EOF

cat > "$TMP/ref.py" <<'EOF'
# usage: ref.py VOCAB.gguf VOCAB_SIZE PRE N_SPECIAL TEXT...
import collections, os, re, sys, unicodedata
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_kv import read_gguf

# GPT-2's bytes_to_unicode (encoder.py)
bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
cs = bs[:]
n = 0
for b in range(2**8):
    if b not in bs:
        bs.append(b)
        cs.append(2**8 + n)
        n += 1
enc = {b: chr(c) for b, c in zip(bs, cs)}
assert enc[ord(" ")] == "\u0120" and enc[ord("\n")] == "\u010a"

# \s as llama.cpp and PCRE2 have it; \p{L}, \p{N} from unicodedata, for the characters present
WS = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
def passes(texts, pre):
    chars = sorted(set("".join(texts)) | set("a0"))
    esc = lambda cs: "".join(re.escape(c) for c in cs)
    L = esc(c for c in chars if unicodedata.category(c)[0] == "L")
    N = esc(c for c in chars if unicodedata.category(c)[0] == "N")
    S = esc(WS)
    gpt2 = re.compile(rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{S}{L}{N}]+|[{S}]+(?![^{S}])|[{S}]+")
    return [re.compile(rf"[{N}]"), gpt2] if pre == "smollm" else [gpt2]

def split(rx, s):
    out, pos = [], 0
    for m in rx.finditer(s):
        if m.start() > pos:
            out.append(s[pos:m.start()])
        out.append(m.group()); pos = m.end()
    if pos < len(s):
        out.append(s[pos:])
    return out

path, size, pre, n_special = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
texts = [open(p, encoding="utf-8", newline="").read() for p in sys.argv[5:]]
counts = collections.Counter()
for t in texts:
    pieces = [t]
    for rx in passes(texts, pre):
        pieces = [q for p in pieces for q in split(rx, p)]
    counts.update(p.encode("utf-8") for p in pieces)

vocab = [bytes([i]) for i in range(256)]
known = set(vocab)
words = [[list(w), c] for w, c in counts.items() if len(w) > 1]
merges = []
while len(vocab) < size - n_special:
    stats = collections.Counter()
    for syms, c in words:
        for a, b in zip(syms, syms[1:]):
            stats[a, b] += c
    # most frequent; ties: smaller left bytes, then smaller right bytes;
    # a pair whose text is already a token is skipped
    best = min(((-c, vocab[a], vocab[b], a, b) for (a, b), c in stats.items()
                if c >= 2 and vocab[a] + vocab[b] not in known), default=None)
    if best is None:
        break
    a, b = best[3], best[4]
    vocab.append(vocab[a] + vocab[b]); known.add(vocab[-1]); merges.append((a, b))
    new = len(vocab) - 1
    for wd in words:
        syms, i, out = wd[0], 0, []
        while i < len(syms):
            if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                out.append(new); i += 2
            else:
                out.append(syms[i]); i += 1
        wd[0] = out

u = lambda bt: "".join(enc[x] for x in bt)
kv = read_gguf(path)
assert kv["tokenizer.ggml.model"] == "gpt2" and kv["tokenizer.ggml.pre"] == pre, (kv["tokenizer.ggml.model"], kv["tokenizer.ggml.pre"])
want = [u(vocab[a]) + " " + u(vocab[b]) for a, b in merges]
got = kv["tokenizer.ggml.merges"]
first = next((i for i, (x, y) in enumerate(zip(want, got)) if x != y), None)
assert want == got, f"{len(got)} merges, expected {len(want)}; first difference at rank {first}: {got[first] if first is not None else ''!r} vs {want[first] if first is not None else ''!r}"
toks = kv["tokenizer.ggml.tokens"]
assert toks[:len(vocab)] == [u(t) for t in vocab], "token texts differ"
assert len(toks) == len(vocab) + n_special, (len(toks), len(vocab), n_special)
types = kv["tokenizer.ggml.token_type"]
assert types == [1] * len(vocab) + [3] * n_special, "token types"
EOF
check "smollm (the default): tokens and merges of a naive trainer" "$PY" "$TMP/ref.py" "$TMP/a.gguf" 512 smollm 2 "$D/train.txt"
check "gpt-2, two files: tokens and merges of a naive trainer" "$PY" "$TMP/ref.py" "$TMP/s.gguf" 700 gpt-2 2 "$D/train.txt" "$D/valid.txt"

# ---------------------------------------------------------- special tokens

expect_status "--pad, --special, no BOS: exit status 0" 0 "$TB" -n 400 --bos "" --pad "<|pad|>" --special "<|user|>" --special "<|bot|>" -o "$TMP/p.gguf" "$D/train.txt"
check "special tokens: EOS, pad, then --special in order; ids in the metadata" "$PY" -c '
import sys
sys.path.insert(0, sys.argv[1])
from gguf_kv import read_gguf
kv = read_gguf(sys.argv[2])
t = kv["tokenizer.ggml.tokens"]
assert len(t) == 400, len(t)
assert t[-4:] == ["<|end_of_text|>", "<|pad|>", "<|user|>", "<|bot|>"], t[-4:]
assert kv["tokenizer.ggml.eos_token_id"] == 396 and kv["tokenizer.ggml.padding_token_id"] == 397, kv
assert "tokenizer.ggml.bos_token_id" not in kv and kv["tokenizer.ggml.add_bos_token"] is False, kv
' "$TMP" "$TMP/p.gguf"

expect_status "--min-count too high: exit status 0" 0 "$TB" --min-count 100000 -o "$TMP/m.gguf" "$D/train.txt"
expect_stderr "--min-count too high: a warning, a smaller vocab" "warning: only 0 merges reach --min-count 100000: 258 tokens"

# ------------------------------------------------------------------ errors

printf 'fine\nbad \377 here\n' > "$TMP/bad.txt"
expect_status "invalid UTF-8: exit status 1" 1 "$TB" -o "$TMP/x.gguf" "$TMP/bad.txt"
expect_stderr "invalid UTF-8: file, line and column" "bad.txt: line 2, column 5: invalid UTF-8"
if [ -e "$TMP/x.gguf" ]; then not_ok "invalid UTF-8: nothing written" "x.gguf exists"; else ok "invalid UTF-8: nothing written"; fi
expect_status "missing file: exit status 1" 1 "$TB" -o "$TMP/x.gguf" "$TMP/nope.txt"
expect_stderr "missing file: named" "nope.txt"
: > "$TMP/empty.txt"
expect_status "empty input: exit status 1" 1 "$TB" -o "$TMP/x.gguf" "$TMP/empty.txt"
expect_stderr "empty input: says so" "no text"
expect_status "unknown --pre: exit status 2" 2 "$TB" --pre llama3 -o "$TMP/x.gguf" "$D/train.txt"
expect_stderr "unknown --pre: names it" "llama3"
expect_status "--vocab-size below 256: exit status 2" 2 "$TB" -n 100 -o "$TMP/x.gguf" "$D/train.txt"
expect_status "--vocab-size with no room for BOS and EOS: exit status 2" 2 "$TB" -n 257 -o "$TMP/x.gguf" "$D/train.txt"
expect_status "--min-count 0: exit status 2" 2 "$TB" --min-count 0 -o "$TMP/x.gguf" "$D/train.txt"
expect_status "no --output: exit status 2" 2 "$TB" "$D/train.txt"
expect_stderr "no --output: says so" "output"
expect_status "a special token with a space: exit status 1" 1 "$TB" --special "a b" -o "$TMP/x.gguf" "$D/train.txt"
expect_stderr "a special token with a space: says so" "space"
expect_status "unwritable output: exit status 1" 1 "$TB" -o "$TMP/no/such/dir/x.gguf" "$D/train.txt"
