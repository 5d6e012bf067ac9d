#!/usr/bin/env python3
"""check_refs.py ROOT [FILE...] — every file reference in the tree's comments
and docs resolves. Prints "FILE:LINE: REF" per dangling reference and exits
1 if there is any.

A reference is a path under one of the repository's top folders
("lib/io/json.c", "docs/sampling.md", "tests/cli/"), a bare source or doc
name ("proc.c", "gtext.h", "tools.md") in a comment of a C file or anywhere
in the other text files, or "semantics doc §N". A path resolves when the
file or folder exists; a bare name when some file of the tree has that
name. Not references: system and library headers (any name some file
includes with <...>), paths of other projects (EXTERNAL), templates
("lib/model/arch_NAME.c", "tests/unit/test_*.c"), and member accesses in
code ("S.c"). FILEs (default: every text file under ROOT) are checked
against ROOT's tree."""
import fnmatch
import os
import re
import sys

TOP = "lib|tools|tests|docs|scripts|schemas|configs|examples|bench|pipelines"
TEXT = re.compile(r"(\.(c|h|md|sh|py|yaml|yml|txt|in)|Makefile)$")
SKIP_DIRS = {".git", "build", "bin", "node_modules", "__pycache__"}
# Files of other projects that comments and docs cite by their own paths.
EXTERNAL = (
    "configs/data_generation",     # the research pipeline's heuristics generators
    "scripts/gen-unicode-data.py",  # llama.cpp's
    "tools/server",                 # llama.cpp's server
    "tests/fuzz/regressions",       # made by make fuzz when a target finds an input
    "lib/asn/x.h", "lib/asn/y.h",   # a made-up tree that tests/cli/lib_cycles.sh builds
    "lib/a", "lib/b",
)
EXTERNAL_NAMES = {
    "CHANGELOG.md",   # sacrebleu's, read from its checkout by a fixture script
    "llm.c",          # the project of that name
    "ggml-common.h", "ggml-quants.c",  # llama.cpp's
    "lapack.h", "hwcap.h", "cpuid.h",
}
# References inside files whose owners are rewriting them; remove an entry
# as soon as its reference is gone (the check says when one is stale).
PENDING = set()

PATH = re.compile(r"(?<![\w./$-])((?:%s)/[A-Za-z0-9_./*%%-]*[A-Za-z0-9_*])" % TOP)
TEMPLATE = re.compile(r"(^|[/_.-])(NAME|SCRIPT|TASK|FILE|KIND|ARCH)([/_.-]|$)")
NAME = re.compile(r"(?<![\w./$>-])([A-Za-z0-9_-]+\.(?:c|h|md))(?![\w-])")
SEMANTICS = re.compile(r"semantics doc §")
INCLUDE = re.compile(r"#\s*include\s*<([^>]+)>")


def tree(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        for f in files:
            out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def comments(text):
    """The comments of C text, other characters blanked (lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(text[i:j])
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        else:
            out.append(text[i] if text[i] == "\n" else " ")
            i += 1
    return "".join(out)


def main():
    root = sys.argv[1]
    files = tree(root)
    have = set(files)
    dirs = set()
    for f in files:
        d = os.path.dirname(f)
        while d and d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    names = {os.path.basename(f) for f in files}
    me = os.path.relpath(os.path.abspath(__file__), os.path.abspath(root))
    check = sys.argv[2:] or [f for f in files if TEXT.search(f) and f != me]
    texts = {}
    for f in check:
        try:
            with open(os.path.join(root, f) if not os.path.isabs(f) else f, encoding="utf-8") as fh:
                texts[f] = fh.read()
        except (UnicodeDecodeError, OSError):
            continue
    system = set()
    for f in [f for f in files if f.endswith((".c", ".h"))]:
        try:
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                system |= {os.path.basename(x) for x in INCLUDE.findall(fh.read())}
        except (UnicodeDecodeError, OSError):
            pass
    bad, used = [], set()

    def dangling(f, ln, ref):
        key = (f, ref)
        if key in PENDING:
            used.add(key)
        else:
            bad.append("%s:%d: %s" % (f, ln, ref))

    for f, text in sorted(texts.items()):
        is_c = f.endswith((".c", ".h"))
        scan = comments(text) if is_c else text
        for ln, line in enumerate(scan.split("\n"), 1):
            line = line.replace("\\.", ".")  # regular expressions in tests: "x\.py"
            for m in PATH.finditer(line):
                p = m.group(1).rstrip(".")
                if p.endswith(".cpp") or any(p == x or p.startswith(x + "/") for x in EXTERNAL):
                    continue
                if TEMPLATE.search(p):
                    continue  # a template: arch_NAME.c, pipelines/slurm/SCRIPT
                if p in have or p in dirs:
                    continue
                if ("*" in p or "%" in p) and fnmatch.filter(have, p.replace("%", "*")):
                    continue  # a pattern: tests/unit/test_*.c
                dangling(f, ln, p)
            for m in NAME.finditer(line):
                n = m.group(1)
                if n in names or n in system or n in EXTERNAL_NAMES or TEMPLATE.search(n):
                    continue
                dangling(f, ln, n)
            if SEMANTICS.search(line):
                dangling(f, ln, "semantics doc §")
    for f, ref in sorted(PENDING - used):
        if not sys.argv[2:] and f in texts:
            bad.append("%s: PENDING entry %r no longer needed: remove it" % (f, ref))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
