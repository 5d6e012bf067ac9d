# sampling_walkthrough.sh — examples/sampling/README.md quotes exactly what
# examples/sampling/run.sh prints now (each "<!-- output: NAME -->" block is
# the script's "== NAME" section).
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
if ! command -v jq > /dev/null; then skip "the sampling walk-through" "jq is not installed"; exit 0; fi
cd "$ROOT" || exit 1
expect_status "run.sh runs" 0 env BIN="$BIN" sh examples/sampling/run.sh "$TMP/w"
check "every quoted output is the script's" $PY - "$TMP/out" "$ROOT/examples/sampling/README.md" <<'PYEOF'
import re, sys
out = open(sys.argv[1]).read()
got = {m.group(1): m.group(2).rstrip("\n") for m in re.finditer(r"^== (\w+)\n(.*?)(?=^== |\Z)", out, re.S | re.M)}
doc = open(sys.argv[2]).read()
quoted = dict(re.findall(r"<!-- output: (\w+) -->\n```\n(.*?)\n```", doc, re.S))
assert sorted(quoted) == sorted(got) == ["cannot", "constrained", "grid", "temperature", "uniform"], (sorted(quoted), sorted(got))
for k in got:
    assert quoted[k] == got[k], "section %s differs:\n--- README\n%s\n--- run.sh\n%s" % (k, quoted[k], got[k])
PYEOF
check "the numbers the text cites are there" $PY - "$ROOT/examples/sampling/README.md" <<'PYEOF'
import sys
doc = open(sys.argv[1]).read()
for s in ("[4,1,1], nucleus 4096", "x tokens kept 0.999", "mean p(drawn token) 0.981", "26.3", "129.9", "588.8",
          "three: 16 candidates, 2 complete", "0 add up to 10", "0 names look like a name"):
    assert s in doc, s
PYEOF
