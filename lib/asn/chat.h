/* asn/chat.h — chat templates without Jinja.
 *
 * A GGUF model carries its chat format as a Jinja template in
 * tokenizer.chat_template. asn does not run Jinja: like llama.cpp's C API
 * (llama_chat_apply_template), it recognises the template's family from
 * marker substrings and then writes the conversation with a fixed formatter
 * per family. Detection follows llama.cpp's rules in the same order, so a
 * template lands on the family llama.cpp picks for it, and each formatter
 * writes byte for byte what llama.cpp writes (checked against the expected
 * strings of llama.cpp's tests/test-chat-template.cpp in
 * tests/unit/test_chat.c).
 *
 * What follows from formatting without Jinja (as in llama.cpp):
 *   - a llama.cpp family does not reproduce a template's extras: default
 *     system prompts, Llama 3.1's "Cutting Knowledge Date" block, tools,
 *     thinking tags (asn's Jinja families below do, for the templates they
 *     name);
 *   - the text never starts with the model's BOS token: the tokenizer adds
 *     it. A literal "<s>" appears only where llama.cpp's formatter writes one
 *     (between turns for llama2-sys-bos and monarch, at the start for
 *     gigachat);
 *   - roles are passed through as given ("system", "user", "assistant", or
 *     anything else); families that only know some roles treat the others as
 *     llama.cpp does (often as the assistant, sometimes by dropping them).
 *
 * Jinja renderings. For the templates of some models the Jinja rendering
 * differs from llama.cpp's formatter of their family, so asn has families
 * of its own that write what the model's template writes (after its
 * leading bos_token, which the tokenizer adds): llama3.1, qwen2.5,
 * smollm2, gemma3, tinyllama, deepseek-r1 and chatml-think. asn_chat_for_model picks
 * them from the template text (asn_chat_detect_jinja); asn_chat_detect
 * keeps llama.cpp's answer. tests/cli/chat_jinja.sh renders the real
 * templates of tests/data/chat/templates/ with Python's jinja2 as
 * transformers does and compares.
 *
 * Besides llama.cpp's families, asn has "none" for base models: the message
 * contents in order, separated by a blank line ("\n\n"), with no role
 * markers; empty contents are skipped and the generation prompt adds
 * nothing. So a prompt without a system message is used as is, and with a
 * system message the text is "SYSTEM\n\nPROMPT". */
#ifndef ASN_CHAT_H
#define ASN_CHAT_H

#include <stddef.h>

#include "asn/core.h"

typedef struct asn_chat_msg {
    const char *role;    /* "system", "user", "assistant", ... */
    const char *content; /* UTF-8 text */
} asn_chat_msg;

/* Template families. The names (asn_chat_name) are llama.cpp's built-in
 * template names, plus "none" and "dots1" (a family llama.cpp detects but
 * does not accept by name). */
typedef enum asn_chat_tmpl {
    ASN_CHAT_NONE = 0,         /* "none": plain text, for base models */
    ASN_CHAT_CHATML,           /* Qwen2/2.5/3, SmolLM2/3, Hermes, OpenHermes */
    ASN_CHAT_LLAMA2,           /* Llama 2 / Mistral 7B v0.x without <<SYS>> */
    ASN_CHAT_LLAMA2_SYS,
    ASN_CHAT_LLAMA2_SYS_BOS,
    ASN_CHAT_LLAMA2_SYS_STRIP,
    ASN_CHAT_MISTRAL_V1,
    ASN_CHAT_MISTRAL_V3,
    ASN_CHAT_MISTRAL_V3_TEKKEN, /* Mistral Nemo */
    ASN_CHAT_MISTRAL_V7,        /* Mistral Small 3.x, Large 2411 */
    ASN_CHAT_MISTRAL_V7_TEKKEN,
    ASN_CHAT_PHI3,
    ASN_CHAT_PHI4,
    ASN_CHAT_FALCON3,
    ASN_CHAT_ZEPHYR,
    ASN_CHAT_MONARCH,
    ASN_CHAT_GEMMA,
    ASN_CHAT_ORION,
    ASN_CHAT_OPENCHAT,
    ASN_CHAT_VICUNA,
    ASN_CHAT_VICUNA_ORCA,
    ASN_CHAT_DEEPSEEK,
    ASN_CHAT_DEEPSEEK2,
    ASN_CHAT_DEEPSEEK3,        /* DeepSeek V3 / R1 and the R1 distills */
    ASN_CHAT_DEEPSEEK_OCR,
    ASN_CHAT_COMMAND_R,
    ASN_CHAT_LLAMA3,           /* Llama 3 / 3.1 / 3.2 / 3.3 */
    ASN_CHAT_CHATGLM3,
    ASN_CHAT_CHATGLM4,
    ASN_CHAT_GLMEDGE,          /* also TinyLlama-Chat, whose template writes eos_token, not </s> */
    ASN_CHAT_MINICPM,
    ASN_CHAT_EXAONE3,
    ASN_CHAT_EXAONE4,
    ASN_CHAT_EXAONE_MOE,
    ASN_CHAT_RWKV_WORLD,
    ASN_CHAT_GRANITE,
    ASN_CHAT_GRANITE_4_0,
    ASN_CHAT_GRANITE_4_1,
    ASN_CHAT_GIGACHAT,
    ASN_CHAT_MEGREZ,
    ASN_CHAT_YANDEX,
    ASN_CHAT_BAILING,
    ASN_CHAT_BAILING_THINK,
    ASN_CHAT_BAILING2,
    ASN_CHAT_LLAMA4,
    ASN_CHAT_SMOLVLM,
    ASN_CHAT_DOTS1,
    ASN_CHAT_HUNYUAN_MOE,
    ASN_CHAT_GPT_OSS,
    ASN_CHAT_HUNYUAN_DENSE,
    ASN_CHAT_HUNYUAN_VL,
    ASN_CHAT_KIMI_K2,
    ASN_CHAT_SEED_OSS,
    ASN_CHAT_GROK2,
    ASN_CHAT_PANGU_EMBED,
    ASN_CHAT_SOLAR_OPEN,
    /* asn's families for models whose own Jinja template writes more than
     * llama.cpp's formatter of its family (see "Jinja renderings" above) */
    ASN_CHAT_LLAMA3_1,    /* "llama3.1": Llama 3.1 / 3.2 / 3.3, dated system block */
    ASN_CHAT_QWEN2_5,     /* "qwen2.5": chatml with Qwen2.5's default system text */
    ASN_CHAT_SMOLLM2,     /* "smollm2": chatml with SmolLM2's default system text */
    ASN_CHAT_GEMMA3,      /* "gemma3": gemma, the system text not trimmed */
    ASN_CHAT_TINYLLAMA,   /* "tinyllama": zephyr's roles, each turn ending in </s> */
    ASN_CHAT_DEEPSEEK_R1, /* "deepseek-r1": the R1 distills, <think> opened */
    ASN_CHAT_CHATML_THINK, /* "chatml-think": QwQ, chatml with <think> opened */
    ASN_CHAT_COUNT
} asn_chat_tmpl;

/* The family of a chat template, as llama.cpp's llm_chat_detect_template
 * decides it: a llama.cpp built-in name ("chatml", "llama3", "mistral-v7",
 * ...) is taken as is; otherwise the first marker rule that matches the text
 * wins (e.g. "<|im_start|>" -> chatml, "[INST]" -> the mistral / llama2
 * variants, "<|start_header_id|>" -> llama3). Returns an ASN_CHAT_* id, or -1
 * when nothing matches (or tmpl is NULL). "none" is not a llama.cpp name and
 * is not recognised here; use asn_chat_from_name. */
int asn_chat_detect(const char *tmpl);

/* The id for an exact family name: every llama.cpp built-in name, plus
 * "none". Returns -1 for anything else (including template texts). */
int asn_chat_from_name(const char *name);

/* The name of a family id; NULL when id is out of range. Iterating ids
 * 0..ASN_CHAT_COUNT-1 lists every family. */
const char *asn_chat_name(int id);

/* Formats a conversation for family `id`, as llama_chat_apply_template
 * does; with add_generation_prompt set, the opening of the assistant's turn
 * is appended (families whose format has no such opening, e.g. the llama2
 * and mistral ones, append nothing). n may be 0. Returns a malloc'd,
 * NUL-terminated string the caller frees, or NULL with e set when id is not
 * a family or a message has a NULL role or content. */
char *asn_chat_format(int id, const asn_chat_msg *msgs, size_t n, int add_generation_prompt,
                      asn_err *e);

/* The "Today Date" of the llama3.1 family's system block (HF's Llama
 * 3.1 / 3.2 / 3.3 templates: "Cutting Knowledge Date: December 2023" and
 * "Today Date: DATE"). Llama 3.1's template always writes "26 Jul 2024";
 * 3.2's writes the day it runs (strftime_now("%d %b %Y")) where the
 * renderer has a clock, which asn replaces by this fixed date for
 * reproducibility. The default is "26 Jul 2024". date must look like
 * "DD Mon YYYY" (two digits, an English month abbreviation, four digits);
 * returns 0, or -1 with e set. Process-wide: set it once, before
 * formatting. */
int asn_chat_set_date(const char *date, asn_err *e);
/* The --chat-date option's help, the same in every tool that formats
 * prompts. */
#define ASN_CHAT_DATE_HELP                                                                            \
    "\"Today Date\" of the llama3.1 chat template (Llama 3.1-3.3's system block), as DD Mon YYYY " \
    "(default: 26 Jul 2024)"
const char *asn_chat_date(void);

/* 1 when family id writes asn_chat_date() into its prompts (llama3.1). */
int asn_chat_dated(int id);

/* The family to use for a model. model_tmpl is the GGUF's
 * tokenizer.chat_template (NULL when the key is absent); override_name is a
 * family name the user chose (NULL for none).
 *   - override_name set: it must be an exact name (asn_chat_from_name, so
 *     "none" works); an unknown name is an error that lists the known ones.
 *     The model's template is then ignored.
 *   - no override, no template (NULL or empty): chatml, as llama.cpp
 *     (llama_chat_apply_template with a NULL template uses "chatml"). A base
 *     model wants "none" instead; asn cannot tell, so the caller chooses.
 *   - no override, a template: its detected family; a template that matches
 *     no family is an error that says to choose one by name.
 * Returns the id, or -1 with e set. */
int asn_chat_for_model(const char *model_tmpl, const char *override_name, asn_err *e);

/* The family the model's own template text renders as: asn_chat_detect's
 * llama.cpp family, refined to one of asn's Jinja families (llama3.1,
 * qwen2.5, smollm2, gemma3, tinyllama, deepseek-r1, chatml-think) when the text holds
 * that template's marks. -1 when nothing matches. */
int asn_chat_detect_jinja(const char *tmpl);

#endif
