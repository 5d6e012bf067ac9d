/* asn/yaml.h — YAML configuration files (libyaml) loaded as JSON values,
 * remembering where each value came from so that errors found later (a bad
 * parameter, say) can still name the file, line and column. */
#ifndef ASN_YAML_H
#define ASN_YAML_H

#include <jansson.h>

#include "asn/core.h"

typedef struct asn_yaml asn_yaml;

/* Loads the first document of a YAML file. Plain scalars resolve as in the
 * YAML 1.2 core schema: null/~/empty → null, true/false → boolean, decimal
 * (and 0x/0o) integers → integer, floats (1.5, 1e-3, .inf, .nan) → real,
 * anything else → string; quoted scalars are always strings. Anchors and
 * aliases are supported. Errors read "PATH:LINE:COL: what". */
asn_yaml *asn_yaml_load(const char *path, asn_err *e);
/* The same from a string in memory; `name` stands for the path in errors. */
asn_yaml *asn_yaml_parse(const char *name, const char *text, size_t len, asn_err *e);
void asn_yaml_free(asn_yaml *y);

/* The document root (borrowed; lives as long as y). */
json_t *asn_yaml_root(const asn_yaml *y);
const char *asn_yaml_path(const asn_yaml *y);
/* "PATH:LINE:COL" of the node that produced v (a value inside the root), or
 * "PATH" if v is unknown. Returns buf. */
const char *asn_yaml_where(const asn_yaml *y, const json_t *v, char *buf, size_t n);

#endif
