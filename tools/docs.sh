#!/usr/bin/env bash
# Build the documentation (Sphinx, warnings as errors) outside the source folders: docs/ is
# copied to build/docs/src, where docs/conf.py writes the pages it generates (api/, api.rst)
# and sphinx-gallery its example pages (auto_examples/), and the HTML goes to
# build/docs/html. docs/ itself is only read. Usage: bash tools/docs.sh [extra sphinx options]
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
out=build/docs
rm -rf "$out/src"
mkdir -p "$out"
cp -a docs "$out/src"
"$py" -m sphinx -W --keep-going -q -E -b html "$@" "$out/src" "$out/html"
echo "docs: $out/html/index.html"
