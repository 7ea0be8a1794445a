#!/usr/bin/env bash
# Compare standard and agentic answering on a question set (default: the development set),
# with whatever LLM is configured (none: extractive answers). Run scripts/dev_eval.sh first
# to ingest the development documents into the collection "dev-eval".
# Usage: scripts/agentic_eval.sh [COLLECTION] [QUESTIONS.jsonl] [--set KEY=VALUE ...]
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
collection=${1:-dev-eval}
questions=${2:-tests/data/dev_questions.jsonl}
shift $(( $# < 2 ? $# : 2 ))
for mode in "agentic.enabled=false" "agentic.enabled=true"; do
    echo "== $mode" >&2
    .venv/bin/python manage.py knowledge_eval --collection "$collection" --questions "$questions" \
        --answers --json --set "$mode" "$@" | tail -n 1
done
