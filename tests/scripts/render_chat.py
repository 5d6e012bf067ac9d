#!/usr/bin/python3
"""Renders chat templates as transformers' apply_chat_template does, with
Debian's python3-jinja2: a sandboxed environment with trim_blocks and
lstrip_blocks, the loopcontrols extension, raise_exception and
strftime_now (here a fixed date, the one asn gets with --chat-date);
enable_thinking is true (the templates' default where llama.cpp's copies
added the switch).

    render_chat.py OUTDIR BOS TEMPLATE...

For each template and each conversation below it writes OUTDIR/N.case
(template path, date), N.system (absent: no system message), N.user and
N.expected (the rendering, add_generation_prompt=True). bos_token is BOS (the
BOS text of the tokenizer the test runs asn with); eos_token is "</s>"
for TinyLlama's template (its own), else "<|end_of_text|>"."""
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

CONVERSATIONS = [
    # the research pipeline's prompt: its default system message, a question
    ("You are a helpful assistant.", "What is the capital of France?"),
    # no system message; spaces and newlines around the text; non-ASCII
    (None, "  Write two lines\nabout caf\u00e9s \u2713  "),
    # a system message with spaces and a final newline around it
    ("  Answer briefly.\n", "List three colours."),
]
DATES = ["26 Jul 2024", "05 Mar 2025"]


def render(text, messages, date, eos, bos):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: date
    return env.from_string(text).render(messages=messages, add_generation_prompt=True,
                                        enable_thinking=True, bos_token=bos, eos_token=eos)


def main():
    out, bos = sys.argv[1], sys.argv[2]
    n = 0
    for path in sys.argv[3:]:
        text = open(path, encoding="utf-8").read()
        eos = "</s>" if "TinyLlama" in path else "<|end_of_text|>"
        # a second date only where the template asks for the day it runs
        for date in DATES if "strftime_now" in text else DATES[:1]:
            for system, user in CONVERSATIONS:
                msgs = ([{"role": "system", "content": system}] if system is not None else [])
                msgs.append({"role": "user", "content": user})
                try:
                    expected = render(text, msgs, date, eos, bos)
                except jinja2.exceptions.TemplateError as e:
                    expected = None
                    err = str(e)
                n += 1
                base = os.path.join(out, str(n))
                with open(base + ".case", "w", encoding="utf-8") as f:
                    f.write("%s\t%s\n" % (path, date))
                if system is not None:
                    with open(base + ".system", "w", encoding="utf-8") as f:
                        f.write(system)
                with open(base + ".user", "w", encoding="utf-8") as f:
                    f.write(user)
                with open(base + (".expected" if expected is not None else ".refused"), "w",
                          encoding="utf-8") as f:
                    f.write(expected if expected is not None else err)


main()
