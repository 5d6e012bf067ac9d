#!/usr/bin/python3
"""schema_check.py — helpers of the JSON Schema tests (tests/cli/schema_*.sh):
    unique IN OUT   one record {"json_schema": ...} per distinct schema of
                    the records of IN (first appearance order), into OUT
    drawn OUT MIN   every text of constrain --sample's OUT that ended (finish
                    "eos") validates under Python's jsonschema (draft 2020-12,
                    formats checked); at least MIN of them"""
import json
import sys


def unique(src, dst):
    seen = set()
    with open(dst, "w") as f:
        for line in open(src):
            r = json.loads(line)
            k = json.dumps(r["json_schema"], sort_keys=True)
            if k not in seen:
                seen.add(k)
                f.write(json.dumps({"json_schema": r["json_schema"]}) + "\n")


def drawn(out, least):
    import jsonschema
    fc = jsonschema.FormatChecker()
    n = 0
    for line in open(out):
        r = json.loads(line)
        for smp in r["samples"]:
            if smp["finish"] != "eos":
                continue
            v = json.loads(smp["text"])
            assert jsonschema.Draft202012Validator(r["json_schema"], format_checker=fc).is_valid(v), (r["json_schema"], v)
            n += 1
    assert n >= least, n


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "unique":
        unique(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "drawn":
        drawn(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
