# lib_cycles.sh — no dependency cycles among the files and folders of lib/
# beyond the ones listed below: the #include graph, the file graph (an
# object uses a symbol another defines, read by nm) and the folder graph
# (tests/scripts/lib_cycles.py). A new cycle fails with the files in it.
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
OBJ="$BIN/../build/obj"

# Cycles that existed when this test was written, each one line as the
# script prints it. Allowed for now; an entry that no longer occurs is
# reported (ok) so that the list can be shortened.
ALLOWED='file: lib/model/arch.c lib/model/arch_gemma2.c lib/model/arch_gemma3.c lib/model/model.c'

if ! command -v nm > /dev/null; then
    skip "lib/ dependency cycles" "nm (binutils) is not installed"
    exit 0
fi
if ! ls "$OBJ"/lib/*/*.o > /dev/null 2>&1; then
    skip "lib/ dependency cycles" "no objects under $OBJ/lib"
    exit 0
fi
check "the cycle script runs" "$PY" "$ROOT/tests/scripts/lib_cycles.py" "$OBJ"
"$PY" "$ROOT/tests/scripts/lib_cycles.py" "$OBJ" > "$TMP/cycles" 2> "$TMP/cycles.err"

new=$(printf '%s\n' "$ALLOWED" | grep -vxF -f - "$TMP/cycles")
if [ -z "$new" ]; then ok "no new dependency cycle in lib/"; else not_ok "no new dependency cycle in lib/" "$new"; fi
for c in sampling learn grammar; do
    if grep -q "lib/$c\b" "$TMP/cycles"; then not_ok "lib/$c is in no cycle" "$(grep "lib/$c" "$TMP/cycles")"
    else ok "lib/$c is in no cycle"; fi
done
printf '%s\n' "$ALLOWED" | while IFS= read -r line; do
    grep -qxF "$line" "$TMP/cycles" || ok "allowed cycle gone (shorten the list): $line"
done

# The script finds cycles: two objects that use each other, a folder cycle
# and a header cycle (a copy of the script run on a made-up tree).
mkdir -p "$TMP/t/tests/scripts" "$TMP/t/lib/a" "$TMP/t/lib/b" "$TMP/t/lib/asn" "$TMP/obj/lib/a" "$TMP/obj/lib/b"
cp "$ROOT/tests/scripts/lib_cycles.py" "$TMP/t/tests/scripts/"
printf '#include "asn/y.h"\n' > "$TMP/t/lib/asn/x.h"
printf '#include "asn/x.h"\n' > "$TMP/t/lib/asn/y.h"
printf 'int g(void); int f(void) { return g(); }\n' > "$TMP/a1.c"
printf 'int f(void); int g(void) { return 1; } int h(void) { return f(); }\n' > "$TMP/a2.c"
printf 'int h(void); int k(void) { return h(); }\n' > "$TMP/b1.c"
printf 'int k(void); int m(void) { return k(); }\n' > "$TMP/a3.c"
if command -v cc > /dev/null && cc -c "$TMP/a1.c" -o "$TMP/obj/lib/a/one.o" && cc -c "$TMP/a2.c" -o "$TMP/obj/lib/a/two.o" &&
   cc -c "$TMP/b1.c" -o "$TMP/obj/lib/b/three.o" && cc -c "$TMP/a3.c" -o "$TMP/obj/lib/a/four.o"; then
    "$PY" "$TMP/t/tests/scripts/lib_cycles.py" "$TMP/obj" > "$TMP/made" 2>&1
    printf 'include: lib/asn/x.h lib/asn/y.h\nfile: lib/a/one.c lib/a/two.c\narea: lib/a lib/b\n' > "$TMP/want"
    check "the script finds a header cycle, a file cycle and a folder cycle" cmp "$TMP/want" "$TMP/made"
else
    skip "the script finds made-up cycles" "no C compiler"
fi
