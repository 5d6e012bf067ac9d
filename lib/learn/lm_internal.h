/* learn/lm_internal.h — what lm_layers.c lends lm.c beyond asn/lm.h's
 * layers. Not a public API. */
#ifndef ASN_LEARN_LM_INTERNAL_H
#define ASN_LEARN_LM_INTERNAL_H

#include "asn/pool.h"

#include <stddef.h>

/* Zeroes n floats, split across the pool (the backward pass clears a few
 * activation-sized buffers per layer). */
void asn__lm_zero(asn_pool *pool, float *p, size_t n);

#endif
