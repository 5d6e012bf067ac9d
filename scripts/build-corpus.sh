#!/bin/sh
# build-corpus.sh — the demo corpus: English text from public-domain and
# freely licensed Debian packages (King James Bible, fortunes, The Devil's
# Dictionary, the 1913 Webster's via GCIDE), normalized to plain UTF-8
# documents, with a held-out validation split.
#
#   scripts/build-corpus.sh [OUTDIR]        (default build/corpus)
#
# Writes OUTDIR/train.txt, OUTDIR/valid.txt, OUTDIR/SHA256SUMS and
# OUTDIR/SOURCES (the package versions used). Documents are separated by two
# blank lines ("\n\n\n"); inside a document there is never more than one blank
# line in a row, no line ends in whitespace, and there are no control
# characters but the newline. Same packages -> same bytes: the order and the
# split depend on nothing but the text (see examples/corpus/README.md).
#
# Missing packages are installed with apt-get when run as root; otherwise the
# script names the apt-get line to run and stops.
set -eu

OUT=${1:-build/corpus}
PKGS="bible-kjv bible-kjv-text fortunes-min fortunes dict-devil dict-gcide"
# The versions the checksums in examples/corpus/README.md were made with
# (Debian 12 "bookworm"); other versions build too, with other bytes.
KNOWN="bible-kjv=4.38 bible-kjv-text=4.38 fortunes-min=1:1.99.1-7.3 fortunes=1:1.99.1-7.3 dict-devil=1.0-13.1 dict-gcide=0.48.5+nmu2"
# Every VALID_EVERY-th document of each source goes to valid.txt (2.5%).
VALID_EVERY=40
# GCIDE entries shorter than this (after cleaning) are left out: the
# one-line definitions, which would otherwise make up most of the corpus.
GCIDE_MIN_BYTES=400
# Fortune files left out: pictures, and the non-English one.
FORTUNE_SKIP="ascii-art translate-me"
# Documents holding this (an extended regular expression, matched in
# lower case) are left out: a demo model should not learn slurs. In these
# sources: two entries of The Devil's Dictionary.
SLURS="nigger"

LC_ALL=C
export LC_ALL
me=build-corpus.sh
die() { echo "$me: $*" >&2; exit 1; }

# ------------------------------------------------------------- packages

missing=
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    [ "$(id -u)" = 0 ] || die "missing Debian packages; as root, run: apt-get install --no-install-recommends$missing"
    echo "$me: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends $missing >&2 ||
        { apt-get update >&2 && apt-get install -y --no-install-recommends $missing >&2; } ||
        die "apt-get install$missing failed"
fi
for p in $PKGS; do
    v=$(dpkg-query -W -f='${Version}' "$p")
    case " $KNOWN " in
    *" $p=$v "*) ;;
    *) echo "$me: warning: $p $v is not the version the published checksums were made with" >&2 ;;
    esac
done

BIBLE_DATA=/usr/lib/bible.data
FORTUNES=/usr/share/games/fortunes
DICTD=/usr/share/dictd
for f in "$BIBLE_DATA" "$FORTUNES/fortunes" "$DICTD/devil.index" "$DICTD/devil.dict.dz" \
         "$DICTD/gcide.index" "$DICTD/gcide.dict.dz"; do
    [ -f "$f" ] || die "$f: missing (is its package installed?)"
done

mkdir -p "$OUT"
TMP="$OUT/tmp"
rm -rf "$TMP"
mkdir -p "$TMP"

# Each source becomes a stream of documents, each ended by a line holding
# only \036 (ASCII record separator), in the source's own order.

# ----------------------------------------------- King James Bible (KJV)
# One document per chapter: "Genesis 1", a blank line, one verse per line
# (verse numbers dropped). `bible -f` prints "Ge1:1 In the beginning...".

bible -f -p "$(dirname "$BIBLE_DATA")" Gen1:1-Rev22:21 > "$TMP/kjv.raw" || die "bible failed"
awk -v names="Genesis|Exodus|Leviticus|Numbers|Deuteronomy|Joshua|Judges|Ruth|1 Samuel|2 Samuel|1 Kings|2 Kings|1 Chronicles|2 Chronicles|Ezra|Nehemiah|Esther|Job|Psalms|Proverbs|Ecclesiastes|Song of Solomon|Isaiah|Jeremiah|Lamentations|Ezekiel|Daniel|Hosea|Joel|Amos|Obadiah|Jonah|Micah|Nahum|Habakkuk|Zephaniah|Haggai|Zechariah|Malachi|Matthew|Mark|Luke|John|Acts|Romans|1 Corinthians|2 Corinthians|Galatians|Ephesians|Philippians|Colossians|1 Thessalonians|2 Thessalonians|1 Timothy|2 Timothy|Titus|Philemon|Hebrews|James|1 Peter|2 Peter|1 John|2 John|3 John|Jude|Revelation" '
BEGIN { nb = split(names, name, "|") }
NF == 0 { next }
{
    ref = $1; book = ref; sub(/[0-9]+:[0-9]+$/, "", book)
    chap = ref; sub(/:[0-9]+$/, "", chap); sub(/^.*[^0-9]/, "", chap)
    if (book != pbook) b++
    if (book != pbook || chap != pchap) {
        if (nchap++) print "\036"
        print name[b] " " chap; print ""; pbook = book; pchap = chap
    }
    text = $0; sub(/^[^ ]+ +/, "", text); print text; nverse++
}
END {
    if (nchap) print "\036"
    if (b != nb || nchap != 1189 || nverse != 31102) {
        printf "kjv: %d books, %d chapters, %d verses; expected 66, 1189, 31102\n", b, nchap, nverse > "/dev/stderr"; exit 1
    }
}' "$TMP/kjv.raw" > "$TMP/kjv.docs" || die "KJV: unexpected output from bible"

# ------------------------------------------------------------ fortunes
# One document per fortune (files in name order, "%" lines between them).
# Line breaks and indentation are kept (poems, dialogues); tabs are
# expanded, overstrike (_^Hx) is resolved, bells dropped; a fortune still
# holding control characters or mojibake after that is left out.

# The files of these two packages only (not those of fortunes-off or of
# other fortune packages that may be installed beside them).
files=
for f in $(dpkg -L fortunes-min fortunes | grep "^$FORTUNES/[^/.]*\$" | sort -u); do
    case " $FORTUNE_SKIP " in *" ${f##*/} "*) continue ;; esac
    [ -f "$f" ] && [ ! -L "$f" ] && files="$files $f"
done
[ -n "$files" ] || die "no fortune files in $FORTUNES"
awk '
function render(s,   n, i, c, pos, out, col, k) {
    # overstrike and tabs, as a terminal shows them
    n = 0; pos = 0; split("", cell)
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "\b") { if (pos > 0) pos--; continue }
        if (c == "\a" || c == "\r") continue
        if (c == "\t") { do { cell[++pos] = " " } while (pos % 8); if (pos > n) n = pos; continue }
        cell[++pos] = c; if (pos > n) n = pos
    }
    out = ""
    for (k = 1; k <= n; k++) out = out (k in cell ? cell[k] : " ")
    sub(/[ ]+$/, "", out)
    if (out ~ /^[ ]+--/) sub(/^[ ]+/, "", out)   # right-aligned attributions
    return out
}
function end_doc() {
    if (doc != "" && !bad) printf "%s\n\036\n", doc
    else if (bad) dropped++
    doc = ""; bad = 0
}
FNR == 1 && NR != 1 { end_doc() }
$0 == "%" { end_doc(); next }
{
    line = render($0)
    if (line ~ /[\001-\010\013-\037\177]/ || index(line, "\303\242\302") || index(line, "\303\203")) bad = 1
    doc = doc (doc == "" ? "" : "\n") line
}
END { end_doc(); if (dropped) printf "fortunes: %d left out (control characters or mojibake)\n", dropped > "/dev/stderr" }
' $files > "$TMP/fortunes.docs"

# --------------------------------------------- dictd dictionaries (shared)
# Entries are cut from the .dict file at the offsets of its .index (base64
# numbers), each body once, in file order; the 00-database-* entries (the
# file headers) are skipped.

dict_entries() { # name
    awk '
    function b64(s,   i, n) { n = 0; for (i = 1; i <= length(s); i++) n = n * 64 + index(A, substr(s, i, 1)) - 1; return n }
    BEGIN { FS = "\t"; A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" }
    $1 !~ /^00-?(database|gcide|web1913)/ { print b64($2), b64($3) }
    ' "$DICTD/$1.index" | sort -n -u > "$TMP/$1.off"
    gzip -dc "$DICTD/$1.dict.dz" | awk -v OFF="$TMP/$1.off" '
    BEGIN {
        while ((getline line < OFF) > 0) { split(line, f, " "); n++; start[n] = f[1] + 0; stop[n] = f[1] + f[2] }
        k = 1
    }
    {
        while (k <= n && pos >= stop[k]) { if (open) { print "\036"; open = 0 } k++ }
        if (k <= n && pos >= start[k]) { print; open = 1 }
        pos += length($0) + 1
    }
    END { if (open) print "\036" }'
}

# ------------------------------------------------ The Devil's Dictionary
# One document per entry. Prose is unwrapped (a line at column 0 continues
# the line before it); indented lines (paragraph starts, verse, quotations)
# start lines of their own; spaces are collapsed.

dict_entries devil | awk '
function end_doc() { sub(/\n+$/, "", doc); if (doc != "") printf "%s\n\036\n", doc; doc = ""; prev = "" }
$0 == "\036" { end_doc(); next }
{
    line = $0; gsub(/[ \t]+/, " ", line); sub(/ $/, "", line)
    if (line == "") { if (doc != "") doc = doc "\n"; prev = ""; next }
    if (line !~ /^ / && prev != "") doc = doc " " line
    else { sub(/^ /, "", line); doc = doc (doc == "" || doc ~ /\n$/ ? "" : "\n") line }
    prev = line
}
END { end_doc() }' > "$TMP/devil.docs"

# ---------------------------------------------- Webster's 1913 (GCIDE)
# One document per entry. Kept: the paragraphs whose source tag is the 1913
# Webster's (or its 1913 supplement), and untagged ones, of entries that have
# at least one such tag; WordNet- and editor-only paragraphs are dropped.
# Markup removed: syllabified headwords (\A*ban"don\) with the pronunciation
# after them, {cross-reference braces}, source tags; accent codes (['e],
# [ae], [alpha], ...) become the Unicode letters. Lines are unwrapped;
# numbered senses start lines; blank lines between paragraphs are kept.

cat > "$TMP/gcide.awk" <<'EOF'
function repl(s, from, to,   out, i) {
    out = ""
    while ((i = index(s, from)) > 0) { out = out substr(s, 1, i - 1) to; s = substr(s, i + length(from)) }
    return out s
}
# Pronunciation marks outside the pronunciations ([.a] [-e] [~e] [o^]) -> the letters.
function marks(s,   out, c) {
    out = ""
    while (match(s, /\[[-.*~=^]?[a-z][a-z]?[\^]?\]/)) {
        c = substr(s, RSTART + 1, RLENGTH - 2); gsub(/[-.*~=^]/, "", c)
        if (RLENGTH == length(c) + 2) c = substr(s, RSTART, RLENGTH)  # no mark: a word, e.g. [is]
        out = out substr(s, 1, RSTART - 1) c; s = substr(s, RSTART + RLENGTH)
    }
    return out s
}
function clean(t,   k) {
    gsub(/\\[^\\]*\\ ?\([^()]*\)/, "", t)
    gsub(/\\[^\\]*\\/, "", t)
    gsub(/[{}]/, "", t)
    gsub(/[ \t]+/, " ", t); gsub(/ ?\n ?/, "\n", t); sub(/^ /, "", t); sub(/ $/, "", t)
    gsub(/ +,/, ",", t); gsub(/ +\./, ".", t)
    if (index(t, "[")) {
        for (k = 1; k <= nacc; k++) if (index(t, acc_from[k])) t = repl(t, acc_from[k], acc_to[k])
        if (index(t, "[")) t = marks(t)
    }
    return t
}
function end_par() {
    if (par != "") {
        if (tag == "" || tag ~ /1913/) { np++; pars[np] = clean(par) }
        if (tag ~ /1913/) w1913 = 1
    }
    par = ""; tag = ""
}
function end_entry(   i, doc) {
    end_par()
    if (w1913) {
        doc = ""
        for (i = 1; i <= np; i++) if (pars[i] != "") doc = doc (doc == "" ? "" : "\n\n") pars[i]
        if (length(doc) >= min_bytes) printf "%s\n\036\n", doc
        else short++
    }
    np = 0; par = ""; tag = ""; w1913 = 0
}
BEGIN {
    n = split("['a] á ['e] é ['i] í ['o] ó ['u] ú ['y] ý ['A] Á ['E] É " \
              "[`a] à [`e] è [`i] ì [`o] ò [`u] ù [^a] â [^e] ê [^i] î [^o] ô [^u] û " \
              "[\"a] ä [\"e] ë [\"i] ï [\"o] ö [\"u] ü [\"y] ÿ [\"A] Ä [\"O] Ö [\"U] Ü " \
              "[~a] ã [~n] ñ [~o] õ [~N] Ñ [,c] ç [,C] Ç " \
              "[=a] ā [=e] ē [=i] ī [=o] ō [=u] ū [=y] ȳ [imac] ī [a^] ă [e^] ĕ [i^] ĭ [o^] ŏ [u^] ŭ " \
              "[ae] æ [AE] Æ [oe] œ [OE] Œ [=ae] ǣ [eth] ð [thorn] þ [yogh] ȝ " \
              "[aum] ä [asl] a [udd] u [=oo] oo [oo^] oo [dsdot] d " \
              "[alpha] α [beta] β [gamma] γ [delta] δ [epsilon] ε [zeta] ζ [eta] η [theta] θ " \
              "[iota] ι [kappa] κ [lambda] λ [mu] μ [nu] ν [xi] ξ [omicron] ο [pi] π [rho] ρ " \
              "[sigma] σ [tau] τ [upsilon] υ [phi] φ [chi] χ [psi] ψ [omega] ω " \
              "[deg] ° [sect] § [root] √ [frac12] ½ [frac14] ¼ [frac34] ¾ [sharp] ♯ [flat] ♭", a, " ")
    for (i = 1; i < n; i += 2) { nacc++; acc_from[nacc] = a[i]; acc_to[nacc] = a[i + 1] }
}
$0 == "\036" { end_entry(); next }
/^[ \t]*$/ { end_par(); next }
/^[ \t]*\[(1913 Webster|Webster 1913|WordNet|PJC|Century|RDH|AS|GG|RP)[^]]*\]/ {
    t = $0; sub(/^[ \t]*\[/, "", t); sub(/\].*/, "", t); tag = tag " " t; next
}
/^[ \t]+[0-9]+\. / && par != "" { par = par "\n" $0; next }
{ par = par " " $0 }
EOF
dict_entries gcide | awk -v min_bytes="$GCIDE_MIN_BYTES" -f "$TMP/gcide.awk" > "$TMP/gcide.docs"

# -------------------------------------------------- assemble and split
# Per document: trailing spaces dropped, runs of blank lines collapsed to
# one, leading and trailing blank lines dropped; exact duplicates (the
# same text twice, in any source) kept once; documents matching SLURS left
# out. Document i of a source (from
# 0, after that) goes to valid.txt when i % VALID_EVERY == VALID_EVERY / 2.
# The sources are interleaved: documents are ordered by their position in
# their source, (i + 1/2) / n, so every stretch of the file mixes all of
# them in proportion (ties: source name).

for s in kjv fortunes devil gcide; do
    awk -v src="$s" '
    function end_doc(   t) {
        t = doc; gsub(/[ \t]+\n/, "\n", t); sub(/[ \t]+$/, "", t)
        gsub(/\n\n\n+/, "\n\n", t); sub(/^\n+/, "", t); sub(/\n+$/, "", t)
        if (t != "") { gsub(/\n/, "\037", t); print src "\t" t }
        doc = ""
    }
    $0 == "\036" { end_doc(); next }
    { doc = doc $0 "\n" }
    END { end_doc() }' "$TMP/$s.docs"
done > "$TMP/all.lines"

awk -F '\t' -v slurs="$SLURS" '
tolower($2) ~ slurs { slurred++; next }
!seen[$2]++
END { if (slurred) printf "left out: %d documents with a racial slur\n", slurred > "/dev/stderr" }
' "$TMP/all.lines" > "$TMP/uniq.lines"
awk -F '\t' -v every="$VALID_EVERY" '
NR == FNR { n[$1]++; next }
{
    i = k[$1]++
    split_ = (i % every == int(every / 2)) ? "valid" : "train"
    printf "%s\t%.15f\t%s\t%s\n", split_, (i + 0.5) / n[$1], $1, $2
}' "$TMP/uniq.lines" "$TMP/uniq.lines" | sort -t "$(printf '\t')" -k1,1 -k2,2 -k3,3 -s > "$TMP/sorted.lines"

for split_ in train valid; do
    awk -F '\t' -v want="$split_" '
    $1 == want { t = $4; gsub(/\037/, "\n", t); printf "%s%s", (n++ ? "\n\n\n" : ""), t }
    END { if (n) printf "\n" }' "$TMP/sorted.lines" > "$OUT/$split_.txt"
done

# ----------------------------------------------------------- checks

for f in train valid; do
    iconv -f UTF-8 -t UTF-8 "$OUT/$f.txt" > /dev/null 2>&1 || die "$OUT/$f.txt: not valid UTF-8"
    ! grep -q "$(printf '[\001-\011\013-\037\177]')" "$OUT/$f.txt" || die "$OUT/$f.txt: control characters"
    ! grep -q '[[:space:]]$' "$OUT/$f.txt" || die "$OUT/$f.txt: trailing whitespace"
done

dpkg-query -W -f='${Package} ${Version}\n' $PKGS > "$OUT/SOURCES"
(cd "$OUT" && sha256sum train.txt valid.txt > SHA256SUMS)

awk -F '\t' '{ d[$1 " " $3]++; b[$1 " " $3] += length($4) + 3; d[$1]++; b[$1] += length($4) + 3 }
END {
    printf "%-6s %-9s %9s %11s\n", "split", "source", "documents", "bytes"
    split("kjv fortunes devil gcide", s, " ")
    for (j = 1; j <= 2; j++) {
        sp = j == 1 ? "train" : "valid"
        for (i = 1; i <= 4; i++) printf "%-6s %-9s %9d %11d\n", sp, s[i], d[sp " " s[i]], b[sp " " s[i]]
        printf "%-6s %-9s %9d %11d\n", sp, "all", d[sp], b[sp]
    }
}' "$TMP/sorted.lines" >&2
cat "$OUT/SHA256SUMS" >&2
rm -rf "$TMP"
