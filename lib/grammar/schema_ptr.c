/* schema_ptr.c — what both halves of the JSON Schema converter (schema.c,
 * schema_norm.c) stand on: the keyword lists they check a subschema
 * against, JSON pointers to where a subschema is, the one-line error at
 * such a pointer, and the subschema a local $ref names. */
#include "schema_internal.h"

#include <stdio.h>
#include <string.h>

const char *const GS_ANNOTATIONS[] = {"title", "description", "$schema", "$id", "$comment", "default",
                                      "examples", "readOnly", "writeOnly", "deprecated", "$defs",
                                      "definitions", "$anchor", NULL};

const char *const GS_KNOWN[] = {"type", "properties", "required", "additionalProperties", "items",
                                "prefixItems", "minItems", "maxItems", "enum", "const", "minLength",
                                "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
                                "exclusiveMaximum", "$ref", "anyOf", "oneOf", "nullable", "format",
                                "patternProperties", "minProperties", "maxProperties", "dependentRequired", NULL};

int gs_serr(conv *c, const char *ptr, const char *fmt, const char *arg)
{
    char msg[1200];
    if (snprintf(msg, sizeof msg, fmt, arg) >= (int)sizeof msg)
        msg[sizeof msg - 1] = 0;
    return asn_err_set(c->e, "%s: %s", *ptr ? ptr : "/", msg);
}

/* Appends /key (escaped as a JSON pointer) to ptr. */
void gs_ptr_child(char *out, size_t cap, const char *ptr, const char *key)
{
    size_t n = (size_t)snprintf(out, cap, "%s/", ptr);
    for (const char *k = key; *k && n + 3 < cap; k++) {
        if (*k == '~')
            out[n++] = '~', out[n++] = '0';
        else if (*k == '/')
            out[n++] = '~', out[n++] = '1';
        else
            out[n++] = *k;
    }
    out[n < cap ? n : cap - 1] = 0;
}

void gs_ptr_index(char *out, size_t cap, const char *ptr, size_t i)
{
    char num[24];
    snprintf(num, sizeof num, "%zu", i);
    gs_ptr_child(out, cap, ptr, num);
}

int gs_resolve_ref(conv *c, const char *ref, const char *ptr, const json_t **out)
{
    char p[1024];
    gs_ptr_child(p, sizeof p, ptr, "$ref");
    if (ref[0] != '#')
        return gs_serr(c, p, "only local references (#...) are supported, not \"%s\"", ref);
    int syntax;
    const json_t *cur = gv_pointer(c->root, ref, &syntax);
    if (syntax)
        return gs_serr(c, p, "reference \"%s\" is not a JSON pointer", ref);
    if (!cur)
        return gs_serr(c, p, "reference \"%s\" does not resolve", ref);
    *out = cur;
    return 0;
}
