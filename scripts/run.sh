#!/usr/bin/env bash
# Start the application: migrations, operator account, one background worker
# (django-q2 qcluster) and the ASGI web server (uvicorn, scripts/serve.sh) on
# http://127.0.0.1:${PORT:-8000}/. Ctrl-C or SIGTERM stops both, and with them
# the embedded PostgreSQL (it stops when its last client process exits).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
py=.venv/bin/python
export HOST=${HOST:-127.0.0.1} PORT=${PORT:-8000}

$py manage.py migrate --noinput
$py manage.py createcachetable
$py manage.py collectstatic --noinput -v 0  # whitenoise serves these, with gzip variants
$py manage.py ensure_operator

# Both run in the background so that a signal reaches this script at once (bash
# defers traps while a foreground command runs), and stopping one stops the other.
# The worker runs in a session of its own, so that only stop() signals it: django-q2's
# cluster hung for good when a second SIGTERM came while it was stopping (a SIGTERM
# to the whole process group, then stop()'s), keeping the embedded PostgreSQL up.
setsid $py manage.py qcluster &
worker=$!
scripts/serve.sh &
web=$!
stop() {
    kill -TERM "$worker" "$web" 2>/dev/null || true
    wait "$worker" "$web" 2>/dev/null || true
    [ -n "${DATABASE_URL:-}" ] || $py -m config.database  # stops the embedded PostgreSQL if unused
}
trap 'exit 0' INT TERM  # exit runs the EXIT trap: stop
trap stop EXIT

echo "Knowledge is starting on http://$HOST:$PORT/ (admin: http://$HOST:$PORT/admin/)"
wait -n "$worker" "$web"
