/* fuzz_grammar.c — libFuzzer target: the constraint compilers of
 * asn/grammar.h. The first byte picks the front end: GBNF text, a JSON
 * Schema (compact and with whitespace), a regular expression, or a choice
 * list (options split at newlines); the rest of the input is its text. A
 * grammar that compiles is then run over the input's bytes, one at a time,
 * as a matcher would be (state advance, completion). Errors are expected;
 * crashes, hangs and leaks are not. */
#include "asn/grammar.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run_grammar(const char *gbnf, const uint8_t *bytes, size_t n)
{
    asn_err e;
    asn_grammar *g = asn_gbnf_parse(gbnf, strlen(gbnf), &e);
    if (!g)
        return;
    (void)asn_grammar_n_rules(g);
    asn_gstate s = {0};
    asn_gstate_start(g, &s);
    for (size_t i = 0; i < n && i < 256 && !asn_gstate_dead(&s); i++) {
        if (asn_gstate_advance(g, &s, (const char *)bytes + i, 1))
            break;
        (void)asn_gstate_complete(&s);
        (void)asn_gstate_can_continue(&s);
    }
    asn_gstate_clear(&s);
    asn_grammar_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    asn_err e;
    char *gbnf = NULL;
    switch (data[0] % 5) {
    case 0:
        run_grammar(text, data + 1, size - 1);
        break;
    case 1:
    case 2: {
        json_t *schema = json_loadb(text, size - 1, JSON_DECODE_ANY, NULL);
        if (schema)
            gbnf = asn_schema_to_gbnf(schema, data[0] % 5 == 1 ? ASN_WS_COMPACT : ASN_WS_ANY, &e);
        json_decref(schema);
        break;
    }
    case 3:
        gbnf = asn_regex_to_gbnf(text, &e);
        break;
    case 4: {
        const char *opts[32];
        int n = 0;
        for (char *p = text; n < 32;) {
            opts[n++] = p;
            char *nl = strchr(p, '\n');
            if (!nl)
                break;
            *nl = 0;
            p = nl + 1;
        }
        gbnf = asn_choice_to_gbnf(opts, n, &e);
        break;
    }
    }
    if (gbnf)
        run_grammar(gbnf, data + 1, size - 1);
    free(gbnf);
    free(text);
    return 0;
}
