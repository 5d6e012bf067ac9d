# examples.sh — the excerpts of examples/README.md are what the programs
# print now: section 1 (a dataset by hand, on the demo models) is run
# command by command and each output compared with the text, digits
# included ("..." in the text stands for any text; tests/scripts/
# check_excerpts.py). It needs the demo corpus (make demo builds it in
# build/corpus/); without it, it is skipped. About a minute on 2 cores.
. "$ASN_ROOT/tests/lib/cli.sh"
if [ -n "${ASN_SANITIZED:-}" ]; then
    skip "examples/README.md excerpts" "the sanitizer pass: checked in make test"
    exit 0
fi
if [ ! -s "$ROOT/build/corpus/train.txt" ]; then
    skip "examples/README.md excerpts" "no demo corpus in build/corpus/ (make demo builds it)"
    exit 0
fi
# the walk-through's top directory: the repository's folders, its own work/
for d in examples configs build pipelines scripts; do ln -s "$ROOT/$d" "$TMP/$d"; done
ln -s "$BIN" "$TMP/bin"
/usr/bin/python3 "$ROOT/tests/scripts/check_excerpts.py" "$ROOT/examples/README.md" "$TMP" --until "## 2."
