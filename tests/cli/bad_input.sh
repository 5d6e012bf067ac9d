# bad_input.sh — the bad-input table (docs/bad-input.md): every kind of bad
# input given to the tools that read it, with the exact first line of the
# message and the exit status, made by running them. The table in docs must
# be what this writes (ASN_WRITE_DOCS=1 rewrites it); every case must end
# with status 1 or 2 (0 where the input is merely empty) and one message,
# never a crash.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$DATA/models/tiny-spm-q8_0.gguf"
H="$DATA/reference-configs/custom_logit_processors_test.yaml"
PY=/usr/bin/python3
D="$TMP/in"
mkdir -p "$D" "$D/a-directory.jsonl"
printf 'hidden_dims: 8\n' > "$TMP/local.yaml"
"$BIN/score-ngram" build -o "$TMP/ngram.idx" "$DATA/ngram/corpus_a.txt" 2>/dev/null
printf '{"prompt": "The capital of France is"}\n{"prompt": "Once upon a time"}\n' > "$TMP/p.jsonl"
"$BIN/gen-candidates" -m "$M" -H "$H" --seeds 0-1 -n 8 -t 1 --only "Test Min-P Sampling" "$TMP/p.jsonl" > "$TMP/c.jsonl" 2>/dev/null

# the inputs: prompt files (P-*) and candidate files (C-*)
$PY - "$D" "$TMP/c.jsonl" <<'PYEOF'
import json, sys
d, c = sys.argv[1], [json.loads(l) for l in open(sys.argv[2])]
def w(name, lines):
    with open(d + "/" + name, "wb") as f:
        for l in lines:
            f.write(l if isinstance(l, bytes) else (json.dumps(l) + "\n").encode())
w("P-malformed.jsonl", [{"prompt": "fine"}, b'{"prompt": "cut short",\n'])
w("C-malformed.jsonl", [c[0], b'{"id": "x", "generation": \n'])
w("P-wrong-type.jsonl", [{"prompt": 42}])
w("C-wrong-type.jsonl", [dict(c[0], generation=5, seed="zero")])
w("P-missing-field.jsonl", [{"text": "no prompt field"}])
w("C-missing-field.jsonl", [{k: v for k, v in c[0].items() if k not in ("generation", "prompt_id", "tokens")}])
w("P-duplicate-id.jsonl", [{"id": "a", "prompt": "one"}, {"id": "a", "prompt": "two"}])
w("C-duplicate-id.jsonl", [c[0], c[0]] + c[1:])
w("P-empty.jsonl", [])
w("C-empty.jsonl", [])
w("P-non-utf8.jsonl", [b'{"prompt": "caf\xe9 au lait"}\n'])
w("C-non-utf8.jsonl", [json.dumps(c[0])[:-1].encode() + b', "note": "\xff\xfe"}\n'])
PYEOF

cases="$TMP/cases"
: > "$cases"
add() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$cases"; } # KIND TOOL COMMAND (F = the input)
for kind in malformed:malformed\ JSON wrong-type:wrong\ types missing-field:missing\ fields duplicate-id:duplicate\ ids \
            empty:an\ empty\ file non-utf8:non-UTF-8\ text missing:an\ unreadable\ \(missing\)\ file \
            directory:a\ directory\ given\ as\ a\ file; do
    k=${kind%%:*} label=${kind#*:}
    case $k in
    missing) P="$D/no-such-file.jsonl" C="$D/no-such-file.jsonl" ;;
    directory) P="$D/a-directory.jsonl" C="$D/a-directory.jsonl" ;;
    *) P="$D/P-$k.jsonl" C="$D/C-$k.jsonl" ;;
    esac
    add "$label" gen-candidates "\"\$BIN/gen-candidates\" -m \"\$M\" -H \"\$H\" -n 4 -t 1 \"$P\""
    add "$label" verify "\"\$BIN/verify\" \"$C\""
    add "$label" rank-bt "\"\$BIN/rank-bt\" --judge reference-ll --judge-model \"\$M\" -t 1 \"$C\""
    add "$label" score-diversity "\"\$BIN/score-diversity\" --embed-model \"\$M\" -t 1 \"$C\""
    add "$label" score-ngram "\"\$BIN/score-ngram\" --index \"\$TMP/ngram.idx\" \"$C\""
    add "$label" score-verifiable "\"\$BIN/score-verifiable\" \"$C\""
    add "$label" score-reward "\"\$BIN/score-reward\" -m \"\$DATA/models/tiny-rm-q8_0.gguf\" --chat-template none -t 1 \"$C\""
    add "$label" filter-topk "\"\$BIN/filter-topk\" \"$C\""
    add "$label" index "\"\$BIN/index\" --db \"\$TMP/bad.db\" \"$C\""
    add "$label" train-sampler "\"\$BIN/train-sampler\" -m \"\$M\" -q -a LocalProbabilityTransform -c \"\$TMP/local.yaml\" -o \"\$TMP/s.gguf\" \"$C\""
done
# models: damaged and hostile GGUF files (tests/scripts/hostile_gguf.py)
printf 'not a model\n' > "$D/text.gguf"
for kind in truncated:a\ truncated\ GGUF\ \(half\) header-only:a\ truncated\ GGUF\ \(100\ bytes\) \
            huge-tensors:a\ GGUF\ with\ 2^60\ tensors huge-kvs:a\ GGUF\ with\ 2^60\ keys \
            offset-past:a\ tensor\ offset\ past\ the\ end huge-shape:a\ tensor\ shape\ that\ overflows \
            empty-vocab:an\ empty\ vocabulary nan-weights:NaN\ logits\ from\ the\ model \
            text:not\ a\ GGUF\ file missing:a\ missing\ model directory:a\ directory\ given\ as\ the\ model; do
    k=${kind%%:*} label=${kind#*:}
    case $k in
    text) G="$D/text.gguf" ;;
    missing) G="$D/no-such-model.gguf" ;;
    directory) G="$D" ;;
    *) G="$D/$k.gguf"; $PY "$ROOT/tests/scripts/hostile_gguf.py" $k "$M" "$G" ;;
    esac
    add "$label" gen-candidates "\"\$BIN/gen-candidates\" -m \"$G\" -H \"\$H\" -n 4 -t 1 \"\$TMP/p.jsonl\""
    add "$label" tokenize "\"\$BIN/tokenize\" -m \"$G\" \"Once upon a time\""
    add "$label" generate "\"\$BIN/generate\" -m \"$G\" -n 4 -t 1 \"Once upon a time\""
    add "$label" rank-bt "\"\$BIN/rank-bt\" --judge reference-ll --judge-model \"$G\" -t 1 \"\$TMP/c.jsonl\""
    add "$label" score-diversity "\"\$BIN/score-diversity\" --embed-model \"$G\" -t 1 \"\$TMP/c.jsonl\""
done

out="$TMP/bad-input.md"
cat > "$out" <<'HEAD'
# Bad input

What each tool does with each kind of bad input: the exit status and the
first line of its message (stderr), from running them (`tests/cli/bad_input.sh`
writes this table and checks that it is up to date; `ASN_WRITE_DOCS=1`
rewrites it). Exit status 1 is bad input or a runtime error, 2 a bad
command line, 0 a run that had nothing to do. `DIR` stands for the folder of
the inputs. The damaged and hostile GGUF files are made from
`tests/data/models/tiny-spm-q8_0.gguf` by `tests/scripts/hostile_gguf.py`.
Running as root, a file without read permission can still be read, so the
unreadable file is a missing one here; without root it reads
`FILE: Permission denied`.

| input | tool | exit | message |
|---|---|---|---|
HEAD
crashes=0
while IFS='	' read -r label tool cmd; do
    eval "timeout 60 $cmd" > /dev/null 2> "$TMP/err" < /dev/null; rc=$?
    msg=$(grep -v '^OpenBLAS' "$TMP/err" | head -1 | sed -e "s|$D|DIR|g" -e "s|$TMP|DIR|g" -e 's/|/\\|/g' | cut -c1-300)
    case $rc in 0|1|2) ;; *) crashes=$((crashes + 1)); echo "# $label, $tool: exit $rc: $msg" ;; esac
    printf '| %s | %s | %s | %s |\n' "$label" "$tool" "$rc" "${msg:-(none)}" >> "$out"
done < "$cases"
n=$(wc -l < "$cases")
if [ $crashes = 0 ]; then ok "$n bad-input cases: each exits 0, 1 or 2 with a message, none crashes"
else not_ok "bad-input cases" "$crashes of $n crashed or hung"; fi
check "every case that failed said why" sh -c "! grep -q '| [12] | (none) |' '$out'"
[ "${ASN_WRITE_DOCS:-}" = 1 ] && cp "$out" "$ROOT/docs/bad-input.md"
if cmp -s "$out" "$ROOT/docs/bad-input.md"; then ok "docs/bad-input.md is what the tools say now"
else not_ok "docs/bad-input.md is what the tools say now" "regenerate it: ASN_WRITE_DOCS=1 sh tests/cli/bad_input.sh (through tests/run.sh); $(diff "$ROOT/docs/bad-input.md" "$out" 2>&1 | head -5)"; fi
