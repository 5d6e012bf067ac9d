/* tokenize — text to token ids with a model's tokenizer, as llama.cpp's
 * llama-tokenize does (same defaults: BOS as the model says, special
 * tokens in the text parsed). */
#include "asn/gguf.h"
#include "asn/tool.h"
#include "asn/vocab.h"

#include <stdlib.h>
#include <string.h>

static const char *opt_model, *opt_file;
static int opt_pieces, opt_no_bos, opt_no_parse_special;

static const asn_option options[] = {
    {"model", 'm', ASN_OPT_STRING, &opt_model, "FILE", "GGUF file whose tokenizer to use (a model or a vocab-only file; required)"},
    {"file", 'f', ASN_OPT_STRING, &opt_file, "FILE", "read the text from FILE (\"-\" = stdin) instead of the argument"},
    {"pieces", 0, ASN_OPT_FLAG, &opt_pieces, NULL, "write [{\"id\": ID, \"piece\": TEXT}] objects instead of bare ids"},
    {"no-bos", 0, ASN_OPT_FLAG, &opt_no_bos, NULL, "add no BOS (nor EOS) even if the model asks for it"},
    {"no-parse-special", 0, ASN_OPT_FLAG, &opt_no_parse_special, NULL, "treat control tokens written in the text (<|im_start|>, ...) as plain text"},
    {0},
};

static const asn_tool tool = {
    "tokenize", "-m MODEL.gguf [OPTIONS] [TEXT]",
    "Tokenize TEXT (or -f FILE, or stdin) and write the ids as one JSON array.",
    "The text is taken byte for byte (no newline is added or removed). As with\n"
    "llama.cpp's llama-tokenize, BOS is added when the model's metadata asks for\n"
    "it (tokenizer.ggml.add_bos_token, else the tokenizer's default), and then\n"
    "EOS too if add_eos_token says so; --no-bos adds neither. A WordPiece (BERT)\n"
    "vocab always gets [CLS] before the text and [SEP] after it, as in llama.cpp.\n"
    "A piece is the token's bytes as text (special tokens as their text); when\n"
    "those bytes are not valid UTF-8 (a character split across tokens), \"piece\"\n"
    "holds U+FFFD in their place and \"bytes\" the bytes.\n",
    options,
};

static char *read_stream(FILE *f, const char *path, size_t *n)
{
    size_t cap = 65536, len = 0, k;
    char *buf = malloc(cap);
    if (!buf)
        asn_fatal("out of memory");
    while ((k = fread(buf + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap && !(buf = realloc(buf, cap *= 2)))
            asn_fatal("out of memory");
    }
    if (ferror(f))
        asn_fatal("%s: read error", path);
    *n = len;
    return buf;
}

/* JSON string of s[0..n): escapes, and U+FFFD for bytes that are not UTF-8;
 * returns 1 if any byte was replaced. */
static int put_json_string(FILE *out, const unsigned char *s, size_t n)
{
    int bad = 0;
    fputc('"', out);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c < 0x80) {
            if (c == '"' || c == '\\')
                fprintf(out, "\\%c", c);
            else if (c == '\n')
                fputs("\\n", out);
            else if (c == '\t')
                fputs("\\t", out);
            else if (c == '\r')
                fputs("\\r", out);
            else if (c < 0x20 || c == 0x7F)
                fprintf(out, "\\u%04x", c);
            else
                fputc((int)c, out);
            i++;
            continue;
        }
        size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        int ok = len && i + len <= n;
        for (size_t k = 1; ok && k < len; k++)
            ok = (s[i + k] & 0xC0) == 0x80;
        if (ok && len == 3) { /* no overlong forms, no surrogates */
            ok = !(c == 0xE0 && s[i + 1] < 0xA0) && !(c == 0xED && s[i + 1] >= 0xA0);
        } else if (ok && len == 4) {
            ok = !(c == 0xF0 && s[i + 1] < 0x90) && !(c == 0xF4 && s[i + 1] >= 0x90);
        }
        if (ok) {
            fwrite(s + i, 1, len, out);
            i += len;
        } else {
            fputs("\xEF\xBF\xBD", out);
            bad = 1;
            i++;
        }
    }
    fputc('"', out);
    return bad;
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    if (!opt_model)
        asn_usage_error("-m MODEL.gguf is required");
    if (nops > 1)
        asn_usage_error("unexpected argument '%s' (quote the text: one argument)", argv[2]);
    if (nops == 1 && opt_file)
        asn_usage_error("give the text as an argument or with -f, not both");

    char *text;
    size_t len;
    if (nops == 1) {
        text = argv[1];
        len = strlen(text);
    } else {
        const char *path = opt_file ? opt_file : "-";
        FILE *f = asn_open_in(path);
        text = read_stream(f, strcmp(path, "-") ? path : "<stdin>", &len);
        if (f != stdin)
            fclose(f);
    }

    asn_err e;
    asn_gguf *g = asn_gguf_open(opt_model, &e);
    if (!g)
        asn_fatal("%s", e.msg);
    asn_vocab *v = asn_vocab_load(g, &e);
    asn_gguf_close(g);
    if (!v)
        asn_fatal("%s: %s", opt_model, e.msg);

    /* llama-tokenize: add_special = the model's add_bos && !--no-bos */
    int add_special = asn_vocab_add_bos(v) && !opt_no_bos;
    int32_t *ids;
    size_t n;
    if (asn_tokenize(v, text, len, add_special, !opt_no_parse_special, &ids, &n, &e))
        asn_fatal("%s", e.msg);

    fputc('[', stdout);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', stdout);
        if (!opt_pieces) {
            printf("%d", ids[i]);
            continue;
        }
        size_t pl;
        const char *p = asn_vocab_piece(v, ids[i], 1, &pl);
        printf("{\"id\":%d,\"piece\":", ids[i]);
        if (put_json_string(stdout, (const unsigned char *)p, pl)) {
            fputs(",\"bytes\":[", stdout);
            for (size_t k = 0; k < pl; k++)
                printf("%s%u", k ? "," : "", (unsigned char)p[k]);
            fputc(']', stdout);
        }
        fputc('}', stdout);
    }
    fputs("]\n", stdout);
    asn_close_out(stdout, "-");
    free(ids);
    asn_vocab_free(v);
    if (nops != 1)
        free(text);
    return 0;
}
