# refs.sh — every file that a comment or a doc names exists in the tree
# (tests/scripts/check_refs.py says what counts as a reference).
. "$ASN_ROOT/tests/lib/cli.sh"
PY=/usr/bin/python3
CHECK="$ROOT/tests/scripts/check_refs.py"
if $PY "$CHECK" "$ROOT" > "$TMP/dangling"; then ok "every file reference in comments and docs resolves"
else not_ok "every file reference in comments and docs resolves" "$(head -c 600 "$TMP/dangling")"; fi

# the checker itself: planted references are found, real ones and code are
# not (the planted names are spelled through variables, so that this file
# does not name them itself)
X=nosuch D=DESIGN P=proc DOC=doc DOT=.
cat > "$TMP/planted.c" <<CEOF
/* See lib/core/$X.c and docs/$X.md, $D.md and $P.c, as the
 * semantics $DOC § 4 says; lib/core/sbuf.c, tests/unit/test_*.c, docs/,
 * lib/model/arch_NAME.c and <stdio.h> exist. */
#include <stdio.h>
static int f(struct { int c; } S) { return S${DOT}c; }
CEOF
$PY "$CHECK" "$ROOT" "$TMP/planted.c" > "$TMP/found"; rc=$?
check "the checker fails on dangling references" test "$rc" = 1
for ref in "lib/core/$X.c" "docs/$X.md" "$D.md" "$P.c" "semantics $DOC §"; do
    check "the checker names $ref" grep -qF ": $ref" "$TMP/found"
done
check "the checker names nothing else (existing files, patterns, templates, code)" test "$(wc -l < "$TMP/found")" = 5
