/* chat.c — chat template families: detection from the Jinja text's marker
 * substrings and one fixed formatter per family, with the behaviour of
 * llama.cpp's src/llama-chat.cpp (llm_chat_detect_template and
 * llm_chat_apply_template). The contract is in asn/chat.h; the expected
 * strings that pin the behaviour down are in tests/data/chat/. */
#include "asn/chat.h"
#include "asn/sbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- families */

static const struct family {
    const char *name;
    int by_name; /* accepted as an exact name by asn_chat_detect (llama.cpp's list) */
} FAMILIES[ASN_CHAT_COUNT] = {
    [ASN_CHAT_NONE] = {"none", 0},
    [ASN_CHAT_CHATML] = {"chatml", 1},
    [ASN_CHAT_LLAMA2] = {"llama2", 1},
    [ASN_CHAT_LLAMA2_SYS] = {"llama2-sys", 1},
    [ASN_CHAT_LLAMA2_SYS_BOS] = {"llama2-sys-bos", 1},
    [ASN_CHAT_LLAMA2_SYS_STRIP] = {"llama2-sys-strip", 1},
    [ASN_CHAT_MISTRAL_V1] = {"mistral-v1", 1},
    [ASN_CHAT_MISTRAL_V3] = {"mistral-v3", 1},
    [ASN_CHAT_MISTRAL_V3_TEKKEN] = {"mistral-v3-tekken", 1},
    [ASN_CHAT_MISTRAL_V7] = {"mistral-v7", 1},
    [ASN_CHAT_MISTRAL_V7_TEKKEN] = {"mistral-v7-tekken", 1},
    [ASN_CHAT_PHI3] = {"phi3", 1},
    [ASN_CHAT_PHI4] = {"phi4", 1},
    [ASN_CHAT_FALCON3] = {"falcon3", 1},
    [ASN_CHAT_ZEPHYR] = {"zephyr", 1},
    [ASN_CHAT_MONARCH] = {"monarch", 1},
    [ASN_CHAT_GEMMA] = {"gemma", 1},
    [ASN_CHAT_ORION] = {"orion", 1},
    [ASN_CHAT_OPENCHAT] = {"openchat", 1},
    [ASN_CHAT_VICUNA] = {"vicuna", 1},
    [ASN_CHAT_VICUNA_ORCA] = {"vicuna-orca", 1},
    [ASN_CHAT_DEEPSEEK] = {"deepseek", 1},
    [ASN_CHAT_DEEPSEEK2] = {"deepseek2", 1},
    [ASN_CHAT_DEEPSEEK3] = {"deepseek3", 1},
    [ASN_CHAT_DEEPSEEK_OCR] = {"deepseek-ocr", 1},
    [ASN_CHAT_COMMAND_R] = {"command-r", 1},
    [ASN_CHAT_LLAMA3] = {"llama3", 1},
    [ASN_CHAT_CHATGLM3] = {"chatglm3", 1},
    [ASN_CHAT_CHATGLM4] = {"chatglm4", 1},
    [ASN_CHAT_GLMEDGE] = {"glmedge", 1},
    [ASN_CHAT_MINICPM] = {"minicpm", 1},
    [ASN_CHAT_EXAONE3] = {"exaone3", 1},
    [ASN_CHAT_EXAONE4] = {"exaone4", 1},
    [ASN_CHAT_EXAONE_MOE] = {"exaone-moe", 1},
    [ASN_CHAT_RWKV_WORLD] = {"rwkv-world", 1},
    [ASN_CHAT_GRANITE] = {"granite", 1},
    [ASN_CHAT_GRANITE_4_0] = {"granite-4.0", 1},
    [ASN_CHAT_GRANITE_4_1] = {"granite-4.1", 1},
    [ASN_CHAT_GIGACHAT] = {"gigachat", 1},
    [ASN_CHAT_MEGREZ] = {"megrez", 1},
    [ASN_CHAT_YANDEX] = {"yandex", 1},
    [ASN_CHAT_BAILING] = {"bailing", 1},
    [ASN_CHAT_BAILING_THINK] = {"bailing-think", 1},
    [ASN_CHAT_BAILING2] = {"bailing2", 1},
    [ASN_CHAT_LLAMA4] = {"llama4", 1},
    [ASN_CHAT_SMOLVLM] = {"smolvlm", 1},
    [ASN_CHAT_DOTS1] = {"dots1", 0},
    [ASN_CHAT_HUNYUAN_MOE] = {"hunyuan-moe", 1},
    [ASN_CHAT_GPT_OSS] = {"gpt-oss", 1},
    [ASN_CHAT_HUNYUAN_DENSE] = {"hunyuan-dense", 1},
    [ASN_CHAT_HUNYUAN_VL] = {"hunyuan-vl", 1},
    [ASN_CHAT_KIMI_K2] = {"kimi-k2", 1},
    [ASN_CHAT_SEED_OSS] = {"seed_oss", 1},
    [ASN_CHAT_GROK2] = {"grok-2", 1},
    [ASN_CHAT_PANGU_EMBED] = {"pangu-embedded", 1},
    [ASN_CHAT_SOLAR_OPEN] = {"solar-open", 1},
    [ASN_CHAT_LLAMA3_1] = {"llama3.1", 0},
    [ASN_CHAT_QWEN2_5] = {"qwen2.5", 0},
    [ASN_CHAT_SMOLLM2] = {"smollm2", 0},
    [ASN_CHAT_GEMMA3] = {"gemma3", 0},
    [ASN_CHAT_TINYLLAMA] = {"tinyllama", 0},
    [ASN_CHAT_DEEPSEEK_R1] = {"deepseek-r1", 0},
    [ASN_CHAT_CHATML_THINK] = {"chatml-think", 0},
};

const char *asn_chat_name(int id)
{
    return id >= 0 && id < ASN_CHAT_COUNT ? FAMILIES[id].name : NULL;
}

int asn_chat_from_name(const char *name)
{
    if (!name)
        return -1;
    for (int id = 0; id < ASN_CHAT_COUNT; id++)
        if (!strcmp(FAMILIES[id].name, name))
            return id;
    return -1;
}

/* -------------------------------------------------------------- detection */

/* The rules are llama.cpp's, in its order: a template often holds markers
 * of several families (a Mistral template mentions "[INST]" and maybe
 * "[SYSTEM_PROMPT]"), so the first rule that matches decides. */
int asn_chat_detect(const char *t)
{
    if (!t)
        return -1;
    int id = asn_chat_from_name(t);
    if (id >= 0 && FAMILIES[id].by_name)
        return id;
#define HAS(s) (strstr(t, (s)) != NULL)
    if (HAS("<|im_start|>")) {
        if (HAS("<|im_sep|>"))
            return ASN_CHAT_PHI4;
        /* SmolVLM opens with <|im_start|> but its turns are not chatml */
        return HAS("<end_of_utterance>") ? ASN_CHAT_SMOLVLM : ASN_CHAT_CHATML;
    }
    if (!strncmp(t, "mistral", 7) || HAS("[INST]")) {
        if (HAS("[SYSTEM_PROMPT]"))
            return ASN_CHAT_MISTRAL_V7;
        /* Mistral's own v1 template, and its v3 / v3-tekken ones (tools) */
        if (HAS("' [INST] ' + system_message") || HAS("[AVAILABLE_TOOLS]")) {
            if (HAS(" [INST]"))
                return ASN_CHAT_MISTRAL_V1;
            if (HAS("\"[INST]\""))
                return ASN_CHAT_MISTRAL_V3_TEKKEN;
            return ASN_CHAT_MISTRAL_V3;
        }
        if (HAS("content.strip()"))
            return ASN_CHAT_LLAMA2_SYS_STRIP;
        if (HAS("bos_token + '[INST]"))
            return ASN_CHAT_LLAMA2_SYS_BOS;
        if (HAS("<<SYS>>"))
            return ASN_CHAT_LLAMA2_SYS;
        return ASN_CHAT_LLAMA2;
    }
    if (HAS("<|assistant|>") && HAS("<|end|>"))
        return ASN_CHAT_PHI3;
    if (HAS("[gMASK]<sop>"))
        return ASN_CHAT_CHATGLM4;
    if (HAS("<|assistant|>") && HAS("<|user|>")) {
        if (HAS("<|tool_declare|>"))
            return ASN_CHAT_EXAONE_MOE;
        /* a literal </s> tells Falcon 3 from GLM-Edge; templates that write
         * eos_token instead (TinyLlama-Chat) land on glmedge */
        return HAS("</s>") ? ASN_CHAT_FALCON3 : ASN_CHAT_GLMEDGE;
    }
    if (HAS("<|{{ item['role'] }}|>") && HAS("<|begin_of_image|>"))
        return ASN_CHAT_GLMEDGE;
    if (HAS("<|user|>") && HAS("<|endoftext|>"))
        return ASN_CHAT_ZEPHYR;
    if (HAS("bos_token + message['role']"))
        return ASN_CHAT_MONARCH;
    if (HAS("<start_of_turn>"))
        return ASN_CHAT_GEMMA;
    if (HAS("'\\n\\nAssistant: ' + eos_token"))
        return ASN_CHAT_ORION;
    if (HAS("GPT4 Correct "))
        return ASN_CHAT_OPENCHAT;
    if (HAS("USER: ") && HAS("ASSISTANT: "))
        return HAS("SYSTEM: ") ? ASN_CHAT_VICUNA_ORCA : ASN_CHAT_VICUNA;
    if (HAS("### Instruction:") && HAS("<|EOT|>"))
        return ASN_CHAT_DEEPSEEK;
    if (HAS("<|START_OF_TURN_TOKEN|>") && HAS("<|USER_TOKEN|>"))
        return ASN_CHAT_COMMAND_R;
    if (HAS("<|start_header_id|>") && HAS("<|end_header_id|>"))
        return ASN_CHAT_LLAMA3;
    if (HAS("[gMASK]sop"))
        return ASN_CHAT_CHATGLM3;
    if (HAS("<用户>"))
        return ASN_CHAT_MINICPM;
    if (HAS("'Assistant: ' + message['content'] + eos_token"))
        return ASN_CHAT_DEEPSEEK2;
    if (HAS("<｜Assistant｜>") && HAS("<｜User｜>") && HAS("<｜end▁of▁sentence｜>"))
        return ASN_CHAT_DEEPSEEK3;
    if (HAS("[|system|]") && HAS("[|assistant|]") && HAS("[|endofturn|]"))
        return HAS("[|tool|]") ? ASN_CHAT_EXAONE4 : ASN_CHAT_EXAONE3;
    if (HAS("rwkv-world") || HAS("{{- 'User: ' + message['content']|trim + '\\n\\n' -}}"))
        return ASN_CHAT_RWKV_WORLD;
    if (HAS("<|start_of_role|>")) {
        if (HAS("<tool_call>") || HAS("<tools>"))
            return HAS("g4_default_system_message") ? ASN_CHAT_GRANITE_4_0 : ASN_CHAT_GRANITE_4_1;
        return ASN_CHAT_GRANITE;
    }
    if (HAS("message['role'] + additional_special_tokens[0] + message['content'] + "
            "additional_special_tokens[1]"))
        return ASN_CHAT_GIGACHAT;
    if (HAS("<|role_start|>"))
        return ASN_CHAT_MEGREZ;
    if (HAS(" Ассистент:"))
        return ASN_CHAT_YANDEX;
    if (HAS("<role>ASSISTANT</role>") && HAS("'HUMAN'"))
        return ASN_CHAT_BAILING;
    if (HAS("<role>ASSISTANT</role>") && HAS("\"HUMAN\"") && HAS("<think>"))
        return ASN_CHAT_BAILING_THINK;
    if (HAS("<role>ASSISTANT</role>") && HAS("<role>HUMAN</role>") && HAS("<|role_end|>"))
        return ASN_CHAT_BAILING2;
    if (HAS("<|header_start|>") && HAS("<|header_end|>"))
        return ASN_CHAT_LLAMA4;
    if (HAS("<|endofuserprompt|>"))
        return ASN_CHAT_DOTS1;
    if (HAS("<|extra_0|>") && HAS("<|extra_4|>"))
        return ASN_CHAT_HUNYUAN_MOE;
    if (HAS("<|start|>") && HAS("<|channel|>"))
        return ASN_CHAT_GPT_OSS;
    if (HAS("<｜hy_Assistant｜>") && HAS("<｜hy_begin▁of▁sentence｜>"))
        return ASN_CHAT_HUNYUAN_VL;
    if (HAS("<｜hy_Assistant｜>") && HAS("<｜hy_place▁holder▁no▁3｜>"))
        return ASN_CHAT_HUNYUAN_DENSE;
    if (HAS("<|im_assistant|>assistant<|im_middle|>"))
        return ASN_CHAT_KIMI_K2;
    if (HAS("<seed:bos>"))
        return ASN_CHAT_SEED_OSS;
    if (HAS("'Assistant: '  + message['content'] + '<|separator|>"))
        return ASN_CHAT_GROK2;
    if (HAS("[unused9]系统：[unused10]"))
        return ASN_CHAT_PANGU_EMBED;
    if (HAS("<|begin|>") && HAS("<|end|>") && HAS("<|content|>"))
        return ASN_CHAT_SOLAR_OPEN;
#undef HAS
    return -1;
}

/* ---------------------------------------------------------- text building */

/* isspace() in the C locale, which is what llama.cpp's trim() uses; bytes of
 * multi-byte UTF-8 sequences are never spaces. */
static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Appends s without leading and trailing whitespace. */
static void put_trim(asn_sbuf *b, const char *s)
{
    size_t i = 0, j = strlen(s);
    while (i < j && is_space((unsigned char)s[i]))
        i++;
    while (j > i && is_space((unsigned char)s[j - 1]))
        j--;
    asn_sbuf_add(b, s + i, j - i);
}

/* Appends role with ASCII letters upper-cased (all of it, or the first). */
static void put_upper(asn_sbuf *b, const char *role, int first_only)
{
    for (size_t i = 0; role[i]; i++) {
        char c = role[i];
        if ((!first_only || i == 0) && c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        asn_sbuf_add(b, &c, 1);
    }
}

static int is(const char *role, const char *want)
{
    return !strcmp(role, want);
}

/* -------------------------------------------------------------- formatters
 *
 * Each writes the whole conversation into b. `gen` is add_generation_prompt.
 * Grouped as in llama.cpp, which is also where each layout comes from. */

static void fmt_none(asn_sbuf *b, const asn_chat_msg *m, size_t n)
{
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].content[0])
            continue;
        if (!first)
            asn_sbuf_adds(b, "\n\n");
        asn_sbuf_adds(b, m[i].content);
        first = 0;
    }
}

/* <|im_start|>role\ncontent<|im_end|>\n */
static void fmt_chatml(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    for (size_t i = 0; i < n; i++) {
        asn_sbuf_adds(b, "<|im_start|>");
        asn_sbuf_adds(b, m[i].role);
        asn_sbuf_adds(b, "\n");
        asn_sbuf_adds(b, m[i].content);
        asn_sbuf_adds(b, "<|im_end|>\n");
    }
    if (gen)
        asn_sbuf_adds(b, "<|im_start|>assistant\n");
}

/* Mistral's v7 layout: system and user in their own brackets, the reply
 * after them closed by </s>; the tekken tokenizer variant drops the spaces.
 * No generation prompt: the reply follows [/INST] directly. */
static void fmt_mistral_v7(asn_sbuf *b, const asn_chat_msg *m, size_t n, int tekken)
{
    const char *sp = tekken ? "" : " ";
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "system")) {
            asn_sbuf_adds(b, "[SYSTEM_PROMPT]");
            asn_sbuf_adds(b, sp);
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "[/SYSTEM_PROMPT]");
        } else if (is(m[i].role, "user")) {
            asn_sbuf_adds(b, "[INST]");
            asn_sbuf_adds(b, sp);
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "[/INST]");
        } else {
            asn_sbuf_adds(b, sp);
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "</s>");
        }
    }
}

/* Mistral's v1 / v3 / v3-tekken layouts: a turn opens with [INST] before
 * whatever comes first (a system text goes inside the open turn, followed
 * by a blank line) and closes after the reply's </s>. */
static void fmt_mistral_v1_v3(asn_sbuf *b, const asn_chat_msg *m, size_t n, int id)
{
    const char *lead = id == ASN_CHAT_MISTRAL_V1 ? " " : "";
    const char *trail = id == ASN_CHAT_MISTRAL_V3_TEKKEN ? "" : " ";
    int in_turn = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in_turn) {
            asn_sbuf_adds(b, lead);
            asn_sbuf_adds(b, "[INST]");
            asn_sbuf_adds(b, trail);
            in_turn = 1;
        }
        if (is(m[i].role, "system")) {
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "\n\n");
        } else if (is(m[i].role, "user")) {
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, lead);
            asn_sbuf_adds(b, "[/INST]");
        } else {
            asn_sbuf_adds(b, trail);
            if (id == ASN_CHAT_MISTRAL_V3)
                put_trim(b, m[i].content);
            else
                asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "</s>");
            in_turn = 0;
        }
    }
}

/* Llama 2: the text opens inside the first [INST]; the system text goes in
 * <<SYS>> brackets (or as a plain line for the variant without a system
 * role); each reply ends with </s> and the next turn reopens [INST]. */
static void fmt_llama2(asn_sbuf *b, const asn_chat_msg *m, size_t n, int id)
{
    int sys = id != ASN_CHAT_LLAMA2;
    int bos_in_history = id == ASN_CHAT_LLAMA2_SYS_BOS;
    int strip = id == ASN_CHAT_LLAMA2_SYS_STRIP;
    int in_turn = 1; /* the opening [INST] follows the tokenizer's BOS */
    asn_sbuf_adds(b, "[INST] ");
    for (size_t i = 0; i < n; i++) {
        if (!in_turn) {
            in_turn = 1;
            asn_sbuf_adds(b, bos_in_history ? "<s>[INST] " : "[INST] ");
        }
        void (*content)(asn_sbuf *, const char *) = strip ? put_trim : asn_sbuf_adds;
        if (is(m[i].role, "system")) {
            if (sys) {
                asn_sbuf_adds(b, "<<SYS>>\n");
                content(b, m[i].content);
                asn_sbuf_adds(b, "\n<</SYS>>\n\n");
            } else {
                content(b, m[i].content);
                asn_sbuf_adds(b, "\n");
            }
        } else if (is(m[i].role, "user")) {
            content(b, m[i].content);
            asn_sbuf_adds(b, " [/INST]");
        } else {
            content(b, m[i].content);
            asn_sbuf_adds(b, "</s>");
            in_turn = 0;
        }
    }
}

/* The "<|role|>\ncontent END" families: phi3, falcon3, zephyr, glmedge and
 * chatglm4 (which prefixes [gMASK]<sop>), and chatglm3 ("\n " and
 * [gMASK]sop). */
static void fmt_role_bars(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen, const char *head,
                          const char *sep, const char *end, const char *prompt)
{
    asn_sbuf_adds(b, head);
    for (size_t i = 0; i < n; i++) {
        asn_sbuf_adds(b, "<|");
        asn_sbuf_adds(b, m[i].role);
        asn_sbuf_adds(b, "|>");
        asn_sbuf_adds(b, sep);
        asn_sbuf_adds(b, m[i].content);
        asn_sbuf_adds(b, end);
    }
    if (gen)
        asn_sbuf_adds(b, prompt);
}

static void fmt_phi4(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    for (size_t i = 0; i < n; i++) {
        asn_sbuf_adds(b, "<|im_start|>");
        asn_sbuf_adds(b, m[i].role);
        asn_sbuf_adds(b, "<|im_sep|>");
        asn_sbuf_adds(b, m[i].content);
        asn_sbuf_adds(b, "<|im_end|>");
    }
    if (gen)
        asn_sbuf_adds(b, "<|im_start|>assistant<|im_sep|>");
}

/* AlphaMonarch: "<s>" opens every message but the first (the tokenizer's
 * BOS stands in for that one). */
static void fmt_monarch(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            asn_sbuf_adds(b, "<s>");
        asn_sbuf_adds(b, m[i].role);
        asn_sbuf_adds(b, "\n");
        asn_sbuf_adds(b, m[i].content);
        asn_sbuf_adds(b, "</s>\n");
    }
    if (gen)
        asn_sbuf_adds(b, "<s>assistant\n");
}

/* Gemma has no system role: system texts are held and written at the top
 * of the next non-model turn, followed by a blank line. The assistant is
 * "model"; contents are trimmed. */
static void fmt_gemma(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    asn_sbuf sys = {0};
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "system")) {
            put_trim(&sys, m[i].content);
            continue;
        }
        const char *role = is(m[i].role, "assistant") ? "model" : m[i].role;
        asn_sbuf_adds(b, "<start_of_turn>");
        asn_sbuf_adds(b, role);
        asn_sbuf_adds(b, "\n");
        if (sys.len && !is(role, "model")) {
            asn_sbuf_add(b, sys.buf, sys.len);
            asn_sbuf_adds(b, "\n\n");
            sys.len = 0;
        }
        put_trim(b, m[i].content);
        asn_sbuf_adds(b, "<end_of_turn>\n");
    }
    free(sys.buf);
    if (gen)
        asn_sbuf_adds(b, "<start_of_turn>model\n");
}

/* Orion: no system role either; held for the next user turn. Every user
 * turn already ends with the assistant's opening. */
static void fmt_orion(asn_sbuf *b, const asn_chat_msg *m, size_t n)
{
    asn_sbuf sys = {0};
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "system")) {
            asn_sbuf_adds(&sys, m[i].content);
        } else if (is(m[i].role, "user")) {
            asn_sbuf_adds(b, "Human: ");
            if (sys.len) {
                asn_sbuf_add(b, sys.buf, sys.len);
                asn_sbuf_adds(b, "\n\n");
                sys.len = 0;
            }
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "\n\nAssistant: </s>");
        } else {
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "</s>");
        }
    }
    free(sys.buf);
}

static void fmt_openchat(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    for (size_t i = 0; i < n; i++) {
        if (!is(m[i].role, "system")) {
            asn_sbuf_adds(b, "GPT4 Correct ");
            put_upper(b, m[i].role, 1);
            asn_sbuf_adds(b, ": ");
        }
        asn_sbuf_adds(b, m[i].content);
        asn_sbuf_adds(b, "<|end_of_turn|>");
    }
    if (gen)
        asn_sbuf_adds(b, "GPT4 Correct Assistant:");
}

static void fmt_vicuna(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen, int orca)
{
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "system")) {
            asn_sbuf_adds(b, orca ? "SYSTEM: " : "");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, orca ? "\n" : "\n\n");
        } else if (is(m[i].role, "user")) {
            asn_sbuf_adds(b, "USER: ");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "\n");
        } else if (is(m[i].role, "assistant")) {
            asn_sbuf_adds(b, "ASSISTANT: ");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "</s>\n");
        }
    }
    if (gen)
        asn_sbuf_adds(b, "ASSISTANT:");
}

/* Families that write a fixed prefix and suffix per known role and drop
 * other roles: deepseek, deepseek2/3, command-r, exaone, grok-2, ... */
typedef struct role_fmt {
    const char *role;
    const char *pre, *post;
    int trim;
} role_fmt;

static void fmt_roles(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen, const role_fmt *r,
                      const char *prompt)
{
    for (size_t i = 0; i < n; i++)
        for (const role_fmt *f = r; f->role; f++)
            if (is(m[i].role, f->role)) {
                asn_sbuf_adds(b, f->pre);
                (f->trim ? put_trim : asn_sbuf_adds)(b, m[i].content);
                asn_sbuf_adds(b, f->post);
                break;
            }
    if (gen && prompt)
        asn_sbuf_adds(b, prompt);
}

static const role_fmt DEEPSEEK[] = {
    {"system", "", "", 0},
    {"user", "### Instruction:\n", "\n", 0},
    {"assistant", "### Response:\n", "\n<|EOT|>\n", 0},
    {0},
};
static const role_fmt DEEPSEEK2[] = {
    {"system", "", "\n\n", 0},
    {"user", "User: ", "\n\n", 0},
    {"assistant", "Assistant: ", "<｜end▁of▁sentence｜>", 0},
    {0},
};
static const role_fmt DEEPSEEK3[] = {
    {"system", "", "\n\n", 0},
    {"user", "<｜User｜>", "", 0},
    {"assistant", "<｜Assistant｜>", "<｜end▁of▁sentence｜>", 0},
    {0},
};
static const role_fmt COMMAND_R[] = {
    {"system", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", "<|END_OF_TURN_TOKEN|>", 1},
    {"user", "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>", 1},
    {"assistant", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>", 1},
    {0},
};
static const role_fmt EXAONE4[] = {
    {"system", "[|system|]", "[|endofturn|]\n", 1},
    {"user", "[|user|]", "\n", 1},
    {"assistant", "[|assistant|]", "[|endofturn|]\n", 1},
    {"tool", "[|tool|]", "[|endofturn|]\n", 1},
    {0},
};
static const role_fmt EXAONE3[] = {
    {"system", "[|system|]", "[|endofturn|]\n", 1},
    {"user", "[|user|]", "\n", 1},
    {"assistant", "[|assistant|]", "[|endofturn|]\n", 1},
    {0},
};
static const role_fmt EXAONE_MOE[] = {
    {"system", "<|system|>\n", "<|endofturn|>\n", 1},
    {"user", "<|user|>\n", "<|endofturn|>\n", 1},
    {"assistant", "<|assistant|>\n", "<|endofturn|>\n", 1},
    {"tool", "<|tool|>\n", "<|endofturn|>\n", 1},
    {0},
};
static const role_fmt YANDEX[] = {
    {"user", " Пользователь: ", "\n\n", 0},
    {"assistant", " Ассистент: ", "\n\n", 0},
    {0},
};
static const role_fmt GROK2[] = {
    {"system", "System: ", "<|separator|>\n\n", 1},
    {"user", "Human: ", "<|separator|>\n\n", 1},
    {"assistant", "Assistant: ", "<|separator|>\n\n", 0},
    {0},
};
static const role_fmt PANGU[] = {
    {"system", "[unused9]系统：", "[unused10]", 0},
    {"user", "[unused9]用户：", "[unused10]", 0},
    {"assistant", "[unused9]助手：", "[unused10]", 0},
    {"tool", "[unused9]工具：", "[unused10]", 0},
    {"function", "[unused9]方法：", "[unused10]", 0},
    {0},
};

/* "<|start_header_id|>role<|end_header_id|>\n\n" style: llama3, llama4;
 * contents trimmed. */
static void fmt_header(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen, const char *open,
                       const char *close, const char *eot)
{
    for (size_t i = 0; i < n; i++) {
        asn_sbuf_adds(b, open);
        asn_sbuf_adds(b, m[i].role);
        asn_sbuf_adds(b, close);
        asn_sbuf_adds(b, "\n\n");
        put_trim(b, m[i].content);
        asn_sbuf_adds(b, eot);
    }
    if (gen) {
        asn_sbuf_adds(b, open);
        asn_sbuf_adds(b, "assistant");
        asn_sbuf_adds(b, close);
        asn_sbuf_adds(b, "\n\n");
    }
}

static void fmt_minicpm(asn_sbuf *b, const asn_chat_msg *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int user = is(m[i].role, "user");
        if (user)
            asn_sbuf_adds(b, "<用户>");
        put_trim(b, m[i].content);
        if (user)
            asn_sbuf_adds(b, "<AI>");
    }
}

/* RWKV World: "\n\n" ends a turn; the assistant's opening follows a final
 * user message whatever add_generation_prompt says. */
static void fmt_rwkv(asn_sbuf *b, const asn_chat_msg *m, size_t n)
{
    static const role_fmt R[] = {
        {"system", "System: ", "\n\n", 1},
        {"user", "User: ", "\n\n", 1},
        {"assistant", "Assistant: ", "\n\n", 1},
        {0},
    };
    fmt_roles(b, m, n, 0, R, NULL);
    if (n && is(m[n - 1].role, "user"))
        asn_sbuf_adds(b, "Assistant:");
}

/* Granite: every role in <|start_of_role|> brackets. A tool call is written
 * under its own role by 3.x and as the assistant's by 4.0 / 4.1. */
static void fmt_granite(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen, int v4)
{
    for (size_t i = 0; i < n; i++) {
        int call = is(m[i].role, "assistant_tool_call");
        asn_sbuf_adds(b, "<|start_of_role|>");
        asn_sbuf_adds(b, call && v4 ? "assistant" : m[i].role);
        asn_sbuf_adds(b, "<|end_of_role|>");
        if (call)
            asn_sbuf_adds(b, "<|tool_call|>");
        asn_sbuf_adds(b, m[i].content);
        asn_sbuf_adds(b, "<|end_of_text|>\n");
    }
    if (gen)
        asn_sbuf_adds(b, "<|start_of_role|>assistant<|end_of_role|>");
}

static void fmt_gigachat(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    int has_sys = n > 0 && is(m[0].role, "system");
    asn_sbuf_adds(b, "<s>");
    if (has_sys) {
        asn_sbuf_adds(b, m[0].content);
        asn_sbuf_adds(b, "<|message_sep|>");
    }
    for (size_t i = has_sys ? 1 : 0; i < n; i++) {
        if (is(m[i].role, "user")) {
            asn_sbuf_adds(b, "user<|role_sep|>");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>");
        } else if (is(m[i].role, "assistant")) {
            asn_sbuf_adds(b, "assistant<|role_sep|>");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<|message_sep|>");
        }
    }
    if (gen)
        asn_sbuf_adds(b, "assistant<|role_sep|>");
}

/* Generic "OPEN role MID content END" per message: megrez, solar-open,
 * gpt-oss (whose END depends on the role). */
static void fmt_wrap(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen, const char *open,
                     const char *mid, const char *end, const char *prompt)
{
    for (size_t i = 0; i < n; i++) {
        asn_sbuf_adds(b, open);
        asn_sbuf_adds(b, m[i].role);
        asn_sbuf_adds(b, mid);
        asn_sbuf_adds(b, m[i].content);
        asn_sbuf_adds(b, end);
    }
    if (gen)
        asn_sbuf_adds(b, prompt);
}

/* Bailing (Ling / Ring): roles upper-cased, user is HUMAN. */
static void fmt_bailing(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen, int id)
{
    int v2 = id == ASN_CHAT_BAILING2;
    if (v2 && !(n > 0 && is(m[0].role, "system")))
        asn_sbuf_adds(b, "<role>SYSTEM</role>detailed thinking off<|role_end|>");
    for (size_t i = 0; i < n; i++) {
        asn_sbuf_adds(b, "<role>");
        if (is(m[i].role, "user"))
            asn_sbuf_adds(b, "HUMAN");
        else
            put_upper(b, m[i].role, 0);
        asn_sbuf_adds(b, "</role>");
        asn_sbuf_adds(b, m[i].content);
        if (v2)
            asn_sbuf_adds(b, "<|role_end|>");
    }
    if (gen) {
        asn_sbuf_adds(b, "<role>ASSISTANT</role>");
        if (id == ASN_CHAT_BAILING_THINK)
            asn_sbuf_adds(b, "<think>");
    }
}

/* SmolVLM: <|im_start|> once (it is that model's BOS), then plain
 * "User:" / "Assistant:" turns. */
static void fmt_smolvlm(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    asn_sbuf_adds(b, "<|im_start|>");
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "system")) {
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "\n\n");
        } else {
            asn_sbuf_adds(b, is(m[i].role, "user") ? "User: " : "Assistant: ");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<end_of_utterance>\n");
        }
    }
    if (gen)
        asn_sbuf_adds(b, "Assistant:");
}

static void fmt_dots1(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "system")) {
            asn_sbuf_adds(b, "<|system|>");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<|endofsystem|>");
        } else if (is(m[i].role, "user")) {
            asn_sbuf_adds(b, "<|userprompt|>");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<|endofuserprompt|>");
        } else {
            asn_sbuf_adds(b, "<|response|>");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<|endofresponse|>");
        }
    }
    if (gen)
        asn_sbuf_adds(b, "<|response|>");
}

/* Hunyuan MoE: no generation prompt; a user turn ends with <|extra_0|>. */
static void fmt_hunyuan_moe(asn_sbuf *b, const asn_chat_msg *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "assistant")) {
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<|eos|>");
        } else {
            asn_sbuf_adds(b, "<|startoftext|>");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, is(m[i].role, "system") ? "<|extra_4|>" : "<|extra_0|>");
        }
    }
}

static void fmt_gpt_oss(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    for (size_t i = 0; i < n; i++) {
        asn_sbuf_adds(b, "<|start|>");
        asn_sbuf_adds(b, m[i].role);
        asn_sbuf_adds(b, "<|message|>");
        asn_sbuf_adds(b, m[i].content);
        asn_sbuf_adds(b, is(m[i].role, "assistant") ? "<|return|>" : "<|end|>");
    }
    if (gen)
        asn_sbuf_adds(b, "<|start|>assistant");
}

/* Hunyuan dense: a leading system text, then user turns that end with the
 * assistant's opening; no generation prompt. */
static void fmt_hunyuan_dense(asn_sbuf *b, const asn_chat_msg *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i == 0 && is(m[i].role, "system")) {
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<｜hy_place▁holder▁no▁3｜>");
        }
        if (is(m[i].role, "assistant")) {
            asn_sbuf_adds(b, "<｜hy_Assistant｜>");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<｜hy_place▁holder▁no▁2｜>");
        } else if (is(m[i].role, "user")) {
            asn_sbuf_adds(b, "<｜hy_User｜>");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<｜hy_Assistant｜>");
        }
    }
}

/* Hunyuan VL / OCR: the role marker follows the content. */
static void fmt_hunyuan_vl(asn_sbuf *b, const asn_chat_msg *m, size_t n)
{
    asn_sbuf_adds(b, "<｜hy_begin▁of▁sentence｜>");
    for (size_t i = 0; i < n; i++) {
        if (i == 0 && is(m[i].role, "system")) {
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<｜hy_place▁holder▁no▁3｜>");
        } else if (is(m[i].role, "user")) {
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<｜hy_User｜>");
        } else if (is(m[i].role, "assistant")) {
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<｜hy_Assistant｜>");
        }
    }
}

static void fmt_kimi_k2(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    for (size_t i = 0; i < n; i++) {
        const char *r = m[i].role;
        if (is(r, "system"))
            asn_sbuf_adds(b, "<|im_system|>system<|im_middle|>");
        else if (is(r, "user"))
            asn_sbuf_adds(b, "<|im_user|>user<|im_middle|>");
        else if (is(r, "assistant"))
            asn_sbuf_adds(b, "<|im_assistant|>assistant<|im_middle|>");
        else if (is(r, "tool"))
            asn_sbuf_adds(b, "<|im_system|>tool<|im_middle|>");
        asn_sbuf_adds(b, m[i].content);
        asn_sbuf_adds(b, "<|im_end|>");
    }
    if (gen)
        asn_sbuf_adds(b, "<|im_assistant|>assistant<|im_middle|>");
}

static void fmt_seed_oss(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    for (size_t i = 0; i < n; i++) {
        asn_sbuf_adds(b, "<seed:bos>");
        asn_sbuf_adds(b, m[i].role);
        asn_sbuf_adds(b, "\n");
        (is(m[i].role, "assistant") ? put_trim : asn_sbuf_adds)(b, m[i].content);
        asn_sbuf_adds(b, "<seed:eos>");
    }
    if (gen)
        asn_sbuf_adds(b, "<seed:bos>assistant\n");
}

static void fmt_pangu(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    if (n > 0 && !is(m[0].role, "system"))
        asn_sbuf_adds(b, "[unused9]系统：[unused10]");
    fmt_roles(b, m, n, gen, PANGU, "[unused9]助手：");
}

/* ------------------------------------------------------ Jinja families */

static char chat_date[16] = "26 Jul 2024";

int asn_chat_set_date(const char *d, asn_err *e)
{
    static const char *months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int ok = d && strlen(d) == 11 && d[0] >= '0' && d[0] <= '3' && d[1] >= '0' && d[1] <= '9' && d[2] == ' ' &&
             d[6] == ' ' && strspn(d + 7, "0123456789") == 4 && (d[0] != '0' || d[1] != '0');
    int month = 0;
    for (int i = 0; ok && i < 12; i++)
        month |= !strncmp(d + 3, months[i], 3);
    if (!ok || !month)
        return asn_err_set(e, "chat date \"%.40s\" is not of the form DD Mon YYYY (e.g. \"26 Jul 2024\")",
                           d ? d : "");
    memcpy(chat_date, d, 12);
    return 0;
}

const char *asn_chat_date(void) { return chat_date; }

int asn_chat_dated(int id) { return id == ASN_CHAT_LLAMA3_1; }

/* HF's Llama 3.1 / 3.2 / 3.3 template: a system block always (the dated
 * lines, then the system text trimmed), every content trimmed. */
static void fmt_llama31(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    size_t first = 0;
    asn_sbuf_adds(b, "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: ");
    asn_sbuf_adds(b, chat_date);
    asn_sbuf_adds(b, "\n\n");
    if (n > 0 && is(m[0].role, "system")) {
        put_trim(b, m[0].content);
        first = 1;
    }
    asn_sbuf_adds(b, "<|eot_id|>");
    fmt_header(b, m + first, n - first, gen, "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>");
}

/* chatml, with the template's default system text when there is none. */
static void fmt_chatml_default(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen, const char *sys)
{
    if (!(n > 0 && is(m[0].role, "system"))) {
        asn_sbuf_adds(b, "<|im_start|>system\n");
        asn_sbuf_adds(b, sys);
        asn_sbuf_adds(b, "<|im_end|>\n");
    }
    fmt_chatml(b, m, n, gen);
}

/* Gemma 3: the first message, if a system one, opens the first turn as
 * written (not trimmed) followed by a blank line. */
static void fmt_gemma3(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    const char *sys = n > 0 && is(m[0].role, "system") ? m[0].content : NULL;
    for (size_t i = sys ? 1 : 0; i < n; i++) {
        asn_sbuf_adds(b, "<start_of_turn>");
        asn_sbuf_adds(b, is(m[i].role, "assistant") ? "model" : m[i].role);
        asn_sbuf_adds(b, "\n");
        if (sys) {
            asn_sbuf_adds(b, sys);
            asn_sbuf_adds(b, "\n\n");
            sys = NULL;
        }
        put_trim(b, m[i].content);
        asn_sbuf_adds(b, "<end_of_turn>\n");
    }
    if (gen)
        asn_sbuf_adds(b, "<start_of_turn>model\n");
}

/* DeepSeek R1 distills: the system text first, as is; the assistant's
 * opening holds "<think>\n". */
static void fmt_deepseek_r1(asn_sbuf *b, const asn_chat_msg *m, size_t n, int gen)
{
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "system")) {
            asn_sbuf_adds(b, m[i].content);
        } else if (is(m[i].role, "user")) {
            asn_sbuf_adds(b, "<｜User｜>");
            asn_sbuf_adds(b, m[i].content);
        } else {
            asn_sbuf_adds(b, "<｜Assistant｜>");
            asn_sbuf_adds(b, m[i].content);
            asn_sbuf_adds(b, "<｜end▁of▁sentence｜>");
        }
    }
    if (gen)
        asn_sbuf_adds(b, "<｜Assistant｜><think>\n");
}

static void format_family(asn_sbuf *b, int id, const asn_chat_msg *m, size_t n, int gen)
{
    switch ((asn_chat_tmpl)id) {
    case ASN_CHAT_NONE: fmt_none(b, m, n); break;
    case ASN_CHAT_CHATML: fmt_chatml(b, m, n, gen); break;
    case ASN_CHAT_LLAMA2:
    case ASN_CHAT_LLAMA2_SYS:
    case ASN_CHAT_LLAMA2_SYS_BOS:
    case ASN_CHAT_LLAMA2_SYS_STRIP: fmt_llama2(b, m, n, id); break;
    case ASN_CHAT_MISTRAL_V1:
    case ASN_CHAT_MISTRAL_V3:
    case ASN_CHAT_MISTRAL_V3_TEKKEN: fmt_mistral_v1_v3(b, m, n, id); break;
    case ASN_CHAT_MISTRAL_V7: fmt_mistral_v7(b, m, n, 0); break;
    case ASN_CHAT_MISTRAL_V7_TEKKEN: fmt_mistral_v7(b, m, n, 1); break;
    case ASN_CHAT_PHI3: fmt_role_bars(b, m, n, gen, "", "\n", "<|end|>\n", "<|assistant|>\n"); break;
    case ASN_CHAT_PHI4: fmt_phi4(b, m, n, gen); break;
    case ASN_CHAT_FALCON3: fmt_role_bars(b, m, n, gen, "", "\n", "\n", "<|assistant|>\n"); break;
    case ASN_CHAT_ZEPHYR:
        fmt_role_bars(b, m, n, gen, "", "\n", "<|endoftext|>\n", "<|assistant|>\n");
        break;
    case ASN_CHAT_MONARCH: fmt_monarch(b, m, n, gen); break;
    case ASN_CHAT_GEMMA: fmt_gemma(b, m, n, gen); break;
    case ASN_CHAT_ORION: fmt_orion(b, m, n); break;
    case ASN_CHAT_OPENCHAT: fmt_openchat(b, m, n, gen); break;
    case ASN_CHAT_VICUNA: fmt_vicuna(b, m, n, gen, 0); break;
    case ASN_CHAT_VICUNA_ORCA: fmt_vicuna(b, m, n, gen, 1); break;
    case ASN_CHAT_DEEPSEEK: fmt_roles(b, m, n, gen, DEEPSEEK, "### Response:\n"); break;
    case ASN_CHAT_DEEPSEEK2: fmt_roles(b, m, n, gen, DEEPSEEK2, "Assistant:"); break;
    case ASN_CHAT_DEEPSEEK3: fmt_roles(b, m, n, gen, DEEPSEEK3, "<｜Assistant｜>"); break;
    case ASN_CHAT_DEEPSEEK_OCR: /* no template: the contents, concatenated */
        for (size_t i = 0; i < n; i++)
            asn_sbuf_adds(b, m[i].content);
        break;
    case ASN_CHAT_COMMAND_R:
        fmt_roles(b, m, n, gen, COMMAND_R, "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
        break;
    case ASN_CHAT_LLAMA3:
        fmt_header(b, m, n, gen, "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>");
        break;
    case ASN_CHAT_CHATGLM3:
        fmt_role_bars(b, m, n, gen, "[gMASK]sop", "\n ", "", "<|assistant|>");
        break;
    case ASN_CHAT_CHATGLM4:
        fmt_role_bars(b, m, n, gen, "[gMASK]<sop>", "\n", "", "<|assistant|>\n");
        break;
    case ASN_CHAT_GLMEDGE: fmt_role_bars(b, m, n, gen, "", "\n", "", "<|assistant|>"); break;
    case ASN_CHAT_MINICPM: fmt_minicpm(b, m, n); break;
    case ASN_CHAT_EXAONE3: fmt_roles(b, m, n, gen, EXAONE3, "[|assistant|]"); break;
    case ASN_CHAT_EXAONE4: fmt_roles(b, m, n, gen, EXAONE4, "[|assistant|]"); break;
    case ASN_CHAT_EXAONE_MOE: fmt_roles(b, m, n, gen, EXAONE_MOE, "<|assistant|>\n"); break;
    case ASN_CHAT_RWKV_WORLD: fmt_rwkv(b, m, n); break;
    case ASN_CHAT_GRANITE: fmt_granite(b, m, n, gen, 0); break;
    case ASN_CHAT_GRANITE_4_0:
    case ASN_CHAT_GRANITE_4_1: fmt_granite(b, m, n, gen, 1); break;
    case ASN_CHAT_GIGACHAT: fmt_gigachat(b, m, n, gen); break;
    case ASN_CHAT_MEGREZ:
        fmt_wrap(b, m, n, gen, "<|role_start|>", "<|role_end|>", "<|turn_end|>",
                 "<|role_start|>assistant<|role_end|>");
        break;
    case ASN_CHAT_YANDEX: fmt_roles(b, m, n, gen, YANDEX, " Ассистент:[SEP]"); break;
    case ASN_CHAT_BAILING:
    case ASN_CHAT_BAILING_THINK:
    case ASN_CHAT_BAILING2: fmt_bailing(b, m, n, gen, id); break;
    case ASN_CHAT_LLAMA4:
        fmt_header(b, m, n, gen, "<|header_start|>", "<|header_end|>", "<|eot|>");
        break;
    case ASN_CHAT_SMOLVLM: fmt_smolvlm(b, m, n, gen); break;
    case ASN_CHAT_DOTS1: fmt_dots1(b, m, n, gen); break;
    case ASN_CHAT_HUNYUAN_MOE: fmt_hunyuan_moe(b, m, n); break;
    case ASN_CHAT_GPT_OSS: fmt_gpt_oss(b, m, n, gen); break;
    case ASN_CHAT_HUNYUAN_DENSE: fmt_hunyuan_dense(b, m, n); break;
    case ASN_CHAT_HUNYUAN_VL: fmt_hunyuan_vl(b, m, n); break;
    case ASN_CHAT_KIMI_K2: fmt_kimi_k2(b, m, n, gen); break;
    case ASN_CHAT_SEED_OSS: fmt_seed_oss(b, m, n, gen); break;
    case ASN_CHAT_GROK2: fmt_roles(b, m, n, gen, GROK2, "Assistant:"); break;
    case ASN_CHAT_PANGU_EMBED: fmt_pangu(b, m, n, gen); break;
    case ASN_CHAT_SOLAR_OPEN:
        fmt_wrap(b, m, n, gen, "<|begin|>", "<|content|>", "<|end|>", "<|begin|>assistant");
        break;
    case ASN_CHAT_LLAMA3_1: fmt_llama31(b, m, n, gen); break;
    case ASN_CHAT_QWEN2_5:
        fmt_chatml_default(b, m, n, gen, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
        break;
    case ASN_CHAT_SMOLLM2:
        fmt_chatml_default(b, m, n, gen, "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
        break;
    case ASN_CHAT_GEMMA3: fmt_gemma3(b, m, n, gen); break;
    case ASN_CHAT_TINYLLAMA: fmt_role_bars(b, m, n, gen, "", "\n", "</s>\n", "<|assistant|>\n"); break;
    case ASN_CHAT_DEEPSEEK_R1: fmt_deepseek_r1(b, m, n, gen); break;
    case ASN_CHAT_CHATML_THINK:
        fmt_chatml(b, m, n, gen);
        if (gen)
            asn_sbuf_adds(b, "<think>\n");
        break;
    case ASN_CHAT_COUNT: break;
    }
}

char *asn_chat_format(int id, const asn_chat_msg *msgs, size_t n, int add_generation_prompt,
                      asn_err *e)
{
    if (id < 0 || id >= ASN_CHAT_COUNT) {
        asn_err_set(e, "chat template id %d is not a template family", id);
        return NULL;
    }
    if (n && !msgs) {
        asn_err_set(e, "chat: %zu messages but no message array", n);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) {
            asn_err_set(e, "chat message %zu has no %s", i, msgs[i].role ? "content" : "role");
            return NULL;
        }
    asn_sbuf b = {0};
    asn_sbuf_adds(&b, ""); /* an empty conversation still gives a string */
    format_family(&b, id, msgs, n, add_generation_prompt != 0);
    return b.buf;
}

/* ---------------------------------------------------- choice for a model */

/* "a, b, c" of every family name, for error messages. */
static void list_names(char *out, size_t cap)
{
    size_t k = 0;
    out[0] = 0;
    for (int id = 0; id < ASN_CHAT_COUNT && k + 1 < cap; id++) {
        int w = snprintf(out + k, cap - k, "%s%s", id ? ", " : "", FAMILIES[id].name);
        if (w < 0)
            break;
        k += (size_t)w;
    }
}

int asn_chat_detect_jinja(const char *t)
{
#define HAS(s) (strstr(t, (s)) != NULL)
    int id = asn_chat_detect(t);
    if (id < 0 || (FAMILIES[id].by_name && !strcmp(t, FAMILIES[id].name)))
        return id; /* a family name: as named */
    switch (id) {
    case ASN_CHAT_LLAMA3:
        return HAS("Cutting Knowledge Date") ? ASN_CHAT_LLAMA3_1 : id;
    case ASN_CHAT_CHATML:
        if (HAS("You are Qwen, created by Alibaba Cloud. You are a helpful assistant."))
            return ASN_CHAT_QWEN2_5;
        if (HAS("You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>"))
            return ASN_CHAT_SMOLLM2;
        if (HAS("'<|im_start|>assistant\\n<think>\\n'"))
            return ASN_CHAT_CHATML_THINK;
        return id;
    case ASN_CHAT_GEMMA:
        return HAS("first_user_prefix") ? ASN_CHAT_GEMMA3 : id;
    case ASN_CHAT_GLMEDGE:
        return HAS("<|system|>") && HAS("message['content'] + eos_token") ? ASN_CHAT_TINYLLAMA : id;
    case ASN_CHAT_DEEPSEEK3:
        return HAS("<｜Assistant｜><think>\\n") ? ASN_CHAT_DEEPSEEK_R1 : id;
    default:
        return id;
    }
#undef HAS
}

int asn_chat_for_model(const char *model_tmpl, const char *override_name, asn_err *e)
{
    if (override_name) {
        int id = asn_chat_from_name(override_name);
        if (id < 0) {
            char names[768];
            list_names(names, sizeof names);
            return asn_err_set(e, "unknown chat template \"%.64s\" (known: %s)", override_name, names);
        }
        return id;
    }
    if (!model_tmpl || !model_tmpl[0])
        return ASN_CHAT_CHATML; /* llama.cpp's choice for a model without a template */
    int id = asn_chat_detect_jinja(model_tmpl);
    if (id < 0)
        return asn_err_set(e,
                           "the model's tokenizer.chat_template is not one of the template families "
                           "asn recognises (llama.cpp's built-in list); choose one by name, e.g. "
                           "chatml, llama3, mistral-v7, gemma, or none for plain text");
    return id;
}
