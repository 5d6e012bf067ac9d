/* tokenize — text to token ids with a model's tokenizer, as llama.cpp's
 * llama-tokenize does (same defaults: BOS as the model says, special
 * tokens in the text parsed). */
#include "asn/chat.h"
#include "asn/gen.h"
#include "asn/gguf.h"
#include "asn/tool.h"
#include "asn/vocab.h"

#include <stdlib.h>
#include <string.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct tokenize_options {
    const char *model;
    const char *file;
    const char *system;
    const char *template;
    const char *template_file;
    const char *chat_date;
    int pieces;
    int no_bos;
    int no_parse_special;
    int chat;
    int print_prompt;
} tokenize_options;

/* The options, with their defaults (the table below points into it). */
static tokenize_options opts;

static const asn_option options[] = {
    {"model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "GGUF file whose tokenizer to use (a model or a vocab-only file; required)"},
    {"file", 'f', ASN_OPT_STRING, &opts.file, "FILE", "read the text from FILE (\"-\" = stdin) instead of the argument"},
    {"pieces", 0, ASN_OPT_FLAG, &opts.pieces, NULL, "write [{\"id\": ID, \"piece\": TEXT}] objects instead of bare ids"},
    {"no-bos", 0, ASN_OPT_FLAG, &opts.no_bos, NULL, "add no BOS (nor EOS) even if the model asks for it"},
    {"no-parse-special", 0, ASN_OPT_FLAG, &opts.no_parse_special, NULL, "treat control tokens written in the text (<|im_start|>, ...) as plain text"},
    {"chat", 0, ASN_OPT_FLAG, &opts.chat, NULL, "the text is a user message: tokenize the prompt the generating tools build from it"},
    {"system", 0, ASN_OPT_STRING, &opts.system, "TEXT", "with --chat: the system message (default: none)"},
    {"chat-template", 0, ASN_OPT_STRING, &opts.template, "NAME", "with --chat: chat template family (default: the model's; none without one)"},
    {"chat-template-file", 0, ASN_OPT_STRING, &opts.template_file, "FILE", "with --chat: a Jinja chat template to detect the family from, in place of the model's tokenizer.chat_template"},
    {"chat-date", 0, ASN_OPT_STRING, &opts.chat_date, "DATE", ASN_CHAT_DATE_HELP},
    {"print-prompt", 0, ASN_OPT_FLAG, &opts.print_prompt, NULL, "with --chat: write the prompt text (the BOS token's text first when one is added) instead of ids"},
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
    "holds U+FFFD in their place and \"bytes\" the bytes.\n"
    "\n"
    "--chat builds the prompt as gen-candidates, generate and train-sampler do:\n"
    "the system message (if any) and the text as the user's message through the\n"
    "chat template, the assistant's turn opened, then tokenized with exactly one\n"
    "BOS (when the model adds one) and special tokens parsed. The text is what\n"
    "the model's Jinja template renders (with transformers' apply_chat_template,\n"
    "add_generation_prompt=True) for the families listed in docs/sampling.md.\n",
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

static void print_ids(const asn_vocab *v, const int32_t *ids, size_t n)
{
    fputc('[', stdout);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', stdout);
        if (!opts.pieces) {
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
}

static void check_options(int nops, char **argv)
{
    if (!opts.model)
        asn_usage_error("-m MODEL.gguf is required");
    if (nops > 1)
        asn_usage_error("unexpected argument '%s' (quote the text: one argument)", argv[2]);
    if (nops == 1 && opts.file)
        asn_usage_error("give the text as an argument or with -f, not both");
    if (!opts.chat && (opts.system || opts.template || opts.template_file || opts.print_prompt))
        asn_usage_error("--system, --chat-template, --chat-template-file and --print-prompt go with --chat");
    asn_err de;
    if (opts.chat_date && asn_chat_set_date(opts.chat_date, &de))
        asn_usage_error("--chat-date: %s", de.msg);
}

/* The text: the argument (not copied: *own = 0), or -f / stdin. */
static char *read_text(int nops, char **argv, size_t *len, int *own)
{
    *own = nops != 1;
    if (nops == 1) {
        *len = strlen(argv[1]);
        return argv[1];
    }
    const char *path = opts.file ? opts.file : "-";
    FILE *f = asn_open_in(path);
    char *text = read_stream(f, strcmp(path, "-") ? path : "<stdin>", len);
    if (f != stdin)
        fclose(f);
    return text;
}

/* The vocabulary of -m, and its chat template (NULL: none). */
static asn_vocab *load_vocab(char **model_tmpl)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open(opts.model, &e);
    if (!g)
        asn_fatal("%s", e.msg);
    *model_tmpl = NULL;
    if (asn_gguf_get_str(g, "tokenizer.chat_template", 0, model_tmpl, &e))
        asn_fatal("%s: %s", opts.model, e.msg);
    asn_vocab *v = asn_vocab_load(g, &e);
    asn_gguf_close(g);
    if (!v)
        asn_fatal("%s: %s", opts.model, e.msg);
    return v;
}

/* --chat: the text as the user's message of the chat template; prints the
 * prompt's ids, or with --print-prompt its text. */
static void tokenize_chat(const asn_vocab *v, const char *text, size_t len, char *model_tmpl)
{
    asn_err e;
    if (opts.template_file) {
        size_t tl;
        free(model_tmpl);
        if (asn_read_file(opts.template_file, &model_tmpl, &tl, &e))
            asn_fatal("%s", e.msg);
    }
    int tmpl = !opts.template && !model_tmpl ? ASN_CHAT_NONE : asn_chat_for_model(model_tmpl, opts.template, &e);
    if (tmpl < 0)
        asn_fatal("%s: %s", opts.template_file ? opts.template_file : opts.model, e.msg);
    char *user = asn_xmalloc(len + 1);
    memcpy(user, text, len);
    user[len] = 0;
    if (strlen(user) != len)
        asn_fatal("the message holds a NUL byte");
    char *prompt = asn_gen_prompt_text(tmpl, opts.system, user, &e);
    int32_t *pids;
    int pn;
    if (!prompt || asn_gen_tokenize_prompt(v, prompt, &pids, &pn, &e))
        asn_fatal("%s", e.msg);
    if (opts.print_prompt) {
        size_t bl = 0;
        const char *bos = pids[0] == asn_vocab_bos(v) ? asn_vocab_piece(v, pids[0], 1, &bl) : "";
        fwrite(bos, 1, bl, stdout);
        fputs(prompt, stdout);
        asn_close_out(stdout, "-");
    } else {
        print_ids(v, pids, (size_t)pn);
    }
    free(user);
    free(prompt);
    free(pids);
    free(model_tmpl);
}

/* The text as llama-tokenize tokenizes it: add_special = the model's
 * add_bos && !--no-bos. */
static void tokenize_text(const asn_vocab *v, const char *text, size_t len)
{
    asn_err e;
    int add_special = asn_vocab_add_bos(v) && !opts.no_bos;
    int32_t *ids;
    size_t n;
    if (asn_tokenize(v, text, len, add_special, !opts.no_parse_special, &ids, &n, &e))
        asn_fatal("%s", e.msg);
    print_ids(v, ids, n);
    free(ids);
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    check_options(nops, argv);
    size_t len;
    int own;
    char *text = read_text(nops, argv, &len, &own);
    char *model_tmpl;
    asn_vocab *v = load_vocab(&model_tmpl);
    if (opts.chat) {
        tokenize_chat(v, text, len, model_tmpl);
    } else {
        free(model_tmpl);
        tokenize_text(v, text, len);
    }
    asn_vocab_free(v);
    if (own)
        free(text);
    return 0;
}
