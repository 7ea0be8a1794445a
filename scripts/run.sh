#!/usr/bin/env bash
# Start the application: migrations, operator account, one background worker
# (django-q2 qcluster) and the ASGI web server (uvicorn) on http://127.0.0.1:${PORT:-8000}/.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
py=.venv/bin/python
host=${HOST:-127.0.0.1}
port=${PORT:-8000}

$py manage.py migrate --noinput
$py manage.py createcachetable
$py manage.py ensure_operator

$py manage.py qcluster &
worker=$!
trap 'kill $worker 2>/dev/null; wait $worker 2>/dev/null' EXIT INT TERM

echo "Knowledge is starting on http://$host:$port/ (admin: http://$host:$port/admin/)"
HOST=$host PORT=$port scripts/serve.sh
