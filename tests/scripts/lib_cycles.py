#!/usr/bin/python3
"""Dependency cycles among the files and folders of lib/.

    lib_cycles.py OBJDIR [--edges]

Three graphs, each printed as its cycles (strongly connected components of
more than one node), one per line, "KIND: a b c" with the names sorted:

  include  a lib/ file -> the lib/ header it #includes ("asn/x.h",
           "learn/x.h" or a header of its own folder); KIND "include".
  file     an object of lib/ -> the object defining a symbol it uses
           (nm: undefined in the one, defined in the other); the nodes are
           the sources, lib/AREA/NAME.c; KIND "file".
  area     the file graph with each file replaced by its folder
           (lib/sampling, lib/learn, ...); KIND "area".

OBJDIR is the build's object folder (build/obj, or build/san/build/obj for
the sanitizer build). --edges prints the edges of the file graph too
("edge: a -> b (symbol)"). Exit status 0 whatever the cycles; the test
(tests/cli/lib_cycles.sh) decides which are allowed.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(ROOT, "lib")


def sccs(nodes, edges):
    """Tarjan's algorithm; returns the components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(out)


def include_graph():
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    nodes, edges = set(), {}
    for d, _, files in os.walk(LIB):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, ROOT)
            nodes.add(rel)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for name in inc.findall(text):
                for cand in (os.path.join(d, name), os.path.join(LIB, name)):
                    if os.path.isfile(cand):
                        edges.setdefault(rel, set()).add(os.path.relpath(cand, ROOT))
                        break
    return nodes, edges


def nm(obj, *flags):
    r = subprocess.run(["nm", "-P", *flags, obj], capture_output=True, text=True, check=True)
    return [line.split() for line in r.stdout.splitlines() if line.strip()]


def file_graph(objdir):
    base = os.path.join(objdir, "lib")
    objs = {}
    for d, _, files in os.walk(base):
        for f in files:
            if f.endswith(".o"):
                path = os.path.join(d, f)
                objs["lib/" + os.path.relpath(path, base)[:-2] + ".c"] = path
    if not objs:
        sys.exit("lib_cycles.py: no objects under %s" % base)
    defs, uses = {}, {}
    for src, obj in objs.items():
        for fields in nm(obj, "--defined-only", "--extern-only"):
            defs.setdefault(fields[0], src)
        uses[src] = {fields[0] for fields in nm(obj, "--undefined-only")}
    edges, why = {}, {}
    for src, syms in uses.items():
        for s in sorted(syms):
            d = defs.get(s)
            if d and d != src:
                edges.setdefault(src, set()).add(d)
                why.setdefault((src, d), s)
    return set(objs), edges, why


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: lib_cycles.py OBJDIR [--edges]")
    nodes, edges = include_graph()
    for c in sccs(nodes, edges):
        print("include: " + " ".join(c))
    nodes, edges, why = file_graph(sys.argv[1])
    for c in sccs(nodes, edges):
        print("file: " + " ".join(c))
    area = lambda f: os.path.dirname(f)
    anodes = {area(n) for n in nodes}
    aedges = {}
    for a, bs in edges.items():
        for b in bs:
            if area(a) != area(b):
                aedges.setdefault(area(a), set()).add(area(b))
    for c in sccs(anodes, aedges):
        print("area: " + " ".join(c))
    if "--edges" in sys.argv[2:]:
        for (a, b), s in sorted(why.items()):
            print("edge: %s -> %s (%s)" % (a, b, s))


if __name__ == "__main__":
    main()
