#!/usr/bin/python3
"""Reference renderer for chat templates: Debian's python3-jinja2 set up the way Hugging Face
transformers renders chat templates (ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, the loopcontrols extension, a {% generation %} block tag, raise_exception and
strftime_now globals, and tojson = json.dumps(ensure_ascii=False) with insertion-ordered keys
and no HTML escaping).

Usage: render_template.py CASES.json
CASES.json holds {"cases": [{"template": "...", "context": {...}}, ...]}. Prints a JSON list
with one {"output": "..."} or {"error": "..."} per case to stdout (UTF-8).
"""
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationBlock(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %} renders its body unchanged (HF uses it to mark
    assistant tokens; the marks do not change the text)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def make_env():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols, GenerationBlock]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    env = make_env()
    results = []
    for case in cases:
        try:
            results.append({"output": env.from_string(case["template"]).render(**case["context"])})
        except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
            results.append({"error": f"{type(e).__name__}: {e}"})
    sys.stdout.buffer.write(json.dumps(results, ensure_ascii=False).encode("utf-8", "surrogatepass"))


if __name__ == "__main__":
    main()
