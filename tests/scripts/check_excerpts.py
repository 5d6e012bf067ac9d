#!/usr/bin/env python3
"""Runs the commands of a Markdown walk-through and checks that each prints
what the text shows.

    check_excerpts.py README WORKDIR [--from HEADING] [--until HEADING]

A command is an indented line "    $ CMD" (with the lines that follow it until
bash finds the command complete); what it prints (stdout and stderr
together) is the indented lines after it, up to the next command or the end
of the block. The shown output may be trimmed: "..." stands for any text
(also within a line), and a long line may be wrapped (a line break in the
text matches any whitespace, or none). Everything else must be there as
shown, digits included. Commands run in WORKDIR with bash, in order; the
sections run are those from the heading --from (default: the first) up to
--until (not included). Prints one TAP line per command ("ok - FILE:LINE:
CMD" or "not ok - ...: what it printed").
"""
import re
import subprocess
import sys


def commands(path, start, stop):
    lines = open(path, encoding="utf-8").read().split("\n")
    on = start is None
    out = []  # (line number, command, expected output lines)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            if start is not None and line.startswith(start):
                on = True
            if stop is not None and line.startswith(stop):
                on = False
        if on and line.startswith("    $ "):
            first = i + 1
            cmd = line[6:]
            while cmd.endswith("\\") or subprocess.run(["bash", "-n", "-c", cmd], capture_output=True).returncode:
                i += 1
                cmd += "\n" + lines[i][4:]
            i += 1
            want = []
            while i < len(lines) and lines[i].startswith("    ") and not lines[i].startswith("    $ "):
                want.append(lines[i][4:])
                i += 1
            out.append((first, cmd, want))
            continue
        i += 1
    return out


def pattern(want):
    text = "\n".join(want)
    parts = []
    for k, piece in enumerate(text.split("...")):
        if k:
            parts.append(r".*?")
        # a line break (or any run of blanks) in the text: any whitespace, or none
        parts.append(r"\s*".join(re.escape(w) for w in re.split(r"\s*\n\s*", piece)))
    return re.compile(r"\s*" + "".join(parts) + r"\s*", re.S)


def main():
    path, work = sys.argv[1], sys.argv[2]
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    failed = 0
    for line, cmd, want in commands(path, opts.get("--from"), opts.get("--until")):
        name = "%s:%d: %s" % (path.split("/")[-2] + "/" + path.split("/")[-1], line, cmd.split("\n")[0][:70])
        try:
            r = subprocess.run(["bash", "-c", cmd], cwd=work, capture_output=True, timeout=300)
            got = (r.stdout + r.stderr).decode("utf-8", "replace")
            got = "\n".join(l for l in got.split("\n") if not l.startswith("OpenBLAS"))
            rc = r.returncode
        except subprocess.TimeoutExpired:
            got, rc = "(timed out)", 124
        if pattern(want).fullmatch(got) and (rc == 0 or want):
            print("ok - " + name)
        else:
            failed += 1
            shown = got if len(got) < 1500 else got[:1500] + "..."
            print("not ok - %s: exit %d; it printed:\n# %s" % (name, rc, shown.replace("\n", "\n# ")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
