/* arch.c — the table of architectures asn runs. Each row lives in its
 * architecture's file (arch_*.c); adding an architecture is that file and
 * one line here (docs/engine.md has the recipe). */
#include "arch.h"

#include <string.h>

extern const asn_arch arch_llama, arch_qwen2, arch_qwen3, arch_gemma2, arch_gemma3, arch_phi3, arch_bert;

static const asn_arch *const ARCHS[] = {
    &arch_llama, &arch_qwen2, &arch_qwen3, &arch_gemma2, &arch_gemma3, &arch_phi3, &arch_bert,
};
enum { N_ARCHS = sizeof ARCHS / sizeof *ARCHS };

const asn_arch *asn_arch_find(const char *name)
{
    for (int i = 0; i < N_ARCHS; i++)
        if (!strcmp(ARCHS[i]->name, name))
            return ARCHS[i];
    return NULL;
}

const char *asn_arch_names(void)
{
    static char names[256];
    if (!names[0])
        for (int i = 0; i < N_ARCHS; i++) {
            if (i)
                strcat(names, ", ");
            strcat(names, ARCHS[i]->name);
        }
    return names;
}
