#!/usr/bin/env bash
# Run the whole test suite (real PostgreSQL + pgvector, real model, real files).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
scripts/ensure_chromium.sh
scripts/ensure_redis.sh
scripts/ensure_identity_servers.sh
exec .venv/bin/python -m pytest "$@"
