# oom.sh — out of memory. Under ulimit -v limits from "too small to load the
# shared libraries" up to "enough", model loading and generation either run
# or exit 1 with one clear line (the model file that cannot be mapped, the
# allocation that failed and what it was for, or the batch refused with its
# estimate); never a signal, never a hang. A --batch / --ctx that cannot fit
# is refused before any work with the estimate, whose KV cache size is
# checked against the model's config read here from the GGUF.
. "$ASN_ROOT/tests/lib/cli.sh"
M="$ROOT/examples/models/demo-ref.gguf"
H="$DATA/reference-configs/custom_logit_processors_test.yaml"
P="$DATA/reference-configs/test_prompts.jsonl"
PY=/usr/bin/python3
if grep -q __asan_init "$BIN/gen-candidates" 2>/dev/null; then
    skip "out of memory under ulimit -v" "AddressSanitizer reserves terabytes of address space"
    exit 0
fi

# the smallest limit (KiB) at which a tool reaches main (below it the
# shared libraries' constructors fail: GnuTLS's crashes, OpenBLAS's thread
# start exits 130; nothing of asn has run yet)
base=$( (b=40000
while [ $b -lt 400000 ]; do
    (ulimit -v $b; "$BIN/gen-candidates" --version) > /dev/null 2>&1 && break
    b=$((b + 2000))
done; echo $b) 2>/dev/null)
runs=0 bad=0 kinds=""
for tool in gen-candidates generate; do
    v=$base
    while [ $v -le $((base + 80000)) ]; do
        if [ $tool = gen-candidates ]; then set -- "$BIN/gen-candidates" -m "$M" -H "$H" -n 8 -t 1 "$P"
        else set -- "$BIN/generate" -m "$M" -n 8 -t 1 "Once upon a time"; fi
        (ulimit -v $v; exec timeout 60 "$@") > /dev/null 2> "$TMP/err"; rc=$?
        runs=$((runs + 1))
        msg=$(grep -v '^OpenBLAS' "$TMP/err" | head -1)
        case "$rc:$msg" in
        0:*) k=ran ;;
        1:*"demo-ref.gguf: mmap: Cannot allocate memory"*) k=mmap ;;
        1:*": out of memory allocating "*" for "*) k=alloc ;;
        1:*": out of memory allocating "*) k=alloc-unnamed; echo "# $tool under ulimit -v $v: $msg" ;;
        1:*"--batch "*" need about "*"lower --batch or --ctx"*) k=estimate ;;
        *:) grep -q '^OpenBLAS blas_thread_init' "$TMP/err" && k=openblas-threads || k=bad ;;
        *) k=bad ;;
        esac
        [ $k = bad ] && { bad=$((bad + 1)); echo "# $tool under ulimit -v $v: exit $rc: $(head -c 300 "$TMP/err")"; }
        case " $kinds " in *" $k "*) ;; *) kinds="$kinds $k" ;; esac
        v=$((v + 4000))
    done
done
if [ $bad = 0 ]; then ok "$runs runs under ulimit -v $base..$((base + 80000)) KiB: each ran or failed with a clear line (seen:$kinds)"
else not_ok "runs under ulimit -v" "$bad of $runs crashed, hung or gave an unclear message"; fi
case " $kinds " in *" mmap "*) ok "a model that cannot be mapped: exit 1, the file named" ;;
*) not_ok "a model that cannot be mapped" "not seen (seen:$kinds)" ;; esac
case " $kinds " in *" ran "*) ok "enough memory: the same commands run" ;; *) not_ok "enough memory" "never ran (seen:$kinds)" ;; esac

# a batch that cannot fit: refused before generating, with the estimate
(ulimit -v $((base + 200000)); exec timeout 60 "$BIN/gen-candidates" -m "$M" -H "$H" -n 200 -c 256 -b 4096 \
    --seeds 0-999 -t 1 -o "$TMP/never.jsonl" "$P") > /dev/null 2> "$TMP/err"; rc=$?
if [ $rc = 1 ] && grep -q 'lower --batch or --ctx' "$TMP/err" && [ ! -s "$TMP/never.jsonl.part" ]; then
    ok "--batch 4096 -c 256 refused before any candidate: $(cut -c1-140 "$TMP/err")..."
else not_ok "--batch 4096 -c 256 refused" "exit $rc: $(head -c 300 "$TMP/err")"; fi
check "the estimate's KV cache is batch x positions x n_layer x 2 x n_head_kv x head_dim x 4 bytes of the GGUF's config" \
    $PY - "$M" "$TMP/err" <<'PYEOF'
import re, struct, sys
b = open(sys.argv[1], "rb").read()
n_t, n_kv = struct.unpack_from("<QQ", b, 8)
off, kv = 24, {}
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def string(o):
    n, = struct.unpack_from("<Q", b, o); return b[o + 8:o + 8 + n].decode("utf-8", "replace"), o + 8 + n
def value(t, o):
    if t == 8: return string(o)
    if t == 9:
        at, n = struct.unpack_from("<IQ", b, o); o += 12
        for _ in range(n): _, o = value(at, o)
        return None, o
    fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}[t]
    return struct.unpack_from("<" + fmt, b, o)[0], o + SIZES[t]
for _ in range(n_kv):
    k, off = string(off); t, = struct.unpack_from("<I", b, off); off += 4
    kv[k], off = value(t, off)
a = kv["general.architecture"]
n_layer, n_head, n_embd = kv[a + ".block_count"], kv[a + ".attention.head_count"], kv[a + ".embedding_length"]
n_head_kv = kv.get(a + ".attention.head_count_kv", n_head)
kvd = n_head_kv * (n_embd // n_head)
want = 4096 * 256 * n_layer * 2 * kvd * 4
msg = open(sys.argv[2]).read()
m = re.search(r"KV cache ([0-9.]+) (GiB|MiB): (\d+) layers x 2 x (\d+) floats", msg)
got = float(m.group(1)) * (1 << 30 if m.group(2) == "GiB" else 1 << 20)
assert int(m.group(3)) == n_layer and int(m.group(4)) == kvd, (m.groups(), n_layer, kvd)
assert abs(got - want) <= 0.006 * (1 << 30), (got, want)
PYEOF
