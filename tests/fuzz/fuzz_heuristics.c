/* fuzz_heuristics.c — libFuzzer target: arbitrary bytes as a heuristics
 * YAML file (the YAML loader, scalar resolution, pipeline and parameter
 * validation). Must never crash or leak, only return errors. */
#include "asn/sampling.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    asn_err e;
    asn_heuristics *hs = asn_heuristics_parse("fuzz.yaml", (const char *)data, size, &e);
    asn_heuristics_free(hs);
    return 0;
}
