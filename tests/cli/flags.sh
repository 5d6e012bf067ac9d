# flags.sh — one flag vocabulary across the programs, read from every
# program's --help: -m model, -H heuristics, -s seed(s), -o output,
# -t threads, -n new tokens mean the same wherever they appear, and a
# program with one of those options has its letter; every other letter has
# one meaning (those listed below had two before this check and keep them);
# the older spellings still parse; every --help ends with the exit statuses.
. "$ASN_ROOT/tests/lib/cli.sh"
H="$TMP/help"
: > "$H"
for t in "$BIN"/*; do
    [ -x "$t" ] || continue
    "$t" --help | sed "s|^|$(basename "$t") |" >> "$H"
done
"$BIN/score-ngram" build --help | sed 's|^|score-ngram-build |' >> "$H"
# TOOL LETTER LONG, one per option shown with a short letter; TOOL - LONG without
grep -E '^[a-z-]+   -[a-zA-Z], --[a-z0-9-]+' "$H" | awk '{ print $1, substr($2, 2, 1), $3 }' | sed 's/ --/ /' > "$TMP/short"
grep -E '^[a-z-]+       --[a-z0-9-]+' "$H" | awk '{ print $1, "-", substr($2, 3) }' > "$TMP/long"
n_tools=$(cut -d' ' -f1 "$TMP/short" "$TMP/long" | sort -u | wc -l)
check "the --help of $n_tools programs lists options" test "$n_tools" -ge 20

# the vocabulary: letter, long names it may have (a model option may be *-model)
vocab='m:model|[a-z]+-model H:heuristics s:seed|seeds o:output t:threads n:max-new-tokens'
bad=""
for v in $vocab; do
    l=${v%%:*} names=${v#*:}
    wrong=$(awk -v l="$l" '$2 == l { print $1 " -" $2 " --" $3 }' "$TMP/short" | grep -vE -- " --($names)\$")
    [ -z "$wrong" ] || bad="$bad $wrong;"
done
if [ -z "$bad" ]; then ok "-m -H -s -o -t -n mean model, heuristics, seed(s), output, threads, new tokens everywhere"
else not_ok "-m -H -s -o -t -n mean the same everywhere" "$bad"; fi

# an option of the vocabulary without its letter; analyze-sampler's -s was
# the sampler's (now -S, -s still accepted), so its --seed has no letter
missing=$(awk '{ print $1, $3 }' "$TMP/long" | grep -E ' (model|heuristics|seed|seeds|output|threads|max-new-tokens)$' |
    grep -vx 'analyze-sampler seed')
if [ -z "$missing" ]; then ok "every program with one of those options has its letter"
else not_ok "every program with one of those options has its letter" "$(echo $missing)"; fi

# every other letter has one meaning, except those that had two before:
# -b batch/token-batch-size, -c ctx/config, -d db/dataset, -q quiet/queue,
# -v verbose/vocab
multi=$(awk '{ print $2, $3 }' "$TMP/short" | sort -u | awk '{ n[$1]++; s[$1] = s[$1] " " $2 } END { for (k in n) if (n[k] > 1) print k ":" s[k] }' |
    grep -vE '^[mHsotnh]:' | sort | tr '\n' ';')
want='b: batch token-batch-size;c: config ctx;d: dataset db;q: queue quiet;v: verbose vocab;'
if [ "$multi" = "$want" ]; then ok "no other letter has gained a second meaning"
else not_ok "no other letter has gained a second meaning" "letters with several meanings: $multi (known: $want)"; fi

# the older spellings still parse (options are read in order: --help ends the run after them)
for c in "analyze-sampler -s x.gguf" "train-lm -n 5" "train-bpe -n 300" "score-ngram -n 4" \
         "verify --skip-invalid" "score-reward --skip-invalid" "gen-candidates -s 0-3" "generate -H x.yaml"; do
    set -- $c
    expect_status "$c still parses" 0 "$BIN/$@" --help
done
set --
expect_status "analyze-sampler -S is the sampler" 0 "$BIN/analyze-sampler" -S x.gguf --help
expect_status "an unknown letter is still a usage error" 2 "$BIN/train-lm" -Z 5

without=$(cut -d' ' -f1 "$H" | sort -u | while read -r t; do
    grep -q "^$t Exit status: 0 success; 1 bad input" "$H" || printf '%s ' "$t"; done)
if [ -z "$without" ]; then ok "every --help says what the exit statuses mean"
else not_ok "every --help says what the exit statuses mean" "not in: $without"; fi
