#!/bin/sh
# Renders the chat-template corpus with jinja2 now (as transformers configures it) and compares Folio's
# renderer with the result byte for byte. Exits 77 (skipped) where python3 with jinja2 is missing.
#   check-chat-templates.sh FOLIO_RENDER_TEMPLATE CASES.json RENDER_SCRIPT.py
set -eu
tool=$1
cases=$2
script=$3
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import jinja2' >/dev/null 2>&1; then
    echo "SKIPPED: python3 with jinja2 (python3-jinja2) is not installed"
    exit 77
fi
reference=$(mktemp)
trap 'rm -f "$reference"' EXIT
python3 "$script" "$cases" "$reference"
echo "jinja2 $(python3 -c 'import jinja2; print(jinja2.__version__)')"
"$tool" "$cases" --compare "$reference"
