#!/usr/bin/env bash
# Creates test/python/.venv with the Python SDK the e2e suite drives (test/python/requirements.txt), or
# recreates it when the requirements changed since it was made; a venv that is up to date is left alone.
# pip reads its index from the machine's config (CI's offers a local mirror and no internet).
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=test/python/requirements.txt
venv=test/python/.venv
# A copy of the requirements the venv was installed from, written last: present only after a whole install.
stamp="$venv/requirements.txt"
if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$stamp"; then
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
# An unreachable default index fails at once; each retry would only add its back-off per package.
"$venv/bin/pip" install --quiet --retries "${PIP_RETRIES:-0}" -r "$requirements"
cp "$requirements" "$stamp"
echo "python-venv: $venv installed from $requirements"
