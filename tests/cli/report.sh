# report.sh — report on a hand-made annotated run (tests/data/report/,
# written by make_candidates.py there: 3 prompts x 10 heuristics x 2 seeds,
# a learned sampler among them): the page is well-formed and self-contained,
# its leaderboard agrees with the records, the scatter has one point per
# heuristic, output is byte-identical for the same records, missing
# annotations give "n/a" and notes instead of charts, and Chromium renders
# it as a real chart (screenshot checked by tests/data/report/png_stats.py).
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
D="$DATA/report"
R="$BIN/report"

mkdir -p "$TMP/full" "$TMP/bare" "$TMP/nodiv" "$TMP/shuffled"
$PY "$D/make_candidates.py" "$TMP/full"
$PY "$D/make_candidates.py" "$TMP/bare" --bare
$PY "$D/make_candidates.py" "$TMP/nodiv" --no-diversity
"$BIN/index" --db "$TMP/full/run.db" "$TMP/full/candidates.jsonl" "$TMP/full/pairs.jsonl"
"$BIN/index" --db "$TMP/bare/run.db" "$TMP/bare/candidates.jsonl"
"$BIN/index" --db "$TMP/nodiv/run.db" "$TMP/nodiv/candidates.jsonl" "$TMP/nodiv/pairs.jsonl"

# usage and input errors
expect_status "--db is required" 2 "$R" -o "$TMP/x"
expect_status "-o is required" 2 "$R" --db "$TMP/full/run.db"
expect_status "a missing database is an error" 1 "$R" --db "$TMP/nope.db" -o "$TMP/x"
expect_stderr "the error names the file and says how to make one" "^report: [^ ]*/nope\.db: no such database: make it with index --db "
expect_status "a folder given as the database is an error" 1 "$R" --db "$TMP" -o "$TMP/x"
expect_stderr "... saying so" "is a folder, not a database"
$PY -c "import sqlite3; sqlite3.connect('$TMP/other.db').execute('create table t(x)')"
expect_status "a database that is not an asn index is an error" 1 "$R" --db "$TMP/other.db" -o "$TMP/x"
expect_stderr "the error says so" "not an asn index"

# the full report
cp "$TMP/full/run.db" "$TMP/before.db"
expect_status "report runs on an annotated run" 0 "$R" --db "$TMP/full/run.db" -o "$TMP/out1"
if cmp -s "$TMP/full/run.db" "$TMP/before.db" && [ ! -e "$TMP/full/run.db-wal" ] && [ ! -e "$TMP/full/run.db-shm" ]; then
    ok "report leaves the index as it was"
else not_ok "report leaves the index as it was" "$(ls "$TMP/full")"; fi
expect_stdout "it prints the page's path" "report: .*out1/report.html"
expect_stdout "it prints the summary's path" "summary: .*out1/summary.txt"
expect_stdout "it prints the counts" "^3 prompts, 60 candidates, 10 heuristics, 18 kept, 6 pairs$"
expect_stdout "it prints where the learned sampler landed" "^learned sampler learned temp 1.0: ranks [0-9]+ of 10"
check "the title says what the run is, not the database's file name" grep -q "<h1>asn report: demo-tiny: 10 heuristics on 3 prompts</h1>" "$TMP/out1/report.html"
check "the leaderboard headers give unit and direction" $PY - "$TMP/out1/report.html" <<'PYEOF'
import sys
import xml.etree.ElementTree as ET
root = ET.fromstring(open(sys.argv[1], encoding="utf-8").read()[len("<!DOCTYPE html>"):])
th = {t.text: "".join(t.find("span").itertext()) for t in root.find(".//table[@id='leaderboard-table']").iter("th") if t.find("span") is not None}
want = {"final score": "\u2191", "quality": "BT log-odds \u2191", "win rate": "% of points \u2191", "emb. entropy": "log bits \u2191",
        "self-BLEU": "log BLEU \u2193", "mean tokens": "tokens"}
for k, v in want.items():
    assert v in th[k], (k, th.get(k))
assert th["mean tokens"] == "tokens", th
PYEOF
check "the summary's leaderboard says which way is better" grep -Eq '^ +higher +higher +higher +higher +lower +higher$' "$TMP/out1/summary.txt"
check "the curves label the learned sampler once as learned (no \"learned: learned\")" sh -c "! grep -q 'learned: learned' '$TMP/out1/report.html'"

# well-formed: the whole page parses as XML (XHTML syntax) and as HTML
# with every tag closed in order
check "the page is well-formed" $PY - "$TMP/out1/report.html" <<'PYEOF'
import html.parser, re, sys
import xml.etree.ElementTree as ET
text = open(sys.argv[1], encoding="utf-8").read()
assert text.startswith("<!DOCTYPE html>\n"), text[:40]
ET.fromstring(text[len("<!DOCTYPE html>"):])
VOID = {"meta", "br", "link", "img", "hr", "input"}
class P(html.parser.HTMLParser):
    stack = []
    def handle_starttag(self, tag, attrs):
        if tag not in VOID: self.stack.append(tag)
    def handle_startendtag(self, tag, attrs): pass
    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-3:])
        self.stack.pop()
p = P(); p.feed(text); p.close()
assert p.stack == [], p.stack
PYEOF

check "the page is self-contained: no script, no external resource" $PY - "$TMP/out1/report.html" <<'PYEOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
assert "<script" not in text.lower()
assert not re.search(r'\b(src|href)\s*=', text), re.search(r'\b(src|href)\s*=.{40}', text).group(0)
assert "@import" not in text
urls = set(re.findall(r'https?://[^\s"\')]+', text))
assert urls <= {"http://www.w3.org/2000/svg"}, urls
PYEOF

check "the scatter has one point per heuristic, the learned one highlighted, axes and legends" $PY - "$TMP/out1/report.html" <<'PYEOF'
import sys
import xml.etree.ElementTree as ET
S = "{http://www.w3.org/2000/svg}"
root = ET.fromstring(open(sys.argv[1], encoding="utf-8").read()[len("<!DOCTYPE html>"):])
svgs = {s.get("id"): s for s in root.iter(S + "svg")}
assert set(svgs) == {"scatter", "curves"}, svgs.keys()
sc = svgs["scatter"]
cls = lambda e: (e.get("class") or "").split()
pts = [e for e in sc.iter() if "pt" in cls(e)]
assert len(pts) == 10, len(pts)
learned = [e for e in pts if "learned" in cls(e)]
assert len(learned) == 1 and learned[0].find(S + "title").text.startswith("learned temp 1.0"), learned
titles = sorted(e.find(S + "title").text.split(" (#")[0] for e in pts)
assert len(set(titles)) == 10, titles
# four marker shapes (families) and three temperature colours among the points
assert len({e.get("fill") for e in pts}) == 3, {e.get("fill") for e in pts}
shapes = {(e.tag, len(e.get("d", "").split("L"))) for e in pts}
assert len(shapes) == 4, shapes
texts = [t.text for t in sc.iter(S + "text") if t.text]
for want in ["family (shape)", "temperature (colour)", "learned", "min_p", "top_p", "temp only", "0.3", "0.7", "1.0"]:
    assert want in texts, (want, texts)
assert any("embedding entropy" in t for t in texts) and any("Bradley-Terry" in t for t in texts), texts
ticks = [t.text for t in sc.find(S + "g[@class='ticks']").iter(S + "text")]
assert len(ticks) >= 6, ticks
assert sc.find(f".//{S}rect[@class='colorbar']") is not None
assert any("learned temp 1.0" in t for t in texts), "the learned sampler is labelled"
# the curves: one line per family with several temperatures, the learned point
cv = svgs["curves"]
fams = [g.get("data-family") for g in cv.iter(S + "g") if "family" in cls(g)]
assert fams == ["learned", "min_p", "temp only", "top_p"], fams
assert len([e for e in cv.iter(S + "polyline")]) == 3
PYEOF

check "the leaderboard agrees with the records" $PY - "$TMP/out1/report.html" "$TMP/full/candidates.jsonl" <<'PYEOF'
import json, sys
import xml.etree.ElementTree as ET
root = ET.fromstring(open(sys.argv[1], encoding="utf-8").read()[len("<!DOCTYPE html>"):])
table = root.find(".//table[@id='leaderboard-table']")
head = [th.text for th in table.find("thead").iter("th")]  # the name; its unit and direction follow in a span
rows = [["".join(td.itertext()) for td in tr.iter("td")] for tr in table.find("tbody").iter("tr")]
assert len(rows) == 10, len(rows)
col = {h: i for i, h in enumerate(head)}
for want in ["heuristic", "family", "temp", "kept", "final score", "quality", "win rate", "emb. entropy",
             "self-BLEU", "mean tokens"]:
    assert want in col, (want, head)
recs = [json.loads(l) for l in open(sys.argv[2])]
by = {}
for r in recs:
    by.setdefault(r["heuristic"]["name"], []).append(r)
mean = lambda xs: sum(xs) / len(xs) if xs else None
expect = {}
for name, rs in by.items():
    fin = [r["score"]["final"] for r in rs if "score" in r]
    expect[name] = {
        "quality": "%.3f" % mean([r["quality"]["bt"] for r in rs]),
        "final score": "%.3f" % mean(fin) if fin else "n/a",
        "kept": str(sum("rank" in r for r in rs)),
        "win rate": "%.1f%%" % (100 * sum(r["quality"]["swiss_points"] for r in rs) / sum(r["quality"]["games"] for r in rs)),
        "emb. entropy": "%.3f" % mean([r["diversity"]["embedding_entropy"] for r in rs]),
        "mean tokens": "%.1f" % mean([r["n_tokens"] for r in rs]),
        "_final": mean(fin),
    }
assert [r[col["#"]] for r in rows] == [str(i) for i in range(1, 11)]
assert {r[col["heuristic"]] for r in rows} == set(by)
for r in rows:
    e = expect[r[col["heuristic"]]]
    for k, v in e.items():
        if not k.startswith("_"):
            assert r[col[k]].replace("-0.000", "0.000") == v.replace("-0.000", "0.000"), (r[col["heuristic"]], k, r[col[k]], v)
# ordered by mean final score, heuristics without one last
finals = [expect[r[col["heuristic"]]]["_final"] for r in rows]
rated = [f for f in finals if f is not None]
assert finals[:len(rated)] == rated and rated == sorted(rated, reverse=True), finals
learned = root.findall(".//tr[@class='learned']")
assert len(learned) == 1 and learned[0].get("data-heuristic") == "learned temp 1.0"
fam = {r[col["heuristic"]]: r[col["family"]] for r in rows}
assert fam["temp 0.7"] == "temp only" and fam["top_p 0.9 temp 1.0"] == "top_p" and fam["learned temp 1.0"] == "learned", fam
PYEOF

check "the page has the dataset statistics and the provenance" $PY - "$TMP/out1/report.html" "$TMP/full/candidates.jsonl" <<'PYEOF'
import json, sys, collections
import xml.etree.ElementTree as ET
text = open(sys.argv[1], encoding="utf-8").read()
root = ET.fromstring(text[len("<!DOCTYPE html>"):])
recs = [json.loads(l) for l in open(sys.argv[2])]
fin = collections.Counter(r["finish"] for r in recs)
rows = {tr[0].text: "".join(tr[1].itertext()) for tr in root.find(".//table[@id='finish-table']").iter("tr") if tr[0].tag == "td"}
assert rows == {k: str(v) for k, v in fin.items()}, (rows, fin)
ds = {tr[0].text: "".join(tr[1].itertext()) for tr in root.find(".//table[@id='dataset-table']").iter("tr")}
assert ds["prompts"] == "3" and ds["candidates"] == "60" and ds["kept"] == "18" and ds["preference pairs"] == "6", ds
assert ds["seeds"] == "2" and ds["heuristics"] == "10", ds
prov = "".join(root.find(".//dl[@class='prov']").itertext())
for want in ["demo-tiny", recs[0]["model"]["sha256"], "reference-ll: demo-ref", recs[0]["quality"]["judge"]["sha256"],
             "chatml", "0-1", "quality 0.9, diversity 0.1, verifiable 0.9", "generated by", "this page"]:
    assert want in prov, (want, prov)
PYEOF

check "the text summary has the leaderboard, the learned sampler and the provenance" $PY - "$TMP/out1/summary.txt" <<'PYEOF'
import sys
t = open(sys.argv[1]).read()
for want in ["Dataset", "prompts           3", "candidates        60", "Leaderboard (by mean final score",
             "Learned sampler", "learned temp 1.0 (marked *)", "quality vs diversity   drawn", "demo-tiny",
             "eos ", "length ", "stop "]:
    assert want in t, (want, t)
rows = [l for l in t.splitlines() if l[:1] in " *" and l[1:5].strip().isdigit()]
assert len(rows) == 10 and sum(l.startswith("*") for l in rows) == 1, rows
PYEOF

# determinism: again, and from the same records indexed in another order
expect_status "report runs again" 0 "$R" --db "$TMP/full/run.db" -o "$TMP/out2"
check "the same database gives the same page" cmp "$TMP/out1/report.html" "$TMP/out2/report.html"
check "the same database gives the same summary" cmp "$TMP/out1/summary.txt" "$TMP/out2/summary.txt"
$PY -c "
import random, sys
ls = open('$TMP/full/candidates.jsonl').readlines() + open('$TMP/full/pairs.jsonl').readlines()
random.Random(7).shuffle(ls); open('$TMP/shuffled/all.jsonl', 'w').writelines(ls)"
"$BIN/index" --db "$TMP/shuffled/run.db" "$TMP/shuffled/all.jsonl"
"$R" --db "$TMP/shuffled/run.db" -o "$TMP/out3" > /dev/null
check "the same records indexed in another order give the same page" cmp "$TMP/out1/report.html" "$TMP/out3/report.html"

# missing annotations
expect_status "report runs on candidates without annotations" 0 "$R" --db "$TMP/bare/run.db" -o "$TMP/bare/out"
check "without annotations: n/a in the table, notes instead of charts, still well-formed" $PY - "$TMP/bare/out/report.html" <<'PYEOF'
import sys
import xml.etree.ElementTree as ET
text = open(sys.argv[1], encoding="utf-8").read()
root = ET.fromstring(text[len("<!DOCTYPE html>"):])
assert root.find(".//{http://www.w3.org/2000/svg}svg") is None
skips = ["".join(p.itertext()) for p in root.iter("p") if p.get("class") == "skip"]
assert len(skips) == 2 and all("rank-bt" in s for s in skips), skips
rows = root.find(".//table[@id='leaderboard-table']").find("tbody").findall("tr")
assert len(rows) == 10
cells = ["".join(td.itertext()) for td in rows[0]]
assert cells.count("n/a") == 5, cells
assert "not recorded" in "".join(root.find(".//dl[@class='prov']").itertext())
PYEOF
expect_status "report runs on a run without diversity" 0 "$R" --db "$TMP/nodiv/run.db" -o "$TMP/nodiv/out"
check "without diversity: the scatter is left out saying why, the curves are drawn" $PY - "$TMP/nodiv/out/report.html" <<'PYEOF'
import sys
import xml.etree.ElementTree as ET
root = ET.fromstring(open(sys.argv[1], encoding="utf-8").read()[len("<!DOCTYPE html>"):])
svgs = [s.get("id") for s in root.iter("{http://www.w3.org/2000/svg}svg")]
assert svgs == ["curves"], svgs
skips = ["".join(p.itertext()) for p in root.iter("p") if p.get("class") == "skip"]
assert len(skips) == 1 and "score-diversity" in skips[0], skips
PYEOF
grep -q "not drawn: no diversity annotation" "$TMP/nodiv/out/summary.txt" && ok "the summary says why the scatter is missing" \
    || not_ok "the summary says why the scatter is missing" "$(grep -i 'quality vs' "$TMP/nodiv/out/summary.txt")"
: > "$TMP/empty.jsonl"
"$BIN/index" --db "$TMP/empty.db" "$TMP/empty.jsonl"
expect_status "report runs on an empty index" 0 "$R" --db "$TMP/empty.db" -o "$TMP/empty"
check "an empty index says there is nothing to show" grep -q "No candidate records" "$TMP/empty/report.html"

# the learned sampler's analysis: analyze-sampler --json lines (steps, then
# the summary) and its plots, made here by hand
mkdir -p "$TMP/plots"
$PY - "$TMP/kl.jsonl" "$TMP/plots" <<'PYEOF'
import json, sys
rows = []
for rec in (1, 2):
    for step in range(4 if rec == 1 else 3):
        rows.append({"record": rec, "step": step, "token": 5, "piece": "a", "drawn": True, "kept": 3,
                     "kl_raw": 0.5 + 0.25 * step + rec, "mass_raw": 0.1, "kl_learned": 0.1 * (step + 1) if step != 1 else None,
                     "mass_learned": 0.01})
rows.append({"summary": {"records": 2, "steps": 7, "kl_raw": 1.75, "mass_raw": 0.1, "kl_learned": 0.25, "mass_learned": 0.01, "kl_ratio": 7.0}})
open(sys.argv[1], "w").writelines(json.dumps(r) + "\n" for r in rows)
for name in ("record-1-step-1.svg", "record-1-step-0.svg", "notes.txt"):
    open(sys.argv[2] + "/" + name, "w").write('<svg xmlns="http://www.w3.org/2000/svg" id="%s" width="10" height="10"/>' % name[:-4])
PYEOF
expect_status "report --analysis --plots" 0 "$R" --db "$TMP/full/run.db" -o "$TMP/an" --analysis "$TMP/kl.jsonl" --plots "$TMP/plots"
check "the analysis section: the summary's numbers, mean KL by step (Python), the plots in name order" $PY - "$TMP/an/report.html" <<'PYEOF'
import sys
import xml.etree.ElementTree as ET
S = "{http://www.w3.org/2000/svg}"
root = ET.fromstring(open(sys.argv[1], encoding="utf-8").read()[len("<!DOCTYPE html>"):])
rows = [["".join(td.itertext()) for td in tr.iter("td")] for tr in root.find(".//table[@id='analysis-table']").iter("tr")][1:]
assert rows[0][1:] == ["1.7500", "0.2500"] and rows[1][1:] == ["0.1000", "0.0100"] and rows[2][1] == "7", rows
ratio = "".join(root.find(".//p[@id='kl-ratio']").itertext())
assert "7.000" in ratio, ratio
svg = [s for s in root.iter(S + "svg") if s.get("id") == "kl-steps"][0]
def pts(cls):
    g = [g for g in svg.iter(S + "g") if g.get("class") == cls][0]
    return [t.text for t in g.iter(S + "title")]
raw = {0: (1.5 + 2.5) / 2, 1: (1.75 + 2.75) / 2, 2: (2.0 + 3.0) / 2, 3: 2.25}
lrn = {0: 0.1, 2: 0.3, 3: 0.4}   # step 1 has no finite learned KL
assert pts("kl-raw") == ["raw model, step %d: mean KL %.4f nats" % kv for kv in sorted(raw.items())], pts("kl-raw")
assert pts("kl-learned") == ["learned sampler, step %d: mean KL %.4f nats" % kv for kv in sorted(lrn.items())], pts("kl-learned")
figs = [f.get("data-file") for f in root.iter("figure")]
assert figs == ["record-1-step-0.svg", "record-1-step-1.svg"], figs
PYEOF
check "the text summary has the analysis" grep -q "KL ratio raw / learned *7.000" "$TMP/an/summary.txt"
printf '{"record": 1, "step": 0}\n{"oops": 1}\n' > "$TMP/badkl.jsonl"
expect_status "an analysis file that is not analyze-sampler's output is an error" 1 "$R" --db "$TMP/full/run.db" -o "$TMP/an2" --analysis "$TMP/badkl.jsonl"
expect_stderr "... naming file and line" "badkl\.jsonl:2: neither a step"
expect_status "--plots needs --analysis" 2 "$R" --db "$TMP/full/run.db" -o "$TMP/an2" --plots "$TMP/plots"

# rendering: Debian's chromium (scripts/install-deps.sh report installs it;
# optional: without it these checks are skipped). At 1400 px the page and
# its leaderboard fit; at 800 px the page still does (the leaderboard
# scrolls in its box). A copy of the page with a small script reports the
# widths (the page itself has no script).
CHROMIUM=$(command -v chromium || command -v chromium-browser)
if [ -z "$CHROMIUM" ]; then
    skip "the page renders in headless Chromium" "no chromium (sh scripts/install-deps.sh report installs it)"
else
    chrome() { # WIDTH,HEIGHT, then chromium's options
        size=$1; shift
        timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync \
            --user-data-dir="$(mktemp -d "$TMP/chromium.XXXXXX")" --window-size="$size" "$@" 2>> "$TMP/chromium.log"
    }
    chrome 1200,1600 --screenshot="$TMP/shot.png" "file://$TMP/out1/report.html" > /dev/null
    if [ -s "$TMP/shot.png" ]; then ok "headless Chromium takes a screenshot of the page"; else
        not_ok "headless Chromium takes a screenshot of the page" "$(tail -c 400 "$TMP/chromium.log")"; fi
    check "the screenshot shows a real chart (not blank; plot area with the temperature colours)" \
        $PY "$D/png_stats.py" "$TMP/shot.png"
    for page in out1 an; do
        sed 's|</body>|<script>var t = document.getElementById("leaderboard-table"); document.body.setAttribute("data-fit", [document.documentElement.scrollWidth, innerWidth, t.scrollWidth, t.parentNode.clientWidth].join(" "));</script></body>|' \
            "$TMP/$page/report.html" > "$TMP/$page/fit.html"
        for w in 1400 800; do
            fit=$(chrome $w,1000 --dump-dom "file://$TMP/$page/fit.html" | sed -n 's/.*data-fit="\([0-9 ]*\)".*/\1/p')
            chrome $w,1000 --screenshot="$TMP/$page-$w.png" "file://$TMP/$page/report.html" > /dev/null
            set -- $fit
            if [ $# = 4 ] && [ "$1" -le "$2" ] && { [ $w = 800 ] || [ "$3" -le "$4" ]; }; then
                ok "$page at $w px: no horizontal overflow (page $1 of $2 px, leaderboard $3 in $4 px)"
            else not_ok "$page at $w px: no horizontal overflow" "widths: page, window, leaderboard, its box: '$fit'"; fi
            check "$page at $w px: the screenshot is the window's width" $PY -c "
import struct; d = open('$TMP/$page-$w.png', 'rb').read(24); assert struct.unpack('>I', d[16:20])[0] == $w, d"
        done
    done
    set --
fi
