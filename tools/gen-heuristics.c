/* gen-heuristics — expand a grid of sampling settings (temperatures, a model
 * family's official defaults, swept truncation processors) into a heuristics
 * YAML file in the reference format, as the reference project's
 * generate_heuristics_config does, and write a pipeline per trained sampler
 * file of a directory, as its generate_sampler_config does. Every processor
 * is checked with the library's own rules, so the output always loads with
 * asn_heuristics_load. */
#include "asn/json.h"
#include "asn/sampling.h"
#include "asn/tool.h"
#include "asn/yaml.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Most temperatures a rule may give: far above any useful grid, low enough
 * that a typo in "from"/"to" cannot ask for millions of pipelines. */
#define MAX_TEMPERATURES 1000

/* The command line, as asn_tool_parse fills it. */
typedef struct gen_heuristics_options {
    const char *grid;
    const char *family;
    const char *append;
    const char *samplers;
    const char *output;
} gen_heuristics_options;

/* The options, with their defaults (the table below points into it). */
static gen_heuristics_options opts = {
    .output = "-",
};

static const asn_option options[] = {
    {"grid", 0, ASN_OPT_STRING, &opts.grid, "FILE", "grid YAML to expand (required but with --samplers alone; the shipped one is configs/heuristics/grid.yaml)"},
    {"family", 0, ASN_OPT_STRING, &opts.family, "NAME", "model family of the \"official\" rows: llama, gemma, qwen, none, or any family the grid defines (required with --grid)"},
    {"append", 0, ASN_OPT_STRING, &opts.append, "FILE", "heuristics YAML whose pipelines are appended; names already present are skipped with a warning"},
    {"samplers", 0, ASN_OPT_STRING, &opts.samplers, "DIR", "add a learned pipeline per sampler file (*.gguf) of DIR, after the grid's; alone, without --grid and --family"},
    {"output", 'o', ASN_OPT_STRING, &opts.output, "FILE", "heuristics YAML to write, - for stdout"},
    {0},
};

static const asn_tool tool = {
    "gen-heuristics", "--grid FILE --family NAME [OPTIONS] | --samplers DIR [OPTIONS]",
    "Expand a grid of sampling settings into a heuristics YAML file.",
    "The grid is a YAML mapping with three fields:\n"
    "  temperatures  a list of values, or the rule {base, from, to, scale}:\n"
    "                round(base^x * scale) / scale for each integer x in from..to\n"
    "                (halves round to even, as Python's round)\n"
    "  families      family name -> its official defaults: a list of processors\n"
    "                [{name, params}] as in heuristics files; [] = no official row\n"
    "  sweeps        a list of {processor, param, values, label, format}: the\n"
    "                processor name, the parameter the values go to, the values\n"
    "                (numbers; integers stay integers), the first word of the\n"
    "                names (default: the processor) and a printf format for the\n"
    "                value in names (%.Ne, %.Nf or %.Ng; default: as Python\n"
    "                prints the number); besides, {row: temp} and {row:\n"
    "                official} place those rows (else they come first)\n"
    "and two optional ones:\n"
    "  separator     between the words of the names (default: a space; \"_\"\n"
    "                gives the research pipeline's current names, temp_0.3)\n"
    "  weight        every row's weight, written as given (default: 1)\n"
    "  a sweep's or row's temperatures (list or rule): it applies only at\n"
    "                those (the filtered grid's per-family temperature lists)\n"
    "\nFor each temperature T, in order: \"temp T\" (temperature alone), \"official\n"
    "temp T\" (temperature, then the family's processors), then for each sweep and\n"
    "value V: \"LABEL V temp T\" (temperature, then that processor). Weights are 1.\n"
    "The shipped grids: grid.yaml (the research pipeline's generated configs,\n"
    "names with spaces), reference-full-grid.yaml and reference-filtered-grid.yaml (its\n"
    "current generate_heuristics_config and _filtered scripts, names with\n"
    "underscores).\n"
    "\n--samplers DIR, as the research pipeline's generate_sampler_config: for\n"
    "each file NAME.gguf of DIR, in name order, the pipeline \"learned_NAME\"\n"
    "(weight 1.0): [{name: learned, params: {path: DIR/NAME.gguf}}], the path\n"
    "as DIR is given (relative to the working directory, as gen-candidates\n"
    "reads it). Each file is loaded as the learned processor loads it; one that\n"
    "is not an asn sampler file (train-sampler's -o or a checkpoint, or\n"
    "scripts/convert-torch-sampler.py's output) is skipped with a warning\n"
    "saying why. None at all is an error. Its pipelines follow the grid's.\n"
    "Pipelines of --append follow, processors as written (whole weights are\n"
    "written as integers).\n"
    "\nOutput: `sampling_pipelines: [{name, weight, processors: [{name, params}]}]`,\n"
    "block style, numbers as Python prints them (temp 1.0, never temp 1), after a\n"
    "comment naming the command. Example, the reference's qwen-family set:\n"
    "  gen-heuristics --grid configs/heuristics/grid.yaml --family qwen -o qwen.yaml\n"
    "and the trained samplers of samplers/, to compare with the grid's:\n"
    "  gen-heuristics --samplers samplers --append qwen.yaml -o eval.yaml\n",
    options,
};

static asn_yaml *grid;

/* Ends with "GRID:LINE:COL: message", the position of the node `at`. */
static void __attribute__((noreturn, format(printf, 2, 3))) bad(const json_t *at, const char *fmt, ...)
{
    char where[600], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    asn_fatal("%s: %s", asn_yaml_where(grid, at, where, sizeof where), msg);
}

/* ---------------------------------------------------------- grid checks */

static const json_t *field(const json_t *obj, const char *key, const char *what)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        bad(obj, "%s: field \"%s\" is missing", what, key);
    return v;
}

/* Unknown fields are errors, so a misspelt one is not silently ignored. */
static void only_fields(const json_t *obj, const char *const *known, const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        const char *const *p = known;
        while (*p && strcmp(*p, k))
            p++;
        if (!*p)
            bad(v, "%s: unknown field \"%s\"", what, k);
    }
}

static const json_t *nonempty_list(const json_t *v, const char *what)
{
    if (!json_is_array(v))
        bad(v, "%s must be a list, not %s", what, asn_json_type_name(v));
    if (!json_array_size(v))
        bad(v, "%s is empty", what);
    return v;
}

static double number(const json_t *v, const char *what)
{
    double d;
    if (asn_json_number(v, &d) || !isfinite(d))
        bad(v, "%s must be a number, not %s", what, asn_json_type_name(v));
    return d;
}

static const char *string(const json_t *v, const char *what)
{
    if (!json_is_string(v))
        bad(v, "%s must be a string, not %s", what, asn_json_type_name(v));
    return json_string_value(v);
}

/* Checks a processor list with the library's own rules. */
static void check_procs(const json_t *procs, const json_t *at, const char *what)
{
    asn_heuristic h;
    asn_err e;
    if (asn_heuristic_init(&h, "", procs, &e))
        bad(at, "%s: %s", what, e.msg);
    asn_heuristic_clear(&h);
}

static json_t *temperature_proc(double t)
{
    return json_pack("{s:s,s:{s:f}}", "name", "temperature", "params", "temperature", t);
}

/* The grid's temperatures as a new array of reals, each checked. */
static json_t *temperatures(const json_t *t)
{
    json_t *out = json_array();
    if (json_is_array(t)) {
        size_t i;
        json_t *x;
        json_array_foreach(nonempty_list(t, "\"temperatures\""), i, x)
            json_array_append_new(out, json_real(number(x, "a temperature")));
    } else if (json_is_object(t)) {
        static const char *const known[] = {"base", "from", "to", "scale", NULL};
        only_fields(t, known, "\"temperatures\"");
        double base = number(field(t, "base", "\"temperatures\""), "\"base\"");
        double scale = number(field(t, "scale", "\"temperatures\""), "\"scale\"");
        const json_t *jfrom = field(t, "from", "\"temperatures\""), *jto = field(t, "to", "\"temperatures\"");
        if (!json_is_integer(jfrom) || !json_is_integer(jto))
            bad(json_is_integer(jfrom) ? jto : jfrom, "\"from\" and \"to\" must be integers");
        json_int_t from = json_integer_value(jfrom), to = json_integer_value(jto);
        if (to < from || to - from >= MAX_TEMPERATURES)
            bad(jto, "\"to\" must be at least \"from\" and give at most %d temperatures", MAX_TEMPERATURES);
        if (base <= 0 || scale <= 0)
            bad(t, "\"base\" and \"scale\" must be > 0");
        for (json_int_t x = from; x <= to; x++) /* nearbyint: half to even, as Python's round */
            json_array_append_new(out, json_real(nearbyint(pow(base, (double)x) * scale) / scale));
    } else {
        bad(t, "\"temperatures\" must be a list of values or a rule {base, from, to, scale}");
    }
    size_t i;
    json_t *x;
    json_array_foreach(out, i, x)
    {
        char what[64];
        snprintf(what, sizeof what, "temperature %g", json_real_value(x));
        json_t *procs = json_pack("[o]", temperature_proc(json_real_value(x)));
        check_procs(procs, json_is_array(t) ? json_array_get(t, i) : t, what);
        json_decref(procs);
    }
    return out;
}

static void check_families(const json_t *fams)
{
    if (!json_is_object(fams) || !json_object_size(fams))
        bad(fams, "\"families\" must be a non-empty mapping: family -> [{name, params}]");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)fams, k, v)
    {
        char what[300];
        snprintf(what, sizeof what, "family \"%s\"", k);
        if (!json_is_array(v))
            bad(v, "%s must be a list of processors ([] for no official row), not %s", what, asn_json_type_name(v));
        check_procs(v, v, what);
    }
}

/* A format is "%.<digits>" and one of e, f, g: it takes one double. */
static int valid_format(const char *s)
{
    char *end;
    if (strncmp(s, "%.", 2) || !isdigit((unsigned char)s[2]) || strtol(s + 2, &end, 10) > 17)
        return 0;
    return *end && strchr("efg", *end) && !end[1];
}

static json_t *sweep_proc(const json_t *sw, const json_t *value)
{
    return json_pack("{s:O,s:{s:O}}", "name", json_object_get(sw, "processor"), "params",
                     json_string_value(json_object_get(sw, "param")), value);
}

/* Per sweep (or row): its own temperatures (the grid's when absent), as
 * new arrays in sweep order. */
static json_t *sweep_temps;

static void check_sweeps(const json_t *sweeps, const json_t *grid_temps)
{
    static const char *const known[] = {"processor", "param", "values", "label", "format", "temperatures", NULL};
    static const char *const known_row[] = {"row", "temperatures", NULL};
    size_t i, j;
    json_t *sw, *v;
    sweep_temps = json_array();
    json_array_foreach(nonempty_list(sweeps, "\"sweeps\""), i, sw)
    {
        if (!json_is_object(sw))
            bad(sw, "sweep %zu must be a mapping {processor, param, values, label, format, temperatures} or "
                    "{row, temperatures}", i + 1);
        char what[300];
        snprintf(what, sizeof what, "sweep %zu", i + 1);
        const json_t *st = json_object_get(sw, "temperatures");
        json_array_append_new(sweep_temps, st ? temperatures(st) : json_deep_copy(grid_temps));
        if (json_object_get(sw, "row")) {
            only_fields(sw, known_row, what);
            const char *r = string(json_object_get(sw, "row"), "\"row\"");
            if (strcmp(r, "temp") && strcmp(r, "official"))
                bad(json_object_get(sw, "row"), "%s: \"row\" must be temp or official", what);
            continue;
        }
        only_fields(sw, known, what);
        snprintf(what, sizeof what, "sweep \"%s\"", string(field(sw, "processor", what), "\"processor\""));
        string(field(sw, "param", what), "\"param\"");
        if (json_object_get(sw, "label"))
            string(json_object_get(sw, "label"), "\"label\"");
        const json_t *fmt = json_object_get(sw, "format");
        if (fmt && !valid_format(string(fmt, "\"format\"")))
            bad(fmt, "%s: \"format\" must be %%.N followed by e, f or g (like \"%%.1e\")", what);
        json_array_foreach(nonempty_list(field(sw, "values", what), "\"values\""), j, v)
        {
            number(v, "a value");
            json_t *procs = json_pack("[o]", sweep_proc(sw, v));
            check_procs(procs, v, what);
            json_decref(procs);
        }
    }
}

/* ------------------------------------------------------------ expansion */

/* The pipelines so far, and their names as a set. */
typedef struct outlist {
    json_t *pipelines, *names;
} outlist;

/* Adds a pipeline, stealing name, procs and weight. */
static void add(outlist *o, json_t *name, json_t *procs, json_t *weight)
{
    if (json_object_get(o->names, json_string_value(name)))
        asn_fatal("%s: the grid gives two pipelines named \"%s\" (a repeated value?)", opts.grid,
                  json_string_value(name));
    json_object_set(o->names, json_string_value(name), json_true());
    json_array_append_new(o->pipelines, json_pack("{s:o,s:o,s:o}", "name", name, "weight", weight,
                                                  "processors", procs));
}

/* A value as the names show it: the sweep's format, else as Python prints it. */
static void value_text(char *buf, size_t n, const json_t *v, const json_t *fmt)
{
    if (fmt)
        snprintf(buf, n, json_string_value(fmt), json_number_value(v));
    else if (json_is_integer(v))
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        asn_fmt_double(buf, json_real_value(v));
}

static const char *separator = " "; /* between the words of a name */
static json_t *row_weight;            /* every row's weight (1, or the grid's "weight") */

static int has_temp(const json_t *list, double t)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) if (json_real_value(x) == t) return 1;
    return 0;
}

/* The rows at temperature t (ts as the names show it) of sweep j. */
static void expand_sweep(outlist *o, const json_t *sw, double t, const char *ts, const json_t *official)
{
    const char *sp = separator;
    const json_t *row = json_object_get(sw, "row");
    if (row && !strcmp(json_string_value(row), "temp")) {
        add(o, json_sprintf("temp%s%s", sp, ts), json_pack("[o]", temperature_proc(t)), json_incref(row_weight));
        return;
    }
    if (row) { /* official */
        if (json_array_size(official)) {
            json_t *procs = json_pack("[o]", temperature_proc(t));
            json_array_extend(procs, (json_t *)official);
            add(o, json_sprintf("official%stemp%s%s", sp, sp, ts), procs, json_incref(row_weight));
        }
        return;
    }
    const json_t *label = json_object_get(sw, "label");
    size_t k;
    json_t *v;
    char vs[512];
    json_array_foreach(json_object_get(sw, "values"), k, v)
    {
        value_text(vs, sizeof vs, v, json_object_get(sw, "format"));
        add(o, json_sprintf("%s%s%s%stemp%s%s", json_string_value(label ? label : json_object_get(sw, "processor")), sp,
                            vs, sp, sp, ts),
            json_pack("[o,o]", temperature_proc(t), sweep_proc(sw, v)), json_incref(row_weight));
    }
}

static void expand(outlist *o, const json_t *temps, const json_t *official, const json_t *sweeps)
{
    size_t i, j;
    json_t *t, *sw;
    int rows = 0; /* the grid places the temp / official rows itself */
    json_array_foreach(sweeps, j, sw) rows |= json_object_get(sw, "row") != NULL;
    json_t *temp_row = json_pack("{s:s}", "row", "temp"), *off_row = json_pack("{s:s}", "row", "official");
    json_array_foreach(temps, i, t)
    {
        char ts[32];
        double tv = json_real_value(t);
        asn_fmt_double(ts, tv);
        if (!rows) {
            expand_sweep(o, temp_row, tv, ts, official);
            expand_sweep(o, off_row, tv, ts, official);
        }
        json_array_foreach(sweeps, j, sw) if (has_temp(json_array_get(sweep_temps, j), tv))
            expand_sweep(o, sw, tv, ts, official);
    }
    json_decref(temp_row), json_decref(off_row);
}

/* Appends the pipelines of a heuristics file whose names are new. */
static void append_file(outlist *o, const char *path)
{
    asn_err e;
    asn_heuristics *hs = asn_heuristics_load(path, &e);
    if (!hs)
        asn_fatal("%s", e.msg);
    for (int i = 0; i < hs->n; i++) {
        const asn_heuristic *h = &hs->h[i];
        if (json_object_get(o->names, h->name)) {
            asn_warn("%s: skipping pipeline \"%s\": the name is already present", path, h->name);
            continue;
        }
        /* weights are read as doubles; whole ones are written as the reference writes 1 */
        json_t *w = h->weight == nearbyint(h->weight) && fabs(h->weight) < 1e15
                        ? json_integer((json_int_t)h->weight)
                        : json_real(h->weight);
        add(o, json_string(h->name), json_deep_copy(h->processors), w);
    }
    asn_heuristics_free(hs);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A learned pipeline per sampler file (*.gguf) of dir, in name order; the
 * files that do not load as the learned processor's are skipped with a
 * warning. Returns how many were added. */
static int add_samplers(outlist *o, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        asn_fatal("%s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len <= 5 || strcmp(de->d_name + len - 5, ".gguf") || de->d_name[0] == '.')
            continue;
        if (n == cap)
            names = asn_xrealloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
        names[n++] = asn_xstrdup(de->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    size_t dl = strlen(dir);
    int added = 0;
    for (size_t i = 0; i < n; i++) {
        char *path = asn_xmalloc(dl + strlen(names[i]) + 2);
        sprintf(path, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", names[i]);
        json_t *procs = json_pack("[{s:s,s:{s:s}}]", "name", "learned", "params", "path", path);
        asn_heuristic h;
        asn_err e;
        char *name = asn_xmalloc(strlen(names[i]) + 9);
        sprintf(name, "learned_%.*s", (int)(strlen(names[i]) - 5), names[i]);
        if (asn_heuristic_init(&h, name, procs, &e)) {
            asn_warn("%s: skipped: %s", path, e.msg);
            json_decref(procs);
        } else {
            asn_heuristic_clear(&h);
            if (json_object_get(o->names, name))
                asn_fatal("%s: the pipeline name \"%s\" is the grid's already", path, name);
            add(o, json_string(name), procs, json_real(1.0));
            added++;
        }
        free(name), free(path), free(names[i]);
    }
    free(names);
    return added;
}

/* ----------------------------------------------------------- YAML output */

/* Whether a string may go unquoted: YAML 1.1 and 1.2 readers (PyYAML,
 * libyaml) read it back as this same string. */
static int plain_ok(const char *s)
{
    static const char *const words[] = {"null", "true", "false", "yes", "no", "on", "off", "y", "n", NULL};
    if (!isalpha((unsigned char)s[0]) || s[strlen(s) - 1] == ' ')
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(" _.+-", *p))
            return 0;
    for (const char *const *w = words; *w; w++)
        if (!strcasecmp(s, *w))
            return 0;
    return 1;
}

static void put_string(FILE *f, const char *s)
{
    if (plain_ok(s)) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    fputc('"', f);
}

/* Scalars as PyYAML writes them; lists and mappings in flow style. */
static void put_value(FILE *f, const json_t *v)
{
    char num[40];
    size_t i = 0;
    const char *k;
    json_t *x;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        fputc('{', f);
        json_object_foreach((json_t *)v, k, x)
        {
            fputs(i++ ? ", " : "", f);
            put_string(f, k);
            fputs(": ", f);
            put_value(f, x);
        }
        fputc('}', f);
        break;
    case JSON_ARRAY:
        fputc('[', f);
        json_array_foreach(v, i, x)
        {
            fputs(i ? ", " : "", f);
            put_value(f, x);
        }
        fputc(']', f);
        break;
    case JSON_STRING: put_string(f, json_string_value(v)); break;
    case JSON_INTEGER: fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: {
        asn_fmt_double(num, json_real_value(v));
        /* YAML 1.1 (PyYAML) reads 1e-05 as a string; 1.0e-05 is a float to every reader */
        char *e = strchr(num, 'e');
        if (e && !strchr(num, '.'))
            fprintf(f, "%.*s.0%s", (int)(e - num), num, e);
        else
            fputs(num, f);
        break;
    }
    case JSON_TRUE: fputs("true", f); break;
    case JSON_FALSE: fputs("false", f); break;
    case JSON_NULL: fputs("null", f); break;
    }
}

static void put_pipeline(FILE *f, const json_t *pl)
{
    size_t i;
    const char *k;
    json_t *proc, *x;
    fputs("- name: ", f);
    put_string(f, json_string_value(json_object_get(pl, "name")));
    fputs("\n  weight: ", f);
    put_value(f, json_object_get(pl, "weight"));
    const json_t *procs = json_object_get(pl, "processors");
    fputs(json_array_size(procs) ? "\n  processors:\n" : "\n  processors: []\n", f);
    json_array_foreach(procs, i, proc)
    {
        const json_t *params = json_object_get(proc, "params");
        fputs("  - name: ", f);
        put_string(f, json_string_value(json_object_get(proc, "name")));
        fputs(json_object_size(params) ? "\n    params:\n" : "\n    params: {}\n", f);
        json_object_foreach((json_t *)params, k, x)
        {
            fputs("      ", f);
            put_string(f, k);
            fputs(": ", f);
            put_value(f, x);
            fputc('\n', f);
        }
    }
}

/* --samplers and --append added, and the file written. */
static void write_out(outlist *o)
{
    if (opts.samplers && !add_samplers(o, opts.samplers))
        asn_fatal("%s: no asn sampler file (*.gguf) in it", opts.samplers);
    if (opts.append)
        append_file(o, opts.append);
    FILE *f = asn_open_out(opts.output);
    fputs("# Generated by: gen-heuristics", f);
    if (opts.grid)
        fprintf(f, " --grid %s --family %s", opts.grid, opts.family);
    if (opts.samplers)
        fprintf(f, " --samplers %s", opts.samplers);
    if (opts.append)
        fprintf(f, " --append %s", opts.append);
    fputs(opts.grid ? "\n# Change the grid and regenerate rather than editing this file.\nsampling_pipelines:\n"
                    : "\n# Regenerate rather than editing this file.\nsampling_pipelines:\n",
          f);
    size_t i;
    json_t *pl;
    json_array_foreach(o->pipelines, i, pl)
        put_pipeline(f, pl);
    asn_close_out(f, opts.output);
    json_decref(o->pipelines);
    json_decref(o->names);
}

static int samplers_only(void)
{
    outlist o = {json_array(), json_object()};
    write_out(&o);
    return 0;
}

int main(int argc, char **argv)
{
    if (asn_tool_parse(&tool, argc, argv))
        asn_usage_error("unexpected argument '%s'", argv[1]);
    if (!opts.grid && !opts.family && opts.samplers)
        return samplers_only();
    if (!opts.grid || !opts.family)
        asn_usage_error("--grid and --family are required (or --samplers alone)");
    asn_err e;
    if (!(grid = asn_yaml_load(opts.grid, &e)))
        asn_fatal("%s", e.msg);
    const json_t *root = asn_yaml_root(grid);
    static const char *const known[] = {"temperatures", "families", "sweeps", "separator", "weight", NULL};
    if (!json_is_object(root))
        bad(root, "the grid must be a mapping {temperatures, families, sweeps}");
    only_fields(root, known, "the grid");
    json_t *temps = temperatures(field(root, "temperatures", "the grid"));
    const json_t *fams = field(root, "families", "the grid"), *sweeps = field(root, "sweeps", "the grid");
    check_families(fams);
    row_weight = json_integer(1);
    if (json_object_get(root, "weight")) {
        const json_t *w = json_object_get(root, "weight");
        if (number(w, "\"weight\"") < 0)
            bad(w, "\"weight\" must be >= 0");
        json_decref(row_weight);
        row_weight = json_deep_copy(w); /* 1 or 1.0, written as given */
    }
    if (json_object_get(root, "separator"))
        separator = string(json_object_get(root, "separator"), "\"separator\"");
    check_sweeps(sweeps, temps);
    const json_t *official = json_object_get(fams, opts.family);
    if (!official) {
        char list[1024] = "";
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)fams, k, v)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", *list ? ", " : "", k);
        asn_usage_error("unknown family \"%s\"; %s defines: %s", opts.family, opts.grid, list);
    }

    outlist o = {json_array(), json_object()};
    expand(&o, temps, official, sweeps);
    write_out(&o);
    json_decref(temps);
    asn_yaml_free(grid);
    return 0;
}
