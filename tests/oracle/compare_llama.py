#!/usr/bin/python3
"""The fixture models of every architecture through libllama, against the
PyTorch float64 logits their generators stored (tests/data/models/*.json):
a second, independent check that asn's reading of each architecture's GGUF
(tensor layouts, rotary conventions, windows, caps) is llama.cpp's.

    make oracle-llama LLAMA_DIR=path/to/llama.cpp   (built with cmake in build/)

Encoders (bert) compare their mean-pooled embedding. Tolerances: F32
weights 1e-4 (gemma and bert 2e-3: ggml's GELU is the tanh form, read from
an f16 table, where transformers' BERT uses erf); F16 and quantized weights NMSE 2e-2 (libllama multiplies them with
f16 or 8-bit activations). A model libllama does not run the same way is reported, not
failed: llama.cpp ignores a llama file's sliding window."""
import json, os, subprocess, sys
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(HERE), "data", "models")
KNOWN_DIFFERENT = {"llama-swa-f16": "llama.cpp ignores llama.attention.sliding_window"}

def main(prog):
    bad = 0
    print("%-22s %10s %10s  %s" % ("model", "max |diff|", "NMSE", "verdict"))
    for f in sorted(os.listdir(MODELS)):
        if not f.endswith(".json"):
            continue
        name = f[:-5]
        ref = json.load(open(os.path.join(MODELS, f)))
        embed = "embed" in ref and "logits" not in ref  # an encoder: its mean-pooled embedding
        if "logits" not in ref and not embed:
            continue
        r = np.array([ref["embed"]] if embed else ref["logits"])
        run = subprocess.run([prog] + (["--embed"] if embed else []) + [os.path.join(MODELS, name + ".gguf")] +
                             [str(t) for t in ref["tokens"]], capture_output=True, text=True)
        if run.returncode:
            print("%-22s %10s %10s  libllama: %s" % (name, "-", "-", run.stderr.strip()[-80:]))
            continue
        got = np.array([[float(x) for x in line.split()] for line in run.stdout.splitlines()])
        diff = np.abs(got - r).max()
        nmse = ((got - r) ** 2).sum() / (r ** 2).sum()
        quant = any(k in name for k in ("q4", "q8", "f16"))
        ok = nmse <= 2e-2 if quant else diff <= (2e-3 if name.startswith(("gemma", "bert")) else 1e-4)
        verdict = "ok" if ok else KNOWN_DIFFERENT.get(name, "DIFFERENT")
        bad += verdict == "DIFFERENT"
        print("%-22s %10.2g %10.2g  %s" % (name, diff, nmse, verdict))
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
