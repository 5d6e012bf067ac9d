// llama_logits.cpp — prints libllama's logits for a token sequence, one row
// of n_vocab values per position (or with --embed, an encoder's mean-pooled
// embedding, one row), as the second, independent oracle for asn's fixture
// models (tests/oracle/compare_llama.py). F32 KV cache and no flash
// attention, so that libllama's own rounding is as small as it gets.
//   llama_logits [--embed] MODEL.gguf TOKEN...
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    bool embed = argc > 1 && std::string(argv[1]) == "--embed";
    if (embed)
        argv++, argc--;
    if (argc < 3) {
        fprintf(stderr, "usage: llama_logits [--embed] MODEL.gguf TOKEN...\n");
        return 2;
    }
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model *m = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!m) {
        fprintf(stderr, "llama_logits: %s: libllama cannot load it\n", argv[1]);
        return 1;
    }
    std::vector<llama_token> toks;
    for (int i = 2; i < argc; i++)
        toks.push_back(atoi(argv[i]));
    auto cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = cp.n_ubatch = 512;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.n_threads = cp.n_threads_batch = 2;
    if (embed) {
        cp.embeddings = true;
        cp.pooling_type = LLAMA_POOLING_TYPE_MEAN;
    }
    llama_context *c = llama_init_from_model(m, cp);
    llama_batch b = llama_batch_init((int)toks.size(), 0, 1);
    for (size_t i = 0; i < toks.size(); i++) {
        b.token[i] = toks[i];
        b.pos[i] = (llama_pos)i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = !embed || i + 1 == toks.size();
    }
    b.n_tokens = (int)toks.size();
    if ((embed ? llama_encode(c, b) : llama_decode(c, b))) {
        fprintf(stderr, "llama_logits: %s: decode failed\n", argv[1]);
        return 1;
    }
    if (embed) {
        const float *e = llama_get_embeddings_seq(c, 0);
        int d = llama_model_n_embd(m);
        for (int k = 0; e && k < d; k++)
            printf("%.9g%c", e[k], k + 1 < d ? ' ' : '\n');
        return e ? 0 : 1;
    }
    int V = llama_vocab_n_tokens(llama_model_get_vocab(m));
    for (size_t i = 0; i < toks.size(); i++) {
        const float *l = llama_get_logits_ith(c, (int)i);
        for (int v = 0; v < V; v++)
            printf("%.9g%c", l[v], v + 1 < V ? ' ' : '\n');
    }
    llama_batch_free(b);
    llama_free(c);
    llama_model_free(m);
    return 0;
}
