#!/usr/bin/env bash
# Create .venv/ with Python 3.11 and install the product and its test tools.
# torch is pinned through constraints.txt: an unpinned torch pulls GBs of CUDA.
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin=""
for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
        python_bin=$candidate
        break
    fi
done
if [ -z "$python_bin" ]; then
    echo "Python 3.11 is required (python3.11 or python3 must be 3.11)." >&2
    exit 1
fi

[ -x .venv/bin/python ] || "$python_bin" -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -c constraints.txt -e '.[test]'
echo "Installed into .venv/"
