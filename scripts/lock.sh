#!/usr/bin/env bash
# Resolve pyproject.toml (with the test extra) into requirements.lock: every dependency, direct and
# transitive, at one exact version with the hashes of its files, for Python 3.11 on Linux x86-64.
#
#   scripts/lock.sh             keep every pin that still satisfies pyproject.toml (make lock)
#   scripts/lock.sh --upgrade   move every pin to the newest release allowed (make lock-upgrade)
#
# pip-compile resolves with pip itself, so it sees the same indexes and wheel directory (the local
# torch CPU wheel) as the pip that installs the lock. It runs from .venv/, where the lock puts it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/pip-compile ]; then
    scripts/install.sh
fi
CUSTOM_COMPILE_COMMAND="make lock" .venv/bin/pip-compile --quiet \
    --generate-hashes --allow-unsafe --strip-extras --extra test \
    --no-emit-index-url --no-emit-find-links \
    --output-file requirements.lock "$@" pyproject.toml
echo "Wrote requirements.lock"
