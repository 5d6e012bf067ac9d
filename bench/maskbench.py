#!/usr/bin/env python3
"""maskbench.py — JSONSchemaBench's MaskBench (guidance-ai/jsonschemabench,
maskbench/data: one JSON file per schema, {"schema", "tests": [{"data",
"valid"}]}) through `constrain`, as its README reports the engines: the
share of schemas compiled, of their valid instances accepted (every token
of the instance's tokenization in its mask in turn, the value complete at
its end) and of their invalid instances rejected, compile time per schema
and mask time per token (p50, p99).

Instances are written as compact JSON (json.dumps with separators ",", ":"
and ensure_ascii=False), properties in the instance's order. Schemas go to
`constrain` in chunks under a time limit; a chunk that runs out is redone
one schema at a time, and a schema that still runs out counts as not
compiled ("timeout").

    python3 bench/maskbench.py --constrain bin/constrain -m VOCAB.gguf DIR
        [--limit N] [--every K] [--chunk N] [--timeout S] [--check] [--out FILE]
        [--compile-only]

Files are taken in the order of the SHA-1 of their names (a fixed
shuffle, so that any prefix mixes the sources); --every K takes every K-th
of them, --limit N the first N of those, --budget S starts no chunk after
S seconds (the figures are then those of the schemas done),
--compile-only compiles each schema and checks none of its instances (the
share compiled, quickly). --check exits 1 unless every compiled schema's valid instances are
accepted and no invalid instance is (the goals of the CI sample).
Standard library only."""
import argparse
import collections
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def run_chunk(args, files, tmp, timeout):
    """Records of constrain for these schema files, or None on timeout."""
    recs = []
    for f in files:
        with open(os.path.join(args.dir, f), encoding="utf-8") as fh:
            d = json.load(fh)
        tests = [] if args.compile_only else d.get("tests") or []
        base = {"json_schema": d["schema"], "file": f}
        if not tests:  # compiled or not, no instance
            recs.append(dict(base, text="", expect=None))
        for i, t in enumerate(tests):
            text = json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False)
            recs.append(dict(base, text=text, expect=bool(t["valid"]), test=i))
    path = os.path.join(tmp, "in.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        for r in recs:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    try:
        p = subprocess.run([args.constrain, "-m", args.model, "--times", "-q", path], capture_output=True,
                           timeout=timeout, text=True)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        sys.exit("constrain failed: " + p.stderr[-500:])
    return [json.loads(l) for l in p.stdout.splitlines()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--constrain", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--budget", type=float, default=0)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--reasons", type=int, default=12, help="how many reasons for not compiling to list (default 12)")
    ap.add_argument("--compile-only", action="store_true", help="compile each schema, check no instance")
    ap.add_argument("--out", help="write every record constrain wrote of a compiled schema's instances "
                    "(without per-token times; with --compile-only, every schema's) here")
    args = ap.parse_args()
    files = sorted((f for f in os.listdir(args.dir) if f.endswith(".json")),
                   key=lambda f: hashlib.sha1(f.encode()).hexdigest())[:: args.every]
    if args.limit:
        files = files[: args.limit]
    schemas = {}  # file -> compiled, error, compile_ms
    valid = [0, 0]  # accepted, total (compiled schemas)
    invalid = [0, 0]  # rejected, total
    compile_ms, mask_us = [], []
    wrong = []
    errors = collections.Counter()
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    with tempfile.TemporaryDirectory() as tmp:
        todo = [files[i : i + args.chunk] for i in range(0, len(files), args.chunk)]
        t0 = time.time()
        while todo and not (args.budget and time.time() - t0 > args.budget):
            chunk = todo.pop(0)
            recs = run_chunk(args, chunk, tmp, args.timeout if len(chunk) > 1 else args.timeout / 4)
            if recs is None:
                if len(chunk) > 1:
                    todo[:0] = [[f] for f in chunk]
                else:
                    schemas[chunk[0]] = {"compiled": False, "error": "timeout"}
                    errors["timeout"] += 1
                continue
            for r in recs:
                f = r["file"]
                if f not in schemas:
                    schemas[f] = {"compiled": r["compiled"]}
                    if r["compiled"]:
                        compile_ms.append(r["compile_ms"])
                    else:
                        msg = r["error"]
                        key = msg.rsplit(": ", 1)[-1] if "unsupported" in msg else msg.split(": ", 3)[-1][:60]
                        errors[key] += 1
                if out and args.compile_only:
                    out.write(json.dumps(r, ensure_ascii=False) + "\n")
                if not r["compiled"] or r["expect"] is None:
                    continue
                mask_us.extend(r.get("mask_us") or [])
                if r["expect"]:
                    valid[1] += 1
                    valid[0] += r["valid"]
                    if not r["valid"]:
                        wrong.append(("valid instance rejected", f, r["test"], r["refused_at"], r["text"][:80]))
                else:
                    invalid[1] += 1
                    invalid[0] += not r["valid"]
                    if r["valid"]:
                        wrong.append(("invalid instance accepted", f, r["test"], None, r["text"][:80]))
                if out:
                    r.pop("mask_us", None)
                    out.write(json.dumps(r, ensure_ascii=False) + "\n")
            print("maskbench: %d/%d schemas" % (len(schemas), len(files)), file=sys.stderr, flush=True)
    n = len(schemas)
    if n < len(files):
        print("(budget spent: %d of %d schemas)" % (n, len(files)))
    nc = sum(s["compiled"] for s in schemas.values())
    share = lambda a, b: "%d/%d (%.1f%%)" % (a, b, 100.0 * a / b if b else float("nan"))
    print("schemas compiled:            %s" % share(nc, n))
    print("valid instances accepted:    %s" % share(*valid))
    print("invalid instances rejected:  %s" % share(*invalid))
    print("compile ms p50 / p99:        %.2f / %.2f" % (pct(compile_ms, 0.5), pct(compile_ms, 0.99)))
    print("mask us p50 / p99 (%d masks): %.1f / %.1f" % (len(mask_us), pct(mask_us, 0.5), pct(mask_us, 0.99)))
    print("most common reasons a schema did not compile:")
    for k, v in errors.most_common(args.reasons):
        print("  %5d  %s" % (v, k))
    for w in wrong[:20]:
        print("  %s: %s test %s (refused at token %s): %s" % w)
    if args.check and (valid[0] != valid[1] or invalid[0] != invalid[1]):
        sys.exit(1)


if __name__ == "__main__":
    main()
