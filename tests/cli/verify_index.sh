# verify_index.sh — verify's checks, reasons and replays; index's upserts,
# merges of annotations and of shard databases.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/tests/data/models/tiny-spm-q8_0.gguf"
H="$ROOT/tests/data/reference-configs/custom_logit_processors_test.yaml"
P="$ROOT/tests/data/reference-configs/test_prompts.jsonl"
PY=/usr/bin/python3
"$BIN/gen-candidates" -m "$M" -H "$H" -n 12 --min-new-tokens 2 --seeds 0-1 "$P" > "$TMP/c.jsonl" 2>/dev/null

expect_status "verify passes a good file" 0 "$BIN/verify" --expected-seeds 2 -H "$H" -m "$M" --replay 4 --report "$TMP/rep.json" "$TMP/c.jsonl"
check "verify writes a good file unchanged" cmp "$TMP/out" "$TMP/c.jsonl"
check "the report counts prompts and replays" $PY -c "
import json; r = json.load(open('$TMP/rep.json'))
assert r['prompts_read'] == 6 and r['prompts_discarded'] == 0 and r['records_written'] == 60
assert r['replay']['checked'] == 4 and r['replay']['mismatches'] == []"

# damage one prompt per way; every other prompt must survive
$PY - "$TMP/c.jsonl" "$TMP/bad.jsonl" <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in recs: by.setdefault(r["prompt_id"], []).append(r)
p = list(by)
by[p[0]].pop()                                   # one candidate missing
by[p[1]].append(dict(by[p[1]][0]))               # a duplicate (seed, heuristic)
by[p[2]][3]["generation"] += "!"                 # text differs from tokens
by[p[3]][1]["tokens"][0] = 999999                # token id out of range
by[p[4]][2]["model"] = {"name": "x", "sha256": "0" * 64}  # another model
out = open(sys.argv[2], "w")
for k in p:
    for r in by[k]: out.write(json.dumps(r, ensure_ascii=False) + "\n")
out.write("this is not json\n")
PYEOF
expect_status "a line that is not JSON is an error" 1 "$BIN/verify" --expected-seeds 2 -H "$H" -m "$M" "$TMP/bad.jsonl"
expect_stderr "the error names file, line and column" "^verify: [^ ]*/bad\.jsonl:$(wc -l < "$TMP/bad.jsonl"): invalid JSON at column [0-9]+: "
expect_status "verify --skip-bad discards damaged prompts" 0 "$BIN/verify" --expected-seeds 2 -H "$H" -m "$M" --skip-bad --report "$TMP/rep2.json" "$TMP/bad.jsonl"
check "exactly the undamaged prompt survives, with its records" $PY -c "
import json
out = [json.loads(l) for l in open('$TMP/out')]
assert len({r['prompt_id'] for r in out}) == 1 and len(out) == 10
r = json.load(open('$TMP/rep2.json')); reasons = ' | '.join(' '.join(d['reasons']) for d in r['discarded'])
assert r['prompts_discarded'] == 5 and r['malformed_lines'] == 1, r
for needle in ['pairs are missing', 'appears twice', 'generation differs', 'out of the vocabulary', 'another model']:
    assert needle in reasons, (needle, reasons)"
expect_stderr "the summary names the discarded prompts" "discarded prompt"
expect_stderr "malformed lines are counted" "; 1 malformed line skipped"
expect_status "--skip-invalid (the older spelling) is --skip-bad" 0 "$BIN/verify" --skip-invalid "$TMP/bad.jsonl"

$PY - "$TMP/c.jsonl" "$TMP/swap.jsonl" <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
a, b = recs[0], recs[1]          # same prompt and heuristic, seeds 0 and 1
assert a["heuristic"]["id"] == b["heuristic"]["id"] and a["seed"] != b["seed"]
for k in ("tokens", "generation", "n_tokens", "finish"): a[k] = b[k]
open(sys.argv[2], "w").writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
PYEOF
expect_status "a replay that differs fails the run" 1 "$BIN/verify" -m "$M" --replay 60 "$TMP/swap.jsonl"
expect_stderr "the replay mismatch names the candidate" "replay of .*/0: regenerated tokens differ"
expect_status "--replay needs --model" 2 "$BIN/verify" --replay 3 "$TMP/c.jsonl"
printf '{"prompt_id":"a","prompt":"x"}\n{"prompt_id":"b","prompt":"y"}\n{"prompt_id":"a","prompt":"x"}\n' > "$TMP/split.jsonl"
# a prompt's records need not be contiguous: grouped as the sorted file
expect_status "records of a prompt that are not contiguous: grouped" 0 "$BIN/verify" "$TMP/split.jsonl"
expect_stderr "... the two prompts found" "2 prompts read"

# index
expect_status "index a candidates file" 0 "$BIN/index" --db "$TMP/a.db" "$TMP/c.jsonl"
"$BIN/index" --db "$TMP/a.db" "$TMP/c.jsonl"
check "indexing twice changes nothing" $PY -c "
import sqlite3; db = sqlite3.connect('$TMP/a.db')
assert db.execute('select count(*) from records').fetchone()[0] == 60
rows = db.execute('select heuristic_name, candidates from heuristic_stats').fetchall()
assert len(rows) == 5 and all(n == 12 for _, n in rows), rows"
$PY -c "
import json
for l in open('$TMP/c.jsonl'):
    r = json.loads(l); print(json.dumps({'id': r['id'], 'quality': {'bt': 0.5}}))" > "$TMP/q.jsonl"
"$BIN/index" --db "$TMP/a.db" "$TMP/q.jsonl"
check "annotations merge into the stored records" $PY -c "
import sqlite3, json; db = sqlite3.connect('$TMP/a.db')
rows = db.execute('select json from records').fetchall()
assert len(rows) == 60 and all(json.loads(j)['quality']['bt'] == 0.5 and 'tokens' in json.loads(j) for (j,) in rows)
assert db.execute('select mean_quality from heuristic_stats').fetchone()[0] == 0.5"
for k in 1 2 3; do
    "$BIN/gen-candidates" -m "$M" -H "$H" -n 12 --min-new-tokens 2 --seeds 0-1 --shard $k/3 "$P" 2>/dev/null | "$BIN/index" --db "$TMP/s$k.db"
done
"$BIN/index" --db "$TMP/all.db" "$TMP/c.jsonl"
expect_status "merge shard databases" 0 "$BIN/index" --db "$TMP/merged.db" --merge "$TMP/s1.db" "$TMP/s2.db" "$TMP/s3.db"
check "the merged shards equal the unsharded index" $PY -c "
import sqlite3
q = 'select id, kind, prompt_id, heuristic_id, seed, json from records order by id'
a = sqlite3.connect('$TMP/all.db').execute(q).fetchall(); b = sqlite3.connect('$TMP/merged.db').execute(q).fetchall()
assert a == b and len(a) == 60"
printf '{"no_id":1}\n' > "$TMP/noid.jsonl"
expect_status "a record without id is an error" 1 "$BIN/index" --db "$TMP/x.db" "$TMP/noid.jsonl"
expect_stderr "the error names file, line and field" 'noid.jsonl:1: field "id" is missing'
expect_status "--db is required" 2 "$BIN/index" "$TMP/c.jsonl"
