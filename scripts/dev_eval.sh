#!/usr/bin/env bash
# Ingest the development question set's documents into the admin-owned collection
# "dev-eval" (under chunk profile $PROFILE, default: the active one) and evaluate
# dense-only, lexical-only and hybrid retrieval on tests/data/dev_questions.jsonl.
# Usage: scripts/dev_eval.sh [COLLECTION] [CHUNK_PROFILE]
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
py=.venv/bin/python
collection=${1:-dev-eval}
profile_args=()
[ -n "${2:-}" ] && profile_args=(--profile "$2")
corpus=../shared/corpus
files=(pdf/pasa.pdf pdf/paper.pdf pdf/influence.pdf office/dummy.docx office/dummy.pptx office/dummy.xlsx
       html/flag_day.html html/apache.html text/gravity_hill.md openapi/petstore-expanded-3.0.json
       openapi/circular-3.0.json django-docs/topics/signals.txt django-docs/topics/db/transactions.txt
       django-docs/topics/cache.txt django-docs/howto/csrf.txt django-docs/ref/middleware.txt)
$py manage.py knowledge_ingest --collection "$collection" --create "${profile_args[@]}" --wait \
    "${files[@]/#/$corpus/}" >&2
for mode in "hybrid=true" "hybrid=false" "semanticWeight=0"; do
    echo "== $mode" >&2
    $py manage.py knowledge_eval --collection "$collection" --questions tests/data/dev_questions.jsonl \
        --k 10 --json --set "$mode" | tail -n 1
done
