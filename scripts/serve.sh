#!/usr/bin/env bash
# The web server alone: uvicorn serving the ASGI application on $HOST:$PORT
# (default 127.0.0.1:8000) with $WEB_WORKERS processes
# (default: one per CPU). scripts/run.sh starts it
# after the migrations and the worker; tests start it against their database.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# One process per CPU by default: a question is embedded on one onnxruntime thread
# and the rest of a request is Python and SQL, so one process is held to a core by
# its interpreter lock (measured with knowledge_bench load, 20 clients, retrieve:
# 51-57 requests/s with one process on 2 cores, 70-74 with two).
cpus=$(nproc)
workers=${WEB_WORKERS:-$cpus}
threads=$(( cpus / workers > 0 ? cpus / workers : 1 ))
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$threads}
access_log=--no-access-log
[ "${WEB_ACCESS_LOG:-false}" = "true" ] && access_log=--access-log
# exec: signals reach uvicorn itself, which stops within the graceful timeout.
# --no-proxy-headers: uvicorn would otherwise take the client's address from any
# X-Forwarded-For sent from 127.0.0.1, so local clients could pick their address
# and escape the log-in limits; the application believes that header only as far
# as TRUSTED_PROXY_COUNT says (and the scheme from it only with HTTPS=true).
exec .venv/bin/python -m uvicorn config.asgi:application --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}" \
    --workers "$workers" --timeout-graceful-shutdown 5 --no-proxy-headers "$access_log"
