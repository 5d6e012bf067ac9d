#!/usr/bin/python3
"""Perplexity of a unigram model (token frequencies of the training text,
add-one smoothed) on held-out text: the baseline the demo models' validation
perplexity is compared with. Tokenizes with asn's own tokenizer:
    scripts/unigram-ppl.py VOCAB.gguf TRAIN.txt VALID.txt [BIN]"""
import json, math, subprocess, sys

vocab, train, valid = sys.argv[1:4]
bindir = sys.argv[4] if len(sys.argv) > 4 else "bin"

def ids(path):
    out = subprocess.run([bindir + "/tokenize", "-m", vocab, "--no-bos", "-f", path],
                         check=True, capture_output=True).stdout
    return json.loads(out)

counts = {}
for t in ids(train):
    counts[t] = counts.get(t, 0) + 1
total = sum(counts.values())
size = max(max(counts) + 1, 4096)
v = ids(valid)
nll = -sum(math.log((counts.get(t, 0) + 1) / (total + size)) for t in v) / len(v)
print(json.dumps({"tokens": len(v), "nll": nll, "ppl": math.exp(nll)}))
