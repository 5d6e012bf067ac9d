/* asn/verifiers.h — verifiable rewards: answer checks for GSM8K and MATH
 * (the reference project's verifiers, which are open-instruct's) and the
 * instruction checks of Google's IFEval (instruction_following_eval), plus
 * the reference's older func_name-style IFEval constraints.
 *
 * The checks follow their Python originals rule by rule, quirks included,
 * so that a dataset scored here gets the reward the reference would give;
 * where C cannot do what Python did (sympy's symbolic equality, NLTK's
 * trained Punkt sentence splitter, langdetect's profiles) the substitute is
 * named in the function's comment. Text is UTF-8 and is handled by code
 * point where Python's str would be (case, whitespace, \w, \b).
 *
 * Every function is thread-safe and allocates nothing that outlives it
 * except the strings it returns (the caller frees them). */
#ifndef ASN_VERIFIERS_H
#define ASN_VERIFIERS_H

#include <jansson.h>
#include <stddef.h>

#include "asn/core.h"

/* ------------------------------------------------------------ regexes */

/* Python-`re`-style regular expressions on UTF-8 text (PCRE2 with Unicode
 * properties, so \w, \d, \b and \s mean what they mean for a Python str).
 * Shared by the checks; public so that tests can pin their behaviour. */
typedef struct asn_regex asn_regex;

enum {
    ASN_RE_ICASE = 1,     /* re.IGNORECASE */
    ASN_RE_MULTILINE = 2, /* re.MULTILINE */
    ASN_RE_DOTALL = 4,    /* re.DOTALL */
};

/* NULL with e set ("bad regular expression ...: why") if it does not compile. */
asn_regex *asn_regex_new(const char *pattern, int flags, asn_err *e);
void asn_regex_free(asn_regex *re);
/* re.search from byte offset `start`: 1 with the match's byte span, 0 if
 * none. */
int asn_regex_search(const asn_regex *re, const char *s, size_t start, size_t *so, size_t *eo);
/* Like asn_regex_search, with the span of capture group `group` (0 = the
 * whole match; an unset group gives an empty span at the match start). */
int asn_regex_group(const asn_regex *re, const char *s, size_t start, int group, size_t *so, size_t *eo);
/* len(re.findall(...)): non-overlapping matches, empty ones as Python 3.7+
 * counts them. */
size_t asn_regex_count(const asn_regex *re, const char *s);
/* The last of those matches (re.findall(...)[-1]): 1 with its byte span,
 * 0 if there is none. */
int asn_regex_last(const asn_regex *re, const char *s, size_t *so, size_t *eo);
/* re.sub(pattern, repl, s) with every match replaced; repl uses PCRE2's
 * syntax ($1, ${2}, $0 for the whole match, $$ for a dollar). */
char *asn_regex_sub(const asn_regex *re, const char *repl, const char *s);

/* ------------------------------------------------ Python str semantics */

/* str.strip() / lstrip() / rstrip() without arguments (Unicode whitespace). */
char *asn_py_strip(const char *s);
/* str.lower() / str.upper() with Unicode simple case mappings. */
char *asn_py_lower(const char *s);
char *asn_py_upper(const char *s);
/* str.isupper() / str.islower(): at least one cased character, and none of
 * the other case. */
int asn_py_isupper(const char *s);
int asn_py_islower(const char *s);

/* -------------------------------------------------------------- GSM8K */

/* The reference's GSM8KVerifier: commas between digits are removed
 * (re.sub(r"(\d),(\d)", ...), one pass, so "1,2,3" becomes "12,3"), the
 * last match of r"[-+]?\d*\.\d+|\d+" is the answer — a sign is kept only on
 * decimals, so "-5" answers "5" — or the whole response when it has no
 * number; passed when it equals the label, both lower-cased. Returns 1 or
 * 0; *extracted (if not NULL) gets the answer compared. */
int asn_gsm8k_check(const char *response, const char *label, char **extracted);

/* The text a JSON ground truth compares as: a string as it is, a number as
 * Python's str() prints it ("72", "72.0"); a string holding a whole GSM8K
 * solution ("... #### 72") gives what follows the last "####", trimmed.
 * NULL for other types. */
char *asn_gsm8k_label(const json_t *ground_truth);

/* --------------------------------------------------------------- MATH */

/* last_boxed_only_string: the last "\boxed{...}" (braces balanced, nested
 * ones included), else the last "\fbox{...}"; when the text has "\boxed "
 * (a space, no brace) anywhere, "\boxed " + what follows the last one up to
 * a "$". NULL when there is none or its braces never close. */
char *asn_math_last_boxed(const char *s);
/* remove_boxed: the inside of "\boxed{...}" or what follows "\boxed "; NULL
 * when s is neither (the reference's assertion fails: so "\fbox{...}" never
 * yields an answer). */
char *asn_math_remove_boxed(const char *s);
/* Hendrycks' strip_string (MATH's own normalizer): \left/\right, degrees,
 * \$ and \%, trailing "\text{ unit}", leading "x =", spaces, \frac12 ->
 * \frac{1}{2}, \sqrt2 -> \sqrt{2}, "0.5" -> \frac{1}{2}, "a/b" ->
 * \frac{a}{b} for integers. NULL where the Python raises (then the
 * reference compares the raw strings: see asn_math_hendrycks_equiv). */
char *asn_math_strip_string(const char *s);
/* hendrycks_is_equiv: strip_string(a) == strip_string(b), or a == b when
 * either strip raises. */
int asn_math_hendrycks_equiv(const char *a, const char *b);
/* Minerva's normalize_final_answer (Lewkowycz et al. 2022, appendix D):
 * text after the last "=", unit words and \text{} removed, $...$ kept, etc. */
char *asn_math_normalize_final_answer(const char *s);
/* The reference's is_equiv parses both with sympy's LaTeX parser and asks
 * sympy whether the difference simplifies to 0. asn's stand-in evaluates
 * both as real expressions — numbers, + - * / ^, \frac \dfrac \tfrac,
 * \sqrt and \sqrt[n], \cdot \times \div, \pi, parentheses and braces,
 * \left \right, implicit products, one-letter variables at three fixed
 * points (so "e" is a variable, as sympy reads it) — and calls them equal when every value agrees to 1e-9
 * (relative). 0 when either is not such an expression. */
int asn_math_value_equiv(const char *a, const char *b);
enum {
    ASN_MATH_VALUES = 1, /* also try asn_math_value_equiv (the reference's sympy step) */
};
/* The reference's MathVerifier: candidates are the last boxed answer, the
 * Minerva "Final Answer: The final answer is X. I hope it is correct."
 * answer, else the last $...$, else the whole response (normalized and
 * raw); passed if any candidate is Hendrycks-equivalent to the label or,
 * with ASN_MATH_VALUES, value-equivalent. Returns 1 or 0; *extracted (if
 * not NULL) gets the first candidate. */
int asn_math_check(const char *response, const char *label, int flags, char **extracted);

/* ------------------------------------------------------------- IFEval */

/* Word count: len(nltk RegexpTokenizer(r"\w+").tokenize(text)). */
size_t asn_ifeval_count_words(const char *text);
/* Sentence count. Google counts with NLTK's trained Punkt model for English
 * (not available here); asn splits after . ? ! (and closing quotes or
 * brackets) followed by white space, except after a known abbreviation, an
 * initial or a number followed by a lower-case word, or inside "..." that
 * goes on in lower case. */
size_t asn_ifeval_count_sentences(const char *text);
/* Tokens of nltk.word_tokenize (NLTKWordTokenizer's rules, applied to the
 * whole text as with preserve_line=True) that are str.isupper(). */
size_t asn_ifeval_count_capital_words(const char *text);
/* The language of text as an ISO 639-1 code ("en", "ru", "zh-cn" as
 * langdetect spells Chinese), or NULL when it has no letters (langdetect's
 * "No features in text", which Google counts as followed). Google uses
 * langdetect; asn decides by script and, within a script, by the most
 * frequent function words of each language — deterministic, and right on
 * ordinary prose, but not langdetect's answer on every text. */
const char *asn_ifeval_detect_language(const char *text);

/* Google's instruction ids, in registry order; NULL-terminated. */
extern const char *const asn_ifeval_ids[];

/* Checks one instruction of Google's registry ("keywords:existence", ...)
 * on response with its kwargs object (null-valued and unknown keys are
 * ignored, as the usual IFEval loaders do; NULL = no arguments) in strict
 * mode: an empty (white-space) response follows nothing. Returns 0 with
 * *followed = 1 or 0; -1 with e set for an unknown id, a missing or
 * mistyped argument (which Google would fill at random), or a keyword that
 * is not a valid regular expression (Google uses keywords as patterns). */
int asn_ifeval_check(const char *instruction_id, const json_t *kwargs, const char *response,
                     int *followed, asn_err *e);

/* The reference's own IFEval format (open-instruct's IFEvalVerifierOld): a
 * constraint object {"func_name": ..., its arguments} (or that JSON as a
 * string), checked with the reference's simpler functions (the answer is
 * the response after any "</think>" and without <answer> tags). Returns 0
 * with *followed; -1 with e set when the constraint is malformed (the
 * reference scores those 0.0: the caller decides). */
int asn_ifeval_ref_check(const json_t *constraint, const char *response, int *followed, asn_err *e);

#endif
