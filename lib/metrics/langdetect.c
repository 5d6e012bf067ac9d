/* langdetect.c — the language of a text (asn_ifeval_detect_language), for
 * IFEval's language:response_language check, which uses the langdetect
 * package: the script most of its letters are in names the language where
 * one script means one language (Greek, Hebrew, Thai, Hangul ...); kana
 * against Han tells Japanese from Chinese; letters only some alphabets
 * have tell Ukrainian, Macedonian, Bulgarian and Russian apart, Urdu,
 * Persian and Arabic, and Vietnamese among the Latin ones; otherwise, in
 * Latin or Devanagari script, the language whose frequent function words
 * the text uses most. */
#include "asn/verifiers.h"
#include "metrics/pystr.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Frequent, fairly distinctive function words of the languages written in
 * Latin script (lower case). */
typedef struct lang_words {
    const char *code;
    const char *const *w;
} lang_words;

#define WORDS(...) (const char *const[]){__VA_ARGS__, NULL}
static const lang_words latin_langs[] = {
    {"en", WORDS("the", "and", "of", "to", "is", "in", "that", "it", "you", "for", "with", "are", "this", "was",
                 "be", "have", "not", "on", "as", "they", "your", "what", "can", "will", "at", "by", "from",
                 "or", "an", "we", "has", "i", "my", "do", "which", "would", "there", "their")},
    {"es", WORDS("el", "la", "los", "las", "de", "que", "y", "en", "un", "una", "es", "por", "con", "para",
                 "no", "se", "del", "al", "lo", "como", "más", "pero", "sus", "muy", "está", "son",
                 "también", "yo", "ser", "hay", "fue", "este", "esta")},
    {"pt", WORDS("o", "os", "as", "de", "que", "e", "em", "um", "uma", "é", "não", "do", "da", "dos", "das",
                 "no", "na", "para", "com", "por", "se", "mais", "mas", "como", "ao", "você", "eu", "são",
                 "também", "muito", "isso", "foi", "seu", "sua")},
    {"fr", WORDS("le", "la", "les", "de", "des", "et", "est", "un", "une", "que", "qui", "en", "du", "pas",
                 "pour", "dans", "ce", "il", "elle", "je", "vous", "nous", "sur", "avec", "au", "aux", "mais",
                 "sont", "ne", "on", "très", "ou", "cette", "être")},
    {"de", WORDS("der", "die", "das", "und", "ist", "nicht", "ein", "eine", "zu", "den", "dem", "mit", "von",
                 "sie", "es", "ich", "auf", "für", "auch", "sich", "des", "im", "wir", "sind", "dass", "aber",
                 "wie", "oder", "kann", "bei", "werden", "wird")},
    {"it", WORDS("il", "lo", "la", "le", "gli", "di", "che", "e", "è", "un", "una", "per", "non", "con",
                 "del", "della", "sono", "si", "ma", "come", "anche", "più", "al", "nel", "io", "questo",
                 "molto", "ho", "essere", "alla")},
    {"nl", WORDS("de", "het", "een", "en", "van", "is", "dat", "niet", "ik", "je", "op", "te", "zijn", "met",
                 "voor", "die", "er", "maar", "ook", "als", "wat", "aan", "om", "hij", "naar", "wordt")},
    {"pl", WORDS("i", "w", "nie", "na", "się", "z", "jest", "to", "że", "do", "jak", "co", "ale", "o",
                 "tak", "dla", "od", "po", "jego", "są", "za", "czy", "by", "już", "ich", "oraz")},
    {"sw", WORDS("na", "ya", "wa", "kwa", "ni", "za", "la", "katika", "hii", "kuwa", "cha", "pia", "lakini",
                 "au", "yake", "hiyo", "sana", "kama", "hakuna", "mimi", "wewe", "sisi", "huo", "vya")},
    {"fi", WORDS("ja", "on", "ei", "se", "että", "oli", "hän", "olla", "mutta", "kun", "niin", "tämä",
                 "myös", "kuin", "mitä", "ovat", "minä", "sinä", "voi", "jos", "vain", "ole", "joka")},
    {"tr", WORDS("ve", "bir", "bu", "da", "de", "için", "ile", "çok", "ne", "gibi", "daha", "olarak", "var",
                 "ama", "ben", "sen", "mi", "değil", "her", "olan")},
    {"id", WORDS("dan", "yang", "di", "ini", "itu", "dengan", "untuk", "tidak", "dari", "dalam", "akan",
                 "ada", "saya", "kami", "anda", "juga", "atau", "pada", "adalah", "bisa")},
    {"sv", WORDS("och", "att", "det", "som", "en", "är", "på", "för", "med", "inte", "jag", "har", "av",
                 "till", "den", "om", "ett", "men", "var", "vi", "så")},
    {"da", WORDS("og", "at", "det", "som", "en", "er", "på", "for", "med", "ikke", "jeg", "har", "af", "til",
                 "den", "om", "et", "men", "var", "vi", "så")},
    {"ro", WORDS("și", "de", "la", "în", "este", "un", "o", "că", "nu", "cu", "pe", "pentru", "care", "mai",
                 "din", "se", "sunt", "ce", "al", "ca")},
    {"cs", WORDS("a", "je", "se", "na", "v", "že", "to", "s", "z", "do", "jsem", "ale", "jak", "o", "pro",
                 "by", "jsou", "tak", "k", "co")},
    {"hu", WORDS("a", "az", "és", "hogy", "nem", "egy", "is", "van", "meg", "de", "ez", "már", "csak", "mint",
                 "vagy", "volt", "én", "még")},
    {"vi", WORDS("là", "và", "của", "có", "không", "được", "cho", "một", "những", "các", "với", "người",
                 "này", "trong", "đã", "để", "tôi", "bạn")},
};
static const lang_words deva_langs[] = {
    {"hi", WORDS("है", "हैं", "के", "की", "में", "और", "का", "से", "नहीं", "यह", "था", "पर", "भी", "लिए", "एक")},
    {"mr", WORDS("आहे", "आणि", "या", "ते", "हे", "आहेत", "नाही", "त्या", "म्हणून", "मध्ये", "होते", "व", "की")},
    {"ne", WORDS("छ", "र", "मा", "हो", "छन्", "गर्न", "पनि", "यो", "थियो", "भएको", "लागि", "गरेको", "छैन")},
};

/* All function words of a family of languages, sorted, so each word of
 * the text costs one binary search. */
typedef struct word_entry {
    const char *w;
    int lang;
} word_entry;

typedef struct word_index {
    const lang_words *langs;
    size_t nl, n;
    word_entry *v;
    pthread_once_t once;
} word_index;

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const word_entry *)a)->w, ((const word_entry *)b)->w);
}

static word_index latin_index = {latin_langs, sizeof latin_langs / sizeof *latin_langs, 0, NULL, PTHREAD_ONCE_INIT};
static word_index deva_index = {deva_langs, sizeof deva_langs / sizeof *deva_langs, 0, NULL, PTHREAD_ONCE_INIT};

static void index_build(word_index *x)
{
    size_t cap = 0;
    for (size_t k = 0; k < x->nl; k++)
        for (const char *const *w = x->langs[k].w; *w; w++) {
            asn_grow((void **)&x->v, &cap, x->n + 1, sizeof *x->v);
            x->v[x->n++] = (word_entry){*w, (int)k};
        }
    qsort(x->v, x->n, sizeof *x->v, entry_cmp);
}
static void latin_build(void) { index_build(&latin_index); }
static void deva_build(void) { index_build(&deva_index); }

static void index_score(const word_index *x, const char *w, size_t *score)
{
    word_entry key = {w, 0};
    const word_entry *hit = bsearch(&key, x->v, x->n, sizeof *x->v, entry_cmp);
    if (!hit)
        return;
    const word_entry *a = hit, *b = hit;
    while (a > x->v && !strcmp(a[-1].w, w))
        a--;
    while (b + 1 < x->v + x->n && !strcmp(b[1].w, w))
        b++;
    for (; a <= b; a++)
        score[a->lang]++;
}

/* Scores each language by how many of the text's words are its function
 * words (at most the first 2000 words). */
static const char *by_words(const char *text, word_index *x, int letters_only)
{
    pthread_once(&x->once, x == &latin_index ? latin_build : deva_build);
    size_t n = strlen(text), l, words = 0;
    size_t score[32] = {0};
    char w[64];
    size_t wn = 0;
    int too_long = 0;
    for (size_t i = 0; i <= n && words < 2000; i += l) {
        uint32_t c = i < n ? asn__u8dec(text + i, n - i, &l) : 0;
        if (i == n)
            l = 1;
        int part = c && (letters_only ? asn__cp_isalpha(c) : !(asn__py_space(c) || (c < 0x80 && ispunct((int)c)) ||
                                                           c == 0x964 || c == 0x965));
        if (part) {
            char buf[4];
            size_t k = asn__u8enc(asn__cp_lower(c), buf);
            if (wn + k < sizeof w) {
                memcpy(w + wn, buf, k);
                wn += k;
            } else {
                too_long = 1;
            }
        } else if (wn) {
            w[wn] = 0;
            if (!too_long) /* no function word is that long */
                index_score(x, w, score);
            words++;
            wn = 0;
            too_long = 0;
        }
    }
    size_t best = 0;
    for (size_t k = 1; k < x->nl; k++)
        if (score[k] > score[best])
            best = k;
    return x->langs[best].code;
}

enum {
    SC_LATIN, SC_GREEK, SC_CYRILLIC, SC_ARMENIAN, SC_HEBREW, SC_ARABIC, SC_DEVANAGARI, SC_BENGALI,
    SC_GURMUKHI, SC_GUJARATI, SC_ORIYA, SC_TAMIL, SC_TELUGU, SC_KANNADA, SC_MALAYALAM, SC_SINHALA, SC_THAI,
    SC_GEORGIAN, SC_HANGUL, SC_KANA, SC_HAN, SC_OTHER, N_SC
};
static const char *const sc_code[N_SC] = {
    [SC_GREEK] = "el", [SC_ARMENIAN] = "hy", [SC_HEBREW] = "he", [SC_BENGALI] = "bn",
    [SC_GURMUKHI] = "pa", [SC_GUJARATI] = "gu", [SC_ORIYA] = "or", [SC_TAMIL] = "ta",
    [SC_TELUGU] = "te", [SC_KANNADA] = "kn", [SC_MALAYALAM] = "ml", [SC_SINHALA] = "si",
    [SC_THAI] = "th", [SC_GEORGIAN] = "ka", [SC_HANGUL] = "ko",
};

static int script_of(uint32_t c)
{
    if (c < 0x250)
        return SC_LATIN;
    if (c >= 0x1E00 && c <= 0x1EFF)
        return SC_LATIN;
    static const struct { uint32_t lo, hi; int sc; } t[] = {
        {0x370, 0x3FF, SC_GREEK},        {0x1F00, 0x1FFF, SC_GREEK},     {0x400, 0x52F, SC_CYRILLIC},
        {0x530, 0x58F, SC_ARMENIAN},     {0x590, 0x5FF, SC_HEBREW},      {0x600, 0x6FF, SC_ARABIC},
        {0x750, 0x77F, SC_ARABIC},       {0xFB50, 0xFDFF, SC_ARABIC},    {0xFE70, 0xFEFF, SC_ARABIC},
        {0x900, 0x97F, SC_DEVANAGARI},   {0x980, 0x9FF, SC_BENGALI},     {0xA00, 0xA7F, SC_GURMUKHI},
        {0xA80, 0xAFF, SC_GUJARATI},     {0xB00, 0xB7F, SC_ORIYA},       {0xB80, 0xBFF, SC_TAMIL},
        {0xC00, 0xC7F, SC_TELUGU},       {0xC80, 0xCFF, SC_KANNADA},     {0xD00, 0xD7F, SC_MALAYALAM},
        {0xD80, 0xDFF, SC_SINHALA},      {0xE00, 0xE7F, SC_THAI},        {0x10A0, 0x10FF, SC_GEORGIAN},
        {0x1100, 0x11FF, SC_HANGUL},     {0x3130, 0x318F, SC_HANGUL},    {0xAC00, 0xD7AF, SC_HANGUL},
        {0x3040, 0x30FF, SC_KANA},       {0x31F0, 0x31FF, SC_KANA},      {0xFF66, 0xFF9F, SC_KANA},
        {0x3400, 0x4DBF, SC_HAN},        {0x4E00, 0x9FFF, SC_HAN},       {0xF900, 0xFAFF, SC_HAN},
        {0x20000, 0x2FFFF, SC_HAN},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (c >= t[i].lo && c <= t[i].hi)
            return t[i].sc;
    return SC_OTHER;
}

static int has_any(const char *text, const uint32_t *set, size_t n)
{
    size_t len = strlen(text), l;
    for (size_t i = 0; i < len; i += l) {
        uint32_t c = asn__cp_lower(asn__u8dec(text + i, len - i, &l));
        for (size_t k = 0; k < n; k++)
            if (c == set[k])
                return 1;
    }
    return 0;
}

const char *asn_ifeval_detect_language(const char *text)
{
    size_t cnt[N_SC] = {0}, n = strlen(text), l, letters = 0;
    for (size_t i = 0; i < n; i += l) {
        uint32_t c = asn__u8dec(text + i, n - i, &l);
        if (!asn__cp_isalpha(c))
            continue;
        cnt[script_of(c)]++;
        letters++;
    }
    if (!letters)
        return NULL;
    int best = 0;
    for (int s = 1; s < N_SC; s++)
        if (cnt[s] > cnt[best])
            best = s;
    /* Japanese mixes kana and kanji; Chinese has no kana */
    if ((best == SC_HAN || best == SC_KANA) && cnt[SC_KANA] * 10 >= cnt[SC_HAN] + cnt[SC_KANA])
        return "ja";
    if (best == SC_HAN)
        return "zh-cn";
    if (sc_code[best])
        return sc_code[best];
    if (best == SC_CYRILLIC) {
        static const uint32_t uk[] = {0x456, 0x457, 0x454, 0x491};
        static const uint32_t mk[] = {0x453, 0x45C, 0x455, 0x459, 0x45A, 0x45F, 0x458};
        static const uint32_t ru[] = {0x44B, 0x44D, 0x451};
        static const uint32_t bg[] = {0x44A};
        if (has_any(text, uk, 4))
            return "uk";
        if (has_any(text, mk, 7))
            return "mk";
        if (has_any(text, bg, 1) && !has_any(text, ru, 3))
            return "bg";
        return "ru";
    }
    if (best == SC_ARABIC) {
        static const uint32_t ur[] = {0x679, 0x688, 0x691, 0x6BA, 0x6D2, 0x6C1, 0x6BE};
        static const uint32_t fa[] = {0x67E, 0x686, 0x698, 0x6AF, 0x6CC, 0x6A9};
        if (has_any(text, ur, 7))
            return "ur";
        if (has_any(text, fa, 6))
            return "fa";
        return "ar";
    }
    if (best == SC_DEVANAGARI)
        return by_words(text, &deva_index, 0);
    if (best == SC_LATIN) {
        /* Vietnamese is unmistakable by its letters */
        static const uint32_t vi[] = {0x1A1, 0x1B0, 0x111, 0x103, 0x1EA1, 0x1EA3, 0x1EA5, 0x1EA7, 0x1EAD,
                                      0x1EBF, 0x1EC1, 0x1EC7, 0x1ECB, 0x1ECD, 0x1ED1, 0x1ED3, 0x1EDB, 0x1EE5};
        if (has_any(text, vi, sizeof vi / sizeof *vi))
            return "vi";
        return by_words(text, &latin_index, 1);
    }
    return "other";
}
