# docs.sh — docs/tools.md is exactly what the programs' --help says now.
. "$ASN_ROOT/tests/lib/cli.sh"
sh "$ROOT/scripts/gen-tool-docs.sh" "$BIN" > "$TMP/tools.md"
if cmp -s "$TMP/tools.md" "$ROOT/docs/tools.md"; then ok "docs/tools.md matches every program's --help"
else not_ok "docs/tools.md matches every program's --help" "regenerate it: sh scripts/gen-tool-docs.sh > docs/tools.md; $(diff "$ROOT/docs/tools.md" "$TMP/tools.md" | head -5)"; fi
