#!/bin/sh
# report_history.sh — report --history on hand-written train-sampler logs:
# the SVG is well-formed, has one polyline per series (loss, KL) with a
# point per log line, x strictly increasing and affine in the step, y affine
# in the value (log10 of it on a log axis: Python fits the map from the log
# and checks every point against it); a resumed log's rows replace the ones
# before; the same log gives the same bytes; bad logs give one-line
# FILE:LINE errors and exit 1, leaving no output file.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
R="$BIN/report"

# values spanning three decades: a log axis
cat > "$TMP/log.jsonl" <<'EOF'
{"step": 10, "epoch": 0, "rows": 80, "loss": 4.5, "kl": 3.25, "penalty": 1.25, "lr": 0.001, "grad_norm": 2.0}
{"step": 20, "epoch": 0, "rows": 160, "loss": 1.75, "kl": 1.5, "penalty": 0.25, "lr": 0.002, "grad_norm": 1.0}
{"step": 30, "epoch": 0, "rows": 240, "loss": 0.6, "kl": 0.5, "penalty": 0.1, "lr": 0.002, "grad_norm": 0.5}

{"step": 40, "epoch": 1, "rows": 320, "loss": 0.08, "kl": 0.05, "penalty": 0.03, "lr": 0.001, "grad_norm": 0.2}
{"step": 55, "epoch": 1, "rows": 440, "loss": 0.012, "kl": 0.004, "penalty": 0.008, "lr": 0.0005, "grad_norm": 0.1}
EOF
# values within a decade: a linear axis
cat > "$TMP/flat.jsonl" <<'EOF'
{"step": 1, "loss": 2.0, "kl": 1.5}
{"step": 2, "loss": 1.5, "kl": 1.25}
{"step": 3, "loss": 1.0, "kl": 0.75}
EOF
# a run resumed from step 2's checkpoint after logging step 3: the log
# goes on from step 3 again (with the first step 3 kept, the values would
# span a decade and the axis would be logarithmic)
cat > "$TMP/resumed.jsonl" <<'EOF'
{"step": 1, "loss": 2.0, "kl": 1.5}
{"step": 2, "loss": 1.5, "kl": 1.25}
{"step": 3, "loss": 9.0, "kl": 9.0}
{"step": 3, "loss": 1.0, "kl": 0.75}
{"step": 4, "loss": 0.5, "kl": 0.25}
EOF

# CHECK.py: the chart against its log (argv: svg, log, log axis 1/0, rows expected)
cat > "$TMP/check.py" <<'PYEOF'
import json, math, sys
import xml.etree.ElementTree as ET
svg, log, logy, want = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(svg).getroot()
assert root.tag == NS + "svg", root.tag
rows = {}
for l in open(log):
    if l.strip():
        r = json.loads(l)
        for s in [k for k in rows if k >= r["step"]]:
            del rows[s]
        rows[r["step"]] = r
steps = sorted(rows)
assert len(steps) == want, steps
lines = root.findall(".//" + NS + "polyline")
cls = [p.get("class") for p in lines]
assert cls == ["series loss", "series kl"], cls
pts = {}
for p in lines:
    xy = [tuple(map(float, q.split(","))) for q in p.get("points").split()]
    assert len(xy) == len(steps), (p.get("class"), len(xy), len(steps))
    pts[p.get("class").split()[1]] = xy
# x: strictly increasing and affine in the step (to the 0.1 pixel rounding)
xs = [x for x, _ in pts["loss"]]
assert [x for x, _ in pts["kl"]] == xs
assert all(a < b for a, b in zip(xs, xs[1:])), xs
k = (xs[-1] - xs[0]) / (steps[-1] - steps[0])
assert all(abs(xs[0] + k * (s - steps[0]) - x) < 0.11 for s, x in zip(steps, xs)), (steps, xs)
# y: one affine map of the value (or its log10) for both series, fitted on
# the extremes, higher values higher up (smaller y)
f = (lambda v: math.log10(v)) if logy else (lambda v: v)
vals = [(f(rows[s][c]), y) for c in ("loss", "kl") for s, (_, y) in zip(steps, pts[c])]
lo, hi = min(vals), max(vals)
m = (hi[1] - lo[1]) / (hi[0] - lo[0])
assert m < 0, m
bad = [(v, y) for v, y in vals if abs(lo[1] + m * (v - lo[0]) - y) > 0.15]
assert not bad, bad
# every point inside the plot frame
fr = root.find(".//" + NS + "rect[@class='frame']")
x0, y0 = float(fr.get("x")), float(fr.get("y"))
x1, y1 = x0 + float(fr.get("width")), y0 + float(fr.get("height"))
assert all(x0 <= x <= x1 and y0 - 0.05 <= y <= y1 + 0.05 for c in pts for x, y in pts[c]), pts
# the y ticks: decades (10 with a superscript) on a log axis only
sup = root.findall(".//" + NS + "tspan")
assert bool(sup) == logy, len(sup)
labels = [t.text for t in root.iter(NS + "text") if t.get("class") == "axis-label"]
assert labels[0] == "optimizer step" and labels[1].startswith("loss, KL"), labels
legend = ["".join(g.itertext()) for g in root.iter(NS + "g") if g.get("class") == "legend-entry"]
assert len(legend) == 2 and legend[0].startswith("loss") and legend[1].startswith("KL"), legend
PYEOF

expect_status "report --history writes the chart of a log" 0 "$R" --history "$TMP/log.jsonl" -o "$TMP/h.svg"
expect_stdout "  ... and prints its path and the row count" "^history: .*/h\.svg \(5 log steps\)$"
check "  ... well-formed SVG, a polyline per series with a point per row, on a log axis" \
    $PY "$TMP/check.py" "$TMP/h.svg" "$TMP/log.jsonl" 1 5
expect_status "values within a decade" 0 "$R" --history "$TMP/flat.jsonl" -o "$TMP/flat.svg"
check "  ... on a linear axis" $PY "$TMP/check.py" "$TMP/flat.svg" "$TMP/flat.jsonl" 0 3
expect_status "a resumed run's log" 0 "$R" --history "$TMP/resumed.jsonl" -o "$TMP/resumed.svg"
check "  ... the rows logged again replace the earlier ones" \
    $PY "$TMP/check.py" "$TMP/resumed.svg" "$TMP/resumed.jsonl" 0 4
mkdir "$TMP/again"
cp "$TMP/log.jsonl" "$TMP/again/other.jsonl"
"$R" --history "$TMP/again/other.jsonl" -o "$TMP/again/h2.svg" > /dev/null 2>&1
check "the same log gives the same bytes (wherever it lies)" cmp "$TMP/h.svg" "$TMP/again/h2.svg"

# bad input: one line naming FILE:LINE, exit 1, no chart
bad() { # NAME FILE REGEX
    rm -f "$TMP/bad.svg"
    expect_status "$1: exit 1" 1 "$R" --history "$2" -o "$TMP/bad.svg"
    expect_stderr "  ... naming the file and line" "$3"
    if [ "$(wc -l < "$TMP/err")" -eq 1 ] && [ ! -e "$TMP/bad.svg" ]; then ok "  ... one line, no chart written"
    else not_ok "  ... one line, no chart written" "$(cat "$TMP/err")"; fi
}
{ head -2 "$TMP/log.jsonl"; echo '{"step": 30, "loss": 0.6,'; } > "$TMP/malformed.jsonl"
bad "a malformed JSON line" "$TMP/malformed.jsonl" "^report: [^ ]*/malformed\.jsonl:3: invalid JSON"
printf '{"step": 1, "loss": 2.0, "kl": 1.5}\n{"step": 2, "loss": 1.5}\n' > "$TMP/nokl.jsonl"
bad "a line without kl" "$TMP/nokl.jsonl" '^report: [^ ]*/nokl\.jsonl:2: field "kl" is missing'
printf '{"step": "1", "loss": 2.0, "kl": 1.5}\n' > "$TMP/strstep.jsonl"
bad "a step that is not an integer" "$TMP/strstep.jsonl" '^report: [^ ]*/strstep\.jsonl:1: field "step" must be'
printf '{"step": 1, "loss": 2.0, "kl": 1.5}\n[1, 2]\n' > "$TMP/array.jsonl"
bad "a line that is not an object" "$TMP/array.jsonl" '^report: [^ ]*/array\.jsonl:2: '
: > "$TMP/empty.jsonl"
bad "an empty log" "$TMP/empty.jsonl" '^report: [^ ]*/empty\.jsonl: no log line'
bad "a missing log" "$TMP/nope.jsonl" '^report: [^ ]*/nope\.jsonl: '

# the command line
expect_status "--history without -o" 2 "$R" --history "$TMP/log.jsonl"
expect_stderr "  ... says -o is required" "-o FILE.svg is required"
expect_status "--history with --db" 2 "$R" --history "$TMP/log.jsonl" --db "$TMP/x.db" -o "$TMP/x.svg"
expect_stderr "  ... says they do not mix" "--history takes no --db"
