# index_concurrent.sh — several index processes writing one database at once
# (WAL, a busy timeout, one write transaction per batch of 1000 records), and
# index --merge of shard databases: the rows are those of one serial index
# of the same records (read back with Python's sqlite3), none lost or doubled.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
N=4
# N files of 2500 records each (ids unique per file), and one file that every
# writer also indexes (the same records upserted N times: one row each)
$PY - "$TMP" $N <<'PYEOF'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
for w in range(n):
    with open("%s/part%d.jsonl" % (d, w), "w") as f:
        for i in range(2500):
            f.write(json.dumps({"id": "p%d/h/%d" % (w, i), "prompt_id": "p%d" % w, "heuristic": {"id": "h", "name": "t 0.%d" % (i % 7)},
                                "seed": i, "generation": "text %d of writer %d" % (i, w)}) + "\n")
with open(d + "/common.jsonl", "w") as f:
    for i in range(300):
        f.write(json.dumps({"id": "c/h/%d" % i, "prompt_id": "c", "heuristic": {"id": "h", "name": "t"}, "seed": i, "generation": "shared %d" % i}) + "\n")
PYEOF
ROWS() { $PY -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("SELECT id, kind, prompt_id, heuristic_id, heuristic_name, seed, json FROM records ORDER BY id"):
    print(repr(row))
print(db.execute("SELECT count(*), count(DISTINCT id) FROM records").fetchone())' "$1"; }
"$BIN/index" --db "$TMP/serial.db" "$TMP"/part*.jsonl "$TMP/common.jsonl" 2>/dev/null
ROWS "$TMP/serial.db" > "$TMP/serial.rows"
check "the serial index has every record once" grep -qx "($((N * 2500 + 300)), $((N * 2500 + 300)))" "$TMP/serial.rows"

pids=
for w in $(seq 0 $((N - 1))); do
    timeout 120 "$BIN/index" --db "$TMP/conc.db" "$TMP/common.jsonl" "$TMP/part$w.jsonl" "$TMP/common.jsonl" 2> "$TMP/w$w.err" &
    pids="$pids $!"
done
st=0
for p in $pids; do wait "$p" || st=1; done
check "$N index processes on one database at once all succeed" sh -c "cat '$TMP'/w*.err; test $st = 0"
ROWS "$TMP/conc.db" > "$TMP/conc.rows"
check "... and the rows are those of the serial index: none lost, none doubled" cmp "$TMP/serial.rows" "$TMP/conc.rows"

# one database per shard, merged, also while other writers merge at once
for w in $(seq 0 $((N - 1))); do "$BIN/index" --db "$TMP/shard$w.db" "$TMP/part$w.jsonl" "$TMP/common.jsonl" 2>/dev/null; done
expect_status "index --merge of $N shard databases" 0 "$BIN/index" --db "$TMP/merged.db" --merge "$TMP"/shard*.db
ROWS "$TMP/merged.db" > "$TMP/merged.rows"
check "... has the rows of the serial index" cmp "$TMP/serial.rows" "$TMP/merged.rows"
pids=
for w in $(seq 0 $((N - 1))); do
    timeout 120 "$BIN/index" --db "$TMP/cmerge.db" --merge "$TMP/shard$w.db" 2> "$TMP/m$w.err" &
    pids="$pids $!"
done
st=0
for p in $pids; do wait "$p" || st=1; done
ROWS "$TMP/cmerge.db" > "$TMP/cmerge.rows"
check "$N index --merge processes into one database at once: the serial rows" sh -c "cat '$TMP'/m*.err; test $st = 0 && cmp '$TMP/serial.rows' '$TMP/cmerge.rows'"
expect_status "index --merge of a file that is not a database is an error" 1 "$BIN/index" --db "$TMP/x.db" --merge "$TMP/common.jsonl"
