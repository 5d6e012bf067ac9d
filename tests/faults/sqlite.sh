# sqlite.sh — the index database: readers running while index writes see
# only whole transactions (counts of 1000, rows whose columns agree with
# their JSON); an index of an older asn (no user_version, fewer columns, an
# older view) is migrated; a newer one, or a "records" table that is not
# asn's, is refused with a message and left unchanged. (kill -9 during a
# write: tests/faults/kill9.sh.)
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
$PY - "$TMP" <<'PYEOF'
import json, sys
with open(sys.argv[1] + "/recs.jsonl", "w") as f:
    for i in range(6000):
        f.write(json.dumps({"id": "p%d/h%d/%d" % (i // 20, i % 5, i % 4), "prompt_id": "p%d" % (i // 20),
                            "heuristic": {"id": "h%d" % (i % 5), "name": "t%d" % (i % 5)}, "seed": i % 4,
                            "generation": "text %d" % i, "system": None, "n_tokens": i % 50}) + "\n")
PYEOF
n_all=$(wc -l < "$TMP/recs.jsonl")

# readers while index writes (slowed: a few records at a time through a pipe)
rm -f "$TMP/r.db"*
"$BIN/index" --db "$TMP/r.db" < /dev/null 2>/dev/null
$PY -c "
import sys, time
for i, l in enumerate(open(sys.argv[1])):
    sys.stdout.write(l)
    if i % 200 == 199: sys.stdout.flush(); time.sleep(0.02)" "$TMP/recs.jsonl" 2>/dev/null | "$BIN/index" --db "$TMP/r.db" 2> "$TMP/werr" &
wpid=$!
check "readers during a write see whole transactions, rows that agree with their JSON" $PY - "$TMP/r.db" $n_all $wpid <<'PYEOF'
import json, os, sqlite3, sys, time
path, n_all, wpid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seen = set()
deadline = time.time() + 60
while time.time() < deadline:
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    db.execute("BEGIN")  # one read transaction: one snapshot
    rows = db.execute("SELECT id, kind, prompt_id, heuristic_id, seed, json FROM records").fetchall()
    (n_view,) = db.execute("SELECT count(*) FROM candidates").fetchone()
    db.execute("COMMIT")
    db.close()
    n = len(rows)
    assert n % 1000 == 0 or n == n_all, "a reader saw %d rows: not whole transactions" % n
    assert n_view == n, (n_view, n)
    for id_, kind, pid, hid, seed, js in rows:
        r = json.loads(js)
        assert (r["id"], r["prompt_id"], r["heuristic"]["id"], r["seed"], kind) == (id_, pid, hid, seed, "candidate"), id_
        assert "system" in r and r["system"] is None
    seen.add(n)
    if n == n_all:
        break
    time.sleep(0.01)
assert n_all in seen, "the writer never finished: %r" % sorted(seen)
assert len(seen) >= 3, "too few intermediate states seen to test anything: %r" % sorted(seen)
print(sorted(seen))
PYEOF
wait $wpid

# an index of an older asn: no user_version, without heuristic_name and
# seed, an older candidates view
rm -f "$TMP/old.db"*
sqlite3 "$TMP/old.db" "CREATE TABLE records (id TEXT PRIMARY KEY, kind TEXT NOT NULL, prompt_id TEXT, heuristic_id TEXT, json TEXT NOT NULL);
INSERT INTO records VALUES ('old/h/0', 'candidate', 'old', 'h', '{\"id\":\"old/h/0\",\"prompt_id\":\"old\",\"heuristic\":{\"id\":\"h\",\"name\":\"t\"},\"generation\":\"kept\"}');
CREATE VIEW candidates AS SELECT id FROM records;"
head -100 "$TMP/recs.jsonl" | "$BIN/index" --db "$TMP/old.db" > /dev/null 2> "$TMP/err"; rc=$?
check "an older index is migrated: indexed into (exit $rc), user_version 1, the columns and views of now, its rows kept" $PY - "$TMP/old.db" <<'PYEOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA user_version").fetchone()[0] == 1
cols = [r[1] for r in db.execute("PRAGMA table_info(records)")]
assert {"heuristic_name", "seed"} <= set(cols), cols
assert db.execute("SELECT count(*) FROM records").fetchone()[0] == 101
assert json.loads(db.execute("SELECT json FROM records WHERE id = 'old/h/0'").fetchone()[0])["generation"] == "kept"
row = db.execute("SELECT n_tokens, final_score FROM candidates WHERE id = 'p0/h1/1'").fetchone()
assert row == (1, None), row
assert db.execute("SELECT count(*) FROM heuristic_stats").fetchone()[0] == 6
PYEOF
expect_status "... and the report reads it" 0 "$BIN/report" --db "$TMP/old.db" -o "$TMP/rep"

# a newer one: refused, unchanged
rm -f "$TMP/new.db"*
head -10 "$TMP/recs.jsonl" | "$BIN/index" --db "$TMP/new.db" 2>/dev/null
sqlite3 "$TMP/new.db" "PRAGMA user_version = 7"
before=$(sqlite3 "$TMP/new.db" ".dump" | md5sum)
expect_status "index refuses an index of a newer schema" 1 sh -c "head -20 '$TMP/recs.jsonl' | '$BIN/index' --db '$TMP/new.db'"
expect_stderr "... saying so" "new.db: the index has schema version 7, newer than this asn's \(1\): use a newer asn"
check "... and leaves it unchanged" sh -c "[ '$(sqlite3 "$TMP/new.db" ".dump" | md5sum)' = '$before' ]"
expect_status "report refuses it too" 1 "$BIN/report" --db "$TMP/new.db" -o "$TMP/rep2"
expect_stderr "... saying so" "schema version 7, newer than this asn's"

# a "records" table that is not asn's
sqlite3 "$TMP/other.db" "CREATE TABLE records (id TEXT PRIMARY KEY, body BLOB)"
expect_status "a database whose records table is not asn's is refused" 1 sh -c "head -5 '$TMP/recs.jsonl' | '$BIN/index' --db '$TMP/other.db'"
expect_stderr "... saying so" "other.db: a \"records\" table without id, kind and json columns: not an asn index"
