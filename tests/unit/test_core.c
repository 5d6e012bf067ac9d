/* test_core.c — core and io: Philox against numpy, SHA-256 against FIPS
 * 180-2, number layout against Python's repr, heuristic ids against
 * Python's json + hashlib, JSONL line numbers, YAML positions, the string
 * builder against literal texts. Fixtures in
 * tests/fixtures/ come from the scripts beside them. */
#include "asn/core.h"
#include "asn/json.h"
#include "asn/sampling.h"
#include "asn/sbuf.h"
#include "asn/yaml.h"
#include "t.h"

#include <inttypes.h>
#include <stdlib.h>

static char path_buf[4096];
static const char *fixture(const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/%s", root ? root : ".", name);
    return path_buf;
}

static void test_philox(void)
{
    FILE *f = fopen(fixture("fixtures/philox.txt"), "r");
    T_OK("philox fixture opens", f != NULL, "missing tests/fixtures/philox.txt");
    if (!f)
        return;
    uint64_t v[10];
    int n = 0;
    while (fscanf(f, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64
                     " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64,
                  &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) == 10) {
        uint64_t out[4];
        asn_philox4x64(v + 2, v, out);
        char name[64];
        snprintf(name, sizeof name, "philox4x64-10 matches numpy, case %d", ++n);
        T_OK(name, out[0] == v[6] && out[1] == v[7] && out[2] == v[8] && out[3] == v[9],
             "expected %016" PRIx64 " %016" PRIx64 ", got %016" PRIx64 " %016" PRIx64, v[6], v[7],
             out[0], out[1]);
    }
    fclose(f);
    T_OK("philox fixture has cases", n >= 5, "%d cases", n);

    asn_rng_key a = asn_rng_key_make(7, "p1", "abc123"), b = asn_rng_key_make(7, "p1", "abc124");
    T_OK("rng key depends on heuristic id", a.k[0] != b.k[0] || a.k[1] != b.k[1], "same key");
    double u1 = asn_rng_uniform(a, 3, 0), u2 = asn_rng_uniform(a, 3, 0), u3 = asn_rng_uniform(a, 4, 0);
    T_OK("rng uniform is a pure function of (key, step)", u1 == u2 && u1 != u3, "%g %g %g", u1, u2, u3);
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        double u = asn_rng_uniform(a, (uint64_t)i, 0);
        if (u < 0 || u >= 1)
            sum = -1e9;
        sum += u;
    }
    T_NEAR("rng uniform mean over 1e5 draws is 1/2", sum / 100000, 0.5, 0.005);
}

static void test_sha(void)
{
    char hex[65];
    asn_sha256_hex("abc", 3, hex);
    T_EQ_STR("sha256(\"abc\") (FIPS 180-2)", hex,
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    asn_sha256_hex("", 0, hex);
    T_EQ_STR("sha256(\"\")", hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_numbers(void)
{
    FILE *f = fopen(fixture("fixtures/numbers.txt"), "r");
    T_OK("numbers fixture opens", f != NULL, "missing");
    if (!f)
        return;
    char kind, exp[64], got[64];
    uint64_t bits;
    int nd = 0, nf = 0, bad_d = 0, bad_f = 0;
    char first_bad[200] = "";
    while (fscanf(f, " %c %" SCNx64 " %63s", &kind, &bits, exp) == 3) {
        if (kind == 'd') {
            double d;
            memcpy(&d, &bits, sizeof d);
            asn_fmt_double(got, d);
            nd++;
            if (strcmp(got, exp) && !bad_d++)
                snprintf(first_bad, sizeof first_bad, "double: expected %s, got %s", exp, got);
        } else {
            uint32_t b32 = (uint32_t)bits;
            float x;
            memcpy(&x, &b32, sizeof x);
            asn_fmt_float(got, x);
            nf++;
            if (strcmp(got, exp) && !bad_f++)
                snprintf(first_bad, sizeof first_bad, "float: expected %s, got %s", exp, got);
        }
    }
    fclose(f);
    T_OK("doubles print as Python's repr", nd > 50 && !bad_d, "%d of %d differ; %s", bad_d, nd, first_bad);
    T_OK("float32 prints as numpy's shortest repr", nf > 50 && !bad_f, "%d of %d differ; %s", bad_f, nf, first_bad);

    json_t *v = json_pack("{s:f,s:i,s:s,s:[f,n]}", "b", 1.0, "a", 3, "c", "x\"\n\xc3\xa9", "d", 1e-5);
    char *s = asn_json_dumps(v, ASN_JSON_SORT_KEYS);
    T_EQ_STR("canonical JSON: sorted, compact, escapes, UTF-8 kept", s,
             "{\"a\":3,\"b\":1.0,\"c\":\"x\\\"\\n\xc3\xa9\",\"d\":[1e-05,null]}");
    free(s);
    json_decref(v);
    json_t *f32 = asn_json_f32(0.1f);
    s = asn_json_dumps(f32, 0);
    T_EQ_STR("a float32 0.1 prints as 0.1", s, "0.1");
    free(s);
    json_decref(f32);
}

static void test_heuristic_ids(void)
{
    FILE *f = fopen(fixture("fixtures/heuristic_ids.txt"), "r");
    T_OK("heuristic id fixture opens", f != NULL, "missing");
    if (!f)
        return;
    char file[128], id[64], cur[128] = "";
    int idx, n = 0, bad = 0;
    char first_bad[300] = "";
    asn_heuristics *hs = NULL;
    asn_err e;
    while (fscanf(f, "%127s %d %63s", file, &idx, id) == 3) {
        if (strcmp(file, cur)) {
            asn_heuristics_free(hs);
            char p[256];
            snprintf(p, sizeof p, "data/reference-configs/%s", file);
            hs = asn_heuristics_load(fixture(p), &e);
            T_OK(file, hs != NULL, "load failed: %s", hs ? "" : e.msg);
            snprintf(cur, sizeof cur, "%s", file);
        }
        n++;
        if (!hs || idx >= hs->n || strcmp(hs->h[idx].id, id)) {
            if (!bad++)
                snprintf(first_bad, sizeof first_bad, "%s #%d: expected %s, got %s", file, idx, id,
                         hs && idx < hs->n ? hs->h[idx].id : "?");
        }
    }
    asn_heuristics_free(hs);
    fclose(f);
    T_OK("heuristic ids equal Python's sha256(json.dumps(sort_keys)) for every reference pipeline",
         n > 500 && !bad, "%d of %d differ; %s", bad, n, first_bad);
}

static void test_jsonl(void)
{
    char tmpl[] = "/tmp/asn-test-XXXXXX";
    int fd = mkstemp(tmpl);
    FILE *f = fdopen(fd, "w");
    fputs("{\"a\":1}\n\n{\"b\":[1,2]}\n{\"c\": }\n[1]\n", f);
    fclose(f);
    asn_err e;
    asn_jsonl *r = asn_jsonl_open(tmpl, &e);
    json_t *rec;
    int r1 = asn_jsonl_next(r, &rec, &e);
    json_decref(rec);
    int r2 = asn_jsonl_next(r, &rec, &e);
    long l2 = asn_jsonl_lineno(r);
    json_decref(rec);
    int r3 = asn_jsonl_next(r, &rec, &e);
    char want[300];
    snprintf(want, sizeof want, "%s:4:", tmpl);
    T_OK("jsonl: blank line skipped, line numbers kept", r1 == 1 && r2 == 1 && l2 == 3, "%d %d %ld", r1, r2, l2);
    T_OK("jsonl: bad line names file:line", r3 == -1 && !strncmp(e.msg, want, strlen(want)), "got %d \"%s\"", r3, e.msg);
    int r4 = asn_jsonl_next(r, &rec, &e);
    T_OK("jsonl: non-object line is an error", r4 == -1 && strstr(e.msg, ":5: record must be a JSON object"), "got %d \"%s\"", r4, e.msg);
    T_EQ_INT("jsonl: end of input", asn_jsonl_next(r, &rec, &e), 0);
    asn_jsonl_close(r);
    f = fopen(tmpl, "w");
    fputs("\xef\xbb\xbf{\"a\":1}\n", f);
    fclose(f);
    r = asn_jsonl_open(tmpl, &e);
    int rb = asn_jsonl_next(r, &rec, &e);
    T_OK("jsonl: a UTF-8 byte-order mark is skipped", rb == 1, "got %d \"%s\"", rb, e.msg);
    json_decref(rec);
    asn_jsonl_close(r);
    remove(tmpl);
    r = asn_jsonl_open("/", &e);
    int rd = r ? asn_jsonl_next(r, &rec, &e) : -3;
    T_OK("jsonl: a read error stops the stream (-2) and says why", rd == -2 && strstr(e.msg, "read error: Is a directory"),
         "got %d \"%s\"", rd, e.msg);
    asn_jsonl_close(r);
}

static void test_yaml(void)
{
    asn_err e;
    const char *doc = "a: 1\nb: 1.0\nc: 1e-3\nd: '1'\ne: [x, ~, true]\nf: &A {k: 2}\ng: *A\n";
    asn_yaml *y = asn_yaml_parse("t.yaml", doc, strlen(doc), &e);
    T_OK("yaml parses", y != NULL, "%s", e.msg);
    if (!y)
        return;
    json_t *r = asn_yaml_root(y);
    T_OK("yaml: 1 is an integer, 1.0 and 1e-3 reals, '1' a string",
         json_is_integer(json_object_get(r, "a")) && json_is_real(json_object_get(r, "b")) &&
             json_real_value(json_object_get(r, "c")) == 1e-3 && json_is_string(json_object_get(r, "d")),
         "types differ");
    T_OK("yaml: null and booleans", json_is_null(json_array_get(json_object_get(r, "e"), 1)) &&
                                         json_is_true(json_array_get(json_object_get(r, "e"), 2)), "no");
    T_OK("yaml: alias", json_equal(json_object_get(r, "f"), json_object_get(r, "g")), "alias differs");
    char where[128];
    asn_yaml_where(y, json_object_get(r, "e"), where, sizeof where);
    T_EQ_STR("yaml: position of a node", where, "t.yaml:5:4");
    asn_yaml_free(y);

    const char *bad = "a: 1\nb: [1, 2\nc: 3\n";
    y = asn_yaml_parse("bad.yaml", bad, strlen(bad), &e);
    T_OK("yaml: syntax error names file:line:col", !y && !strncmp(e.msg, "bad.yaml:3:", 11), "got \"%s\"", e.msg);
    const char *dup = "a: 1\na: 2\n";
    y = asn_yaml_parse("dup.yaml", dup, strlen(dup), &e);
    T_OK("yaml: duplicate key is an error", !y && strstr(e.msg, "dup.yaml:2:1: duplicate key"), "got \"%s\"", e.msg);
    const char *rec = "a: &x [1, *x]\n";
    y = asn_yaml_parse("rec.yaml", rec, strlen(rec), &e);
    T_OK("yaml: recursive alias is an error", !y && strstr(e.msg, "rec.yaml:1:11: recursive alias"), "got \"%s\"", e.msg);
    const char *big = "p: {top_p: 1e400}\n";
    y = asn_yaml_parse("big.yaml", big, strlen(big), &e);
    T_OK("yaml: overflowing number is named", !y && strstr(e.msg, "big.yaml:1:12: number out of range"), "got \"%s\"", e.msg);
    { /* a fuzzer's input: 7497 "[" overflowed the stack */
        char deep[2 * 300 + 2];
        memset(deep, '[', 300);
        memset(deep + 300, ']', 300);
        deep[600] = '\n';
        deep[601] = 0;
        y = asn_yaml_parse("deep.yaml", deep, 601, &e);
        T_OK("yaml: nesting past 256 levels is an error", !y && strstr(e.msg, "deep.yaml:1:257: collections nested deeper than 256 levels"),
             "got \"%s\"", e.msg);
        y = asn_yaml_parse("deep.yaml", deep + 300 - 256, 2 * 256, &e);
        T_OK("yaml: 256 levels are read", y != NULL, "%s", e.msg);
        asn_yaml_free(y);
    }
    y = asn_yaml_parse("empty.yaml", "", 0, &e);
    T_OK("yaml: empty document is an error", !y && strstr(e.msg, "empty"), "got \"%s\"", e.msg);
}

/* asn_sbuf: appends of every kind, a formatted text longer than the first
 * guess, bytes with a NUL inside, reset and detach. */
static void test_sbuf(void)
{
    asn_sbuf b = ASN_SBUF_INIT;
    T_EQ_STR("sbuf: empty reads as \"\"", asn_sbuf_str(&b), "");
    asn_sbuf_adds(&b, "ab");
    asn_sbuf_addc(&b, 'c');
    asn_sbuf_add(&b, "d\0e", 3);
    T_EQ_INT("sbuf: length counts the NUL inside", b.len, 6);
    T_OK("sbuf: bytes kept", !memcmp(b.buf, "abcd\0e", 7), "got other bytes");
    asn_sbuf_reset(&b);
    T_EQ_STR("sbuf: reset empties", asn_sbuf_str(&b), "");
    asn_sbuf_addf(&b, "%d-%s-%.3f", 42, "x", 0.5);
    T_EQ_STR("sbuf: addf", b.buf, "42-x-0.500");
    asn_sbuf_addf(&b, "|%0100d|", 7);
    T_EQ_INT("sbuf: long addf length", b.len, 10 + 102);
    T_OK("sbuf: long addf text", b.buf[10] == '|' && b.buf[110] == '7' && b.buf[111] == '|' && !b.buf[112],
         "got \"%s\"", b.buf);
    size_t n;
    char *s = asn_sbuf_detach(&b, &n);
    T_OK("sbuf: detach hands the text over", n == 112 && !b.buf && !b.len && s[0] == '4', "len %zu", n);
    free(s);
    s = asn_sbuf_detach(&b, NULL);
    T_EQ_STR("sbuf: detach of nothing gives \"\"", s, "");
    free(s);
    asn_sbuf_release(&b);
}

int main(void)
{
    test_philox();
    test_sha();
    test_numbers();
    test_heuristic_ids();
    test_jsonl();
    test_yaml();
    test_sbuf();
    T_DONE();
}
