# install.sh — make install puts programs, library, headers and a pkg-config
# file under PREFIX, and a program builds against them with pkg-config.
. "$ASN_ROOT/tests/lib/cli.sh"
expect_status "make install PREFIX=..." 0 make -s -C "$ROOT" install PREFIX="$TMP/p"
check "programs, library, headers and asn.pc are installed" test -x "$TMP/p/bin/gen-candidates" -a -f "$TMP/p/lib/libasn.a" -a -f "$TMP/p/include/asn/sampling.h" -a -f "$TMP/p/lib/pkgconfig/asn.pc"
cat > "$TMP/use.c" <<'CEOF'
#include <asn/sampling.h>
#include <stdio.h>
int main(void) { printf("%s\n", asn_proc_name(ASN_PROC_TOP_P)); return 0; }
CEOF
export PKG_CONFIG_PATH="$TMP/p/lib/pkgconfig"
check "a program links with pkg-config --libs --static asn" sh -c "cc '$TMP/use.c' \$(pkg-config --cflags --libs --static asn) -o '$TMP/use' && '$TMP/use' | grep -qx top_p"
