# faults.sh — the fault-injection suite of tests/faults/ with a few kill
# points per tool (FAULT_POINTS, default 2); `make test-faults` runs it
# with 50.
. "$ASN_ROOT/tests/lib/cli.sh"
if [ -n "${ASN_SANITIZED:-}" ]; then
    # kills, full disks and signals test the programs' process behaviour,
    # which the plain pass covers; the sanitizer pass would take minutes
    skip "fault injection" "the sanitizer pass: the faults run in make test"
    exit 0
fi
export FAULT_POINTS=${FAULT_POINTS:-2}
for t in "$ROOT"/tests/faults/*.sh; do
    [ "$(basename "$t")" = lib.sh ] || sh "$t" 2>/dev/null
done
