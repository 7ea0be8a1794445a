#!/usr/bin/env bash
# The web server alone: uvicorn serving the ASGI application on $HOST:$PORT
# (default 127.0.0.1:8000) with $WEB_WORKERS processes. scripts/run.sh starts it
# after the migrations and the worker; tests start it against their database.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
access_log=--no-access-log
[ "${WEB_ACCESS_LOG:-false}" = "true" ] && access_log=--access-log
# exec: signals reach uvicorn itself, which stops within the graceful timeout.
# --no-proxy-headers: uvicorn would otherwise take the client's address from any
# X-Forwarded-For sent from 127.0.0.1, so local clients could pick their address
# and escape the log-in limits; the application believes that header only as far
# as TRUSTED_PROXY_COUNT says (and the scheme from it only with HTTPS=true).
exec .venv/bin/python -m uvicorn config.asgi:application --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}" \
    --workers "${WEB_WORKERS:-1}" --timeout-graceful-shutdown 5 --no-proxy-headers "$access_log"
