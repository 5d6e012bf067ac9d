/* scores.c — the table of score fields (asn/scores.h). */
#include "asn/scores.h"

#include <stddef.h>
#include <string.h>

const asn_score_field asn_score_fields[] = {
    {"quality", "quality.bt", "bradley_terry_rating", "rank-bt", "BT log-odds", 1, 1},
    {"diversity", "diversity.embedding_entropy", NULL, "score-diversity", "log bits", 1, 1},
    {"verifiable", "verifiable_reward", NULL, "score-verifiable", "share right", 1, 1},
    {"reward", "reward", NULL, "score-reward", "reward", 1, 1},
    {"self_bleu", "diversity.self_bleu", NULL, "score-diversity", "log BLEU", -1, 0},
    {"ngram", "ngram.coverage", "infinigram_scores.infinigram_total_coverage", "score-ngram", "words", 0, 0},
    {"final", "score.final", NULL, "filter-topk", "z-blend", 1, 0},
};
const int asn_n_score_fields = sizeof asn_score_fields / sizeof *asn_score_fields;

const asn_score_field *asn_score_field_named(const char *name)
{
    for (int i = 0; i < asn_n_score_fields; i++)
        if (!strcmp(asn_score_fields[i].name, name))
            return &asn_score_fields[i];
    return NULL;
}
