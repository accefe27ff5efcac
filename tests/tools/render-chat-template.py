#!/usr/bin/env python3
"""Renders the chat-template cases of a cases file with jinja2, configured as Hugging Face transformers'
apply_chat_template configures it, and writes the results as JSON (the reference Folio's renderer must
equal byte for byte).

    render-chat-template.py CASES.json [OUT.json]

Each case gives a template (inline or "template_file", relative to the cases file) and the names of the
contexts to render it with; each result is {"output": text} or {"error": message}."""

import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """{% generation %}...{% endgeneration %}: renders its body (transformers tracks assistant spans)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def make_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    cases_path = sys.argv[1]
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    env = make_environment()
    results = []
    for case in cases["cases"]:
        if "template_file" in case:
            path = os.path.join(os.path.dirname(cases_path), case["template_file"])
            with open(path, encoding="utf-8", newline="") as f:
                source = f.read()
        else:
            source = case["template"]
        outputs = []
        try:
            template = env.from_string(source)
        except Exception as e:  # the template does not parse: every context fails
            outputs = [{"error": f"{type(e).__name__}: {e}"} for _ in case["contexts"]]
        else:
            for name in case["contexts"]:
                try:
                    outputs.append({"output": template.render(**cases["contexts"][name])})
                except Exception as e:
                    outputs.append({"error": f"{type(e).__name__}: {e}"})
        results.append({"name": case["name"], "outputs": outputs})
    # The day strftime_now wrote into the outputs, which a later reader of the file puts today's in place of.
    document = {"jinja2_version": jinja2.__version__, "rendered_on": strftime_now("%d %b %Y"), "results": results}
    text = json.dumps(document, ensure_ascii=False, indent=1) + "\n"
    if len(sys.argv) == 3:
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
