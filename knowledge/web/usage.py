"""The Usage page: what the signed-in user uses of each quota, against its limit."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from knowledge.quotas import quota_usage_report
from knowledge.web.pages import knowledge_page

# The page's rows: the report's key, the words shown, and whether the figures are bytes.
ROWS = (
    ("documents", "Documents stored", False),
    ("bytes", "Storage", True),
    ("chunks", "Chunks stored", False),
    ("questions_today", "Questions today", False),
    ("llm_tokens_month", "LLM tokens this month", False),
)


@require_GET
@knowledge_page
def usage_page(request):
    report = quota_usage_report(user=request.user)
    rows = [
        {"key": key, "label": label, "is_bytes": is_bytes, **report[key], "over": _full(report[key])}
        for key, label, is_bytes in ROWS
    ]
    return render(request, "knowledge/usage.html", {"rows": rows})


def _full(figure: dict) -> bool:
    return figure["limit"] is not None and figure["used"] >= figure["limit"]
