#!/usr/bin/python3
"""compare_heuristics.py — check that two heuristics YAML files hold the same
pipelines, read independently of asn with PyYAML (python3-yaml).

    compare_heuristics.py [--official FAMILY] ACTUAL EXPECTED

Pipelines must match one by one: same names in the same order, same weight,
same processor names in the same order, same parameter keys and values, with
the Python type of every value (int vs float) preserved. Prints the first
mismatch and exits 1; prints "N pipelines match" and exits 0.

--official FAMILY rewrites EXPECTED's "official temp T" (or "official_temp_T") rows first, so the
qwen-family reference output can stand for any family's: FAMILY's official
defaults follow the temperature, and for family none the rows are dropped.
"""
import argparse
import sys

import yaml

# The model families' official sampling defaults, as the reference generator
# writes them after the temperature.
OFFICIAL = {
    "llama": [("top_p", {"top_p": 0.9})],
    "gemma": [("top_p", {"top_p": 0.95}), ("top_k", {"top_k": 64})],
    "qwen": [("top_p", {"top_p": 0.8}), ("top_k", {"top_k": 20})],
    "none": None,
}


def pipelines(path):
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    if isinstance(doc, dict) and "sampling_pipelines" in doc:
        return doc["sampling_pipelines"]
    return [doc]  # one bare pipeline {name, weight, processors}


def refamily(pls, family):
    out = []
    for p in pls:
        name = str(p.get("name", ""))
        if not (name.startswith("official temp ") or name.startswith("official_temp_")):
            out.append(p)
            continue
        if OFFICIAL[family] is None:
            continue
        procs = [p["processors"][0]]  # the temperature
        procs += [{"name": n, "params": dict(params)} for n, params in OFFICIAL[family]]
        out.append(dict(p, processors=procs))
    return out


def show(v):
    return "%r (%s)" % (v, type(v).__name__)


def same(a, b):
    return type(a) is type(b) and a == b


def first_mismatch(actual, expected):
    for i, (a, b) in enumerate(zip(actual, expected)):
        where = "pipeline %d (%r)" % (i + 1, b.get("name"))
        if not same(a.get("name"), b.get("name")):
            return "%s: name %s, expected %s" % (where, show(a.get("name")), show(b.get("name")))
        if not same(a.get("weight"), b.get("weight")):
            return "%s: weight %s, expected %s" % (where, show(a.get("weight")), show(b.get("weight")))
        pa, pb = a.get("processors") or [], b.get("processors") or []
        if len(pa) != len(pb):
            return "%s: %d processors, expected %d:\n  got      %r\n  expected %r" % (
                where, len(pa), len(pb), pa, pb)
        for j, (x, y) in enumerate(zip(pa, pb)):
            pw = "%s: processor %d" % (where, j + 1)
            if x.get("name") != y.get("name"):
                return "%s: name %r, expected %r" % (pw, x.get("name"), y.get("name"))
            xp, yp = x.get("params") or {}, y.get("params") or {}
            if sorted(xp) != sorted(yp):
                return "%s (%s): parameter keys %s, expected %s" % (pw, y["name"], sorted(xp), sorted(yp))
            for k in yp:
                if not same(xp[k], yp[k]):
                    return "%s (%s): parameter %r is %s, expected %s" % (
                        pw, y["name"], k, show(xp[k]), show(yp[k]))
    if len(actual) != len(expected):
        longer, which = (actual, "extra") if len(actual) > len(expected) else (expected, "missing")
        n = min(len(actual), len(expected))
        return "%d pipelines, expected %d; first %s: %r" % (
            len(actual), len(expected), which, longer[n].get("name"))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--official", choices=sorted(OFFICIAL), help="rewrite EXPECTED's official rows for this family")
    ap.add_argument("actual")
    ap.add_argument("expected")
    args = ap.parse_args()
    actual, expected = pipelines(args.actual), pipelines(args.expected)
    if args.official:
        expected = refamily(expected, args.official)
    diff = first_mismatch(actual, expected)
    if diff:
        print("%s differs from %s: %s" % (args.actual, args.expected, diff))
        return 1
    print("%d pipelines match" % len(actual))
    return 0


if __name__ == "__main__":
    sys.exit(main())
