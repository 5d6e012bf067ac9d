#!/usr/bin/python3
"""Validate JSONL, JSON and YAML documents against asn's JSON Schemas.

usage: validate_schema.py [-q] [--format jsonl|json|yaml] SCHEMA FILE...
       validate_schema.py --check-schemas [SCHEMA...]

SCHEMA is a schema file, or the name of one in schemas/ ("logits-record"
stands for schemas/logits-record.schema.json). Every *.schema.json in
schemas/ and in SCHEMA's own folder is loaded first, so the $refs between
schemas resolve through their $id; nothing is fetched from the network.

FILE is read by its extension, or as --format says:
  .jsonl       one record a line, blank lines skipped ("-" is JSONL on stdin)
  .json        one JSON document
  .yaml, .yml  the first YAML document, its plain scalars typed the way asn's
               YAML reader types them (1e-5 is a number, yes/no/on/off and
               .inf/.nan are strings, keys are strings, duplicate keys are
               errors)
JSON is read the way asn reads it (jansson): NaN, Infinity, numbers that
overflow a double or a 64-bit integer, and duplicate keys are errors.

Output: "FILE:LINE: /json/pointer: message" (FILE:LINE:COL for YAML) for each
problem, then one line per file: "FILE: ok (N records)" or
"FILE: K of N records invalid". -q prints the problems only.

--check-schemas checks each schema (default: all in schemas/) against the
draft 2020-12 meta-schema, checks that it has a title, a description and an
$id that ends with its file name, and that every $ref in it resolves.

Exit status: 0 when everything is valid, 1 when a document or schema is
invalid or unreadable, 2 on a usage error.
Runs with Debian's python3-jsonschema (4.10, RefResolver) and with newer
releases (4.18+, referencing.Registry).
"""
import glob
import json
import os
import re
import sys
import urllib.parse

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "schemas"))
DRAFT = "https://json-schema.org/draft/2020-12/schema"
Validator = jsonschema.Draft202012Validator
MAX_MSG = 240


class UsageError(Exception):
    pass


class Bad(Exception):
    """A document that cannot be read; str() is the message, .line the line."""

    def __init__(self, msg, line=None, col=None):
        super().__init__(msg)
        self.line, self.col = line, col


# --------------------------------------------------------------- schemas

def load_json_file(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def find_schema(arg):
    if os.path.isfile(arg):
        return arg
    for cand in (os.path.join(SCHEMA_DIR, arg), os.path.join(SCHEMA_DIR, arg + ".schema.json"),
                 os.path.join(SCHEMA_DIR, arg + ".json")):
        if os.path.isfile(cand):
            return cand
    raise UsageError("no schema %r (neither a file nor a name in schemas/)" % arg)


def load_store(extra_dirs=()):
    """{$id: schema} for every *.schema.json in schemas/ and extra_dirs."""
    store = {}
    dirs = [SCHEMA_DIR] + [d for d in extra_dirs if os.path.abspath(d) != SCHEMA_DIR]
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.schema.json"))):
            s = load_json_file(path)
            sid = s.get("$id") if isinstance(s, dict) else None
            if sid:
                store.setdefault(sid, s)
    return store


def _no_fetch(uri):
    raise LookupError("unknown schema %s (only schemas in schemas/ are loaded; nothing is fetched)" % uri)


def make_validator(schema, store):
    """(validator, resolve): a Draft 2020-12 validator whose $refs resolve
    within store, and resolve(base, ref) that returns the schema a $ref
    names or raises."""
    try:  # jsonschema >= 4.18
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
    except ImportError:
        from jsonschema import RefResolver
        handlers = {scheme: _no_fetch for scheme in ("http", "https", "file", "ftp")}
        resolver = RefResolver(base_uri=schema.get("$id", ""), referrer=schema, store=store, handlers=handlers)

        def resolve(base, ref):
            return resolver.resolve(urllib.parse.urljoin(base, ref))[1]

        return Validator(schema, resolver=resolver), resolve

    def retrieve(uri):
        _no_fetch(uri)

    reg = Registry(retrieve=retrieve).with_resources(
        (sid, Resource.from_contents(s, default_specification=DRAFT202012)) for sid, s in store.items())

    def resolve(base, ref):
        return reg.resolver(base_uri=base).lookup(ref).contents

    return Validator(schema, registry=reg), resolve


def walk_refs(node, base, out):
    if isinstance(node, dict):
        base = urllib.parse.urljoin(base, node["$id"]) if isinstance(node.get("$id"), str) else base
        if isinstance(node.get("$ref"), str):
            out.append((base, node["$ref"]))
        for k, v in node.items():
            if k not in ("const", "enum", "default", "examples"):
                walk_refs(v, base, out)
    elif isinstance(node, list):
        for v in node:
            walk_refs(v, base, out)


def shown(path):
    """path relative to the working directory when it is below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def check_schemas(paths):
    if not paths:
        paths = sorted(glob.glob(os.path.join(SCHEMA_DIR, "*.schema.json")))
    if not paths:
        print("no schemas found")
        return 1
    store = load_store({os.path.dirname(os.path.abspath(p)) for p in paths})
    ids = {}
    bad = 0
    for path in paths:
        problems = []
        try:
            s = load_json_file(path)
        except (OSError, ValueError) as e:
            print("%s: %s" % (shown(path), e))
            bad += 1
            continue
        try:
            Validator.check_schema(s)
        except jsonschema.exceptions.SchemaError as e:
            problems.append("not a valid draft 2020-12 schema: %s at %s" % (short(e.message), pointer(e.absolute_path)))
        if not isinstance(s, dict):
            problems.append("not an object")
            s = {}
        if s.get("$schema") != DRAFT:
            problems.append('"$schema" must be "%s"' % DRAFT)
        sid = s.get("$id")
        if not isinstance(sid, str) or not sid.endswith("/" + os.path.basename(path)):
            problems.append('"$id" must be a URI ending in "/%s"' % os.path.basename(path))
        elif sid in ids:
            problems.append('"$id" %s is also the $id of %s' % (sid, ids[sid]))
        else:
            ids[sid] = path
        for key in ("title", "description"):
            if not isinstance(s.get(key), str) or not s.get(key).strip():
                problems.append('"%s" is missing' % key)
        if not problems:
            resolve = make_validator(s, store)[1]
            refs = []
            walk_refs(s, sid, refs)
            for base, ref in refs:
                try:
                    resolve(base, ref)
                except Exception as e:  # any resolution failure is reported
                    problems.append("$ref %s does not resolve: %s" % (ref, short(str(e))))
        for p in problems:
            print("%s: %s" % (shown(path), p))
        if problems:
            bad += 1
        else:
            print("%s: ok" % shown(path))
    return 1 if bad else 0


# ------------------------------------------------------------ documents

def _reject_constant(name):
    raise ValueError("%s is not valid JSON" % name)


def _parse_float(s):
    x = float(s)
    if x in (float("inf"), float("-inf")):
        raise ValueError("real number overflow near '%s'" % s)
    return x


def _parse_int(s):
    x = int(s)
    if not -2**63 <= x < 2**63:
        raise ValueError("too big integer near '%s'" % s)
    return x


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate object key \"%s\"" % k)
        d[k] = v
    return d


def parse_json(text):
    return json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float,
                      parse_int=_parse_int, object_pairs_hook=_no_duplicates)


_INT = re.compile(r"[-+]?[0-9]+\Z")
_HEX = re.compile(r"0x[0-9a-fA-F]+\Z")
_OCT = re.compile(r"0o[0-7]+\Z")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_LLONG_MAX = 2**63 - 1


def yaml_plain(s):
    """A plain YAML scalar typed as asn's YAML reader types it."""
    if s in ("", "~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if _INT.match(s) and -2**63 <= int(s) <= _LLONG_MAX:
        return int(s)
    if _HEX.match(s):
        return min(int(s[2:], 16), _LLONG_MAX)
    if _OCT.match(s):
        return min(int(s[2:], 8), _LLONG_MAX)
    if _FLOAT.match(s):
        x = float(s)
        if x in (float("inf"), float("-inf")):
            raise ValueError("number out of range")
        return x
    return s


def yaml_value(node, busy=None):
    busy = set() if busy is None else busy
    mark = node.start_mark
    if isinstance(node, yaml.ScalarNode):
        if node.style is not None:
            return node.value
        try:
            return yaml_plain(node.value)
        except ValueError as e:
            raise Bad("%s: %s" % (e, node.value), mark.line + 1, mark.column + 1)
    if id(node) in busy:
        raise Bad("recursive alias", mark.line + 1, mark.column + 1)
    busy.add(id(node))
    try:
        if isinstance(node, yaml.SequenceNode):
            return [yaml_value(x, busy) for x in node.value]
        d = {}
        for k, v in node.value:
            km = k.start_mark
            if not isinstance(k, yaml.ScalarNode):
                raise Bad("mapping keys must be scalars", km.line + 1, km.column + 1)
            if k.value in d:
                raise Bad('duplicate key "%s"' % k.value, km.line + 1, km.column + 1)
            d[k.value] = yaml_value(v, busy)
        return d
    finally:
        busy.discard(id(node))


def parse_yaml(text):
    """(value, root node) of the first document."""
    loader = yaml.SafeLoader(text)
    try:
        if not loader.check_node():
            raise Bad("empty YAML document", 1, 1)
        node = loader.get_node()
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark or e.context_mark
        msg = " ".join(x for x in (e.context, e.problem) if x) or "YAML syntax error"
        raise Bad(msg, m.line + 1 if m else None, m.column + 1 if m else None)
    except yaml.YAMLError as e:
        raise Bad(str(e))
    finally:
        loader.dispose()
    if node is None:
        raise Bad("empty YAML document", 1, 1)
    return yaml_value(node), node


def node_at(node, path):
    """The YAML node at a JSON path (or the deepest one found)."""
    for p in path:
        if isinstance(node, yaml.MappingNode):
            nxt = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == p]
            if not nxt:
                break
            node = nxt[-1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(p, int) and p < len(node.value):
            node = node.value[p]
        else:
            break
    return node


# --------------------------------------------------------------- output

def short(msg):
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= MAX_MSG else msg[:MAX_MSG - 3] + "..."


def pointer(path):
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def describe(err):
    msg = short(err.message)
    if err.context:  # anyOf / oneOf: say what the closest branch wanted
        # a branch of the instance's own type failed on something else
        near = [e for e in err.context if e.validator != "type"] or list(err.context)
        best = jsonschema.exceptions.best_match(near)
        if best is not None:
            msg += " (%s at %s)" % (short(best.message), pointer(best.absolute_path))
    return msg


def errors_of(validator, doc):
    errs = list(validator.iter_errors(doc))
    errs.sort(key=lambda e: ([str(p) for p in e.absolute_path], e.message))
    return errs


def fmt_where(name, line=None, col=None):
    if line is None:
        return name
    if col is None:
        return "%s:%d" % (name, line)
    return "%s:%d:%d" % (name, line, col)


def check_file(validator, path, fmt, quiet):
    """Returns (records, invalid)."""
    name = "<stdin>" if path == "-" else path
    if fmt is None:
        ext = os.path.splitext(path)[1].lower()
        fmt = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".yaml": "yaml",
               ".yml": "yaml"}.get(ext, "jsonl" if path == "-" else None)
        if fmt is None:
            print("%s: unknown file type (use --format jsonl|json|yaml)" % name)
            return 0, 1
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        print("%s: %s" % (name, e))
        return 0, 1

    n = bad = 0
    if fmt == "jsonl":
        for lineno, line in enumerate(text.split("\n"), 1):
            if not line.strip(" \t\r"):
                continue
            n += 1
            try:
                doc = parse_json(line)
            except ValueError as e:
                print("%s: invalid JSON: %s" % (fmt_where(name, lineno), short(e)))
                bad += 1
                continue
            errs = errors_of(validator, doc)
            for e in errs:
                print("%s: %s: %s" % (fmt_where(name, lineno), pointer(e.absolute_path), describe(e)))
            bad += bool(errs)
    else:
        n = 1
        try:
            if fmt == "json":
                doc, root = parse_json(text), None
                try:  # JSON is YAML: borrow its positions for the messages
                    root = parse_yaml(text)[1]
                except Exception:
                    root = None
            else:
                doc, root = parse_yaml(text)
        except Bad as e:
            print("%s: %s" % (fmt_where(name, e.line, e.col), short(e)))
            return 1, 1
        except ValueError as e:
            print("%s: invalid JSON: %s" % (name, short(e)))
            return 1, 1
        errs = errors_of(validator, doc)
        for e in errs:
            where = name
            if root is not None:
                m = node_at(root, e.absolute_path).start_mark
                where = fmt_where(name, m.line + 1, None if fmt == "json" else m.column + 1)
            print("%s: %s: %s" % (where, pointer(e.absolute_path), describe(e)))
        bad = int(bool(errs))
    if not quiet:
        unit = "record" if fmt == "jsonl" else "document"
        if bad:
            print("%s: %d of %d %s%s invalid" % (name, bad, n, unit, "s" if n != 1 else ""))
        else:
            print("%s: ok (%d %s%s)" % (name, n, unit, "s" if n != 1 else ""))
    return n, bad


# ----------------------------------------------------------------- main

def usage(msg=None):
    if msg:
        sys.stderr.write("validate_schema.py: %s\n" % msg)
    sys.stderr.write("usage: validate_schema.py [-q] [--format jsonl|json|yaml] SCHEMA FILE...\n"
                     "       validate_schema.py --check-schemas [SCHEMA...]\n")
    return 2


def main(argv):
    quiet, fmt, check, args = False, None, False, []
    it = iter(argv)
    for a in it:
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            return 0
        elif a in ("-q", "--quiet"):
            quiet = True
        elif a == "--check-schemas":
            check = True
        elif a == "--format" or a.startswith("--format="):
            fmt = a.split("=", 1)[1] if "=" in a else next(it, None)
            if fmt not in ("jsonl", "json", "yaml"):
                return usage("--format must be jsonl, json or yaml")
        elif a == "--":
            args.extend(it)
        elif a.startswith("-") and a != "-":
            return usage("unknown option %s" % a)
        else:
            args.append(a)
    try:
        if check:
            return check_schemas([find_schema(a) for a in args])
        if len(args) < 2:
            return usage("need a schema and at least one file")
        spath = find_schema(args[0])
    except UsageError as e:
        return usage(str(e))
    try:
        schema = load_json_file(spath)
        Validator.check_schema(schema)
        store = load_store([os.path.dirname(os.path.abspath(spath))])
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print("%s: bad schema: %s" % (spath, short(getattr(e, "message", e))))
        return 1
    validator = make_validator(schema, store)[0]
    bad = 0
    for path in args[1:]:
        try:
            bad += check_file(validator, path, fmt, quiet)[1]
        except Exception as e:  # a $ref that does not resolve, mostly
            if isinstance(e, (KeyboardInterrupt, MemoryError)):
                raise
            print("%s: cannot validate against %s: %s: %s" % (path, spath, type(e).__name__, short(e)))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
