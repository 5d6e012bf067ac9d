# install.sh — make install puts programs, the static and shared library
# (soname libasn.so.0), headers, a pkg-config file and a man page per
# program under PREFIX, and a program builds against them with pkg-config,
# statically or against the shared library.
. "$ASN_ROOT/tests/lib/cli.sh"
expect_status "make install PREFIX=..." 0 make -s -C "$ROOT" install PREFIX="$TMP/p"
check "programs, library, headers and asn.pc are installed" test -x "$TMP/p/bin/gen-candidates" -a -f "$TMP/p/lib/libasn.a" -a -f "$TMP/p/include/asn/sampling.h" -a -f "$TMP/p/lib/pkgconfig/asn.pc"
cat > "$TMP/use.c" <<'CEOF'
#include <asn/sampling.h>
#include <stdio.h>
int main(void) { printf("%s\n", asn_proc_name(ASN_PROC_TOP_P)); return 0; }
CEOF
export PKG_CONFIG_PATH="$TMP/p/lib/pkgconfig"
check "a program links libasn.a statically with pkg-config --libs --static asn" sh -c "
    cc '$TMP/use.c' \$(pkg-config --cflags --libs --static asn | sed 's/-lasn /-l:libasn.a /') -o '$TMP/use' &&
    ! readelf -d '$TMP/use' | grep -q 'NEEDED.*libasn' && '$TMP/use' | grep -qx top_p"
check "the shared library is installed with its soname links" sh -c "test -f '$TMP/p/lib/libasn.so.0.1.0' -a -L '$TMP/p/lib/libasn.so.0' -a -L '$TMP/p/lib/libasn.so' &&
    readelf -d '$TMP/p/lib/libasn.so.0.1.0' | grep -q 'SONAME.*libasn.so.0'"
check "a program links with pkg-config --libs asn against libasn.so and runs" sh -c "
    cc '$TMP/use.c' \$(pkg-config --cflags --libs asn) -o '$TMP/use-so' &&
    readelf -d '$TMP/use-so' | grep -q 'NEEDED.*libasn.so.0' &&
    LD_LIBRARY_PATH='$TMP/p/lib' '$TMP/use-so' | grep -qx top_p"
check "a man page per program, which man renders" sh -c "
    for t in '$ROOT'/tools/*.c; do n=\$(basename \$t .c); test -s '$TMP/p/share/man/man1/'\$n.1 || exit 1; done &&
    man -l '$TMP/p/share/man/man1/score-reward.1' 2>/dev/null | grep -q 'score-reward - Label each candidate'"
