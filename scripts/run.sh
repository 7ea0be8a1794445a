#!/usr/bin/env bash
# Start the application: migrations, operator account, one background worker
# (django-q2's cluster under its supervisor, manage.py knowledge_worker) and the ASGI
# web server (uvicorn, scripts/serve.sh) on http://127.0.0.1:${PORT:-8000}/.
# Ctrl-C or SIGTERM stops both within seconds, and with them the embedded
# PostgreSQL (it stops when its last client process exits). With no DATABASE_URL a
# watch (config/base/database_watch.py) starts that PostgreSQL again should it die.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
py=.venv/bin/python
export HOST=${HOST:-127.0.0.1} PORT=${PORT:-8000}

$py manage.py migrate --noinput
$py manage.py createcachetable
$py manage.py collectstatic --noinput -v 0  # whitenoise serves these, with gzip variants
$py manage.py ensure_operator

# The embedded PostgreSQL's watch: no client of that server, it keeps none running and
# stops none; it only starts it again when it died while in use.
watch=""
if [ -z "${DATABASE_URL:-}" ]; then
    $py -m config.base.database_watch &
    watch=$!
fi

# Both run in the background so that a signal reaches this script at once (bash
# defers traps while a foreground command runs), and stopping one stops the other.
# The supervisor runs the cluster in a session of its own and stops it (killing it
# after KNOWLEDGE_WORKER_STOP_SECONDS), so a second SIGTERM (the whole process
# group's, then stop()'s) reaches the supervisor only, which takes it as the first.
$py manage.py knowledge_worker &
worker=$!
scripts/serve.sh &
web=$!
stop() {
    # The watch ends with them, before the line below stops the server on purpose.
    kill -TERM $watch "$worker" "$web" 2>/dev/null || true
    wait $watch "$worker" "$web" 2>/dev/null || true
    [ -n "${DATABASE_URL:-}" ] || $py -m config.base.database  # stops the embedded PostgreSQL if unused
}
trap 'exit 0' INT TERM  # exit runs the EXIT trap: stop
trap stop EXIT

echo "Knowledge is starting on http://$HOST:$PORT/ (admin: http://$HOST:$PORT/admin/)"
wait -n "$worker" "$web"
