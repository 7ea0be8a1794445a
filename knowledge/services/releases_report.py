"""How a release and its gate report read: one place for the command, API, MCP, admin and pages."""

from __future__ import annotations

from knowledge.models import Release

# The gate's per-release metrics shown in lists (the full report has the per-question diff too).
SHOWN_METRICS = (
    "recall@1",
    "recall@5",
    "recall@10",
    "mrr",
    "ndcg@10",
    "abstention_accuracy",
    "first_quote_hit_rate",
)


def release_row(release: Release, *, with_report: bool = False) -> dict:
    """One release as JSON: ``list --json`` prints these (keep the keys)."""
    row = {
        "id": release.pk,
        "state": release.state,
        "chunk_profile": release.chunk_profile.name,
        "embedding_model": release.embedding_model,
        "chunks": getattr(release, "chunks", None),
        "created": release.created_at.isoformat(),
        "promoted": release.promoted_at.isoformat() if release.promoted_at else None,
        "retired": release.retired_at.isoformat() if release.retired_at else None,
        "reason": release.reason,
        "versions": {
            "embedding_backend": release.embedding_backend,
            "parser": release.parser_version,
            "extraction": release.extraction_version,
            "product": release.product_version,
        },
    }
    gate = gate_metrics(release)
    if gate is not None:
        row["gate"] = gate
    if with_report and release.gate:
        row["report"] = release.gate
    return row


def gate_metrics(release: Release) -> dict | None:
    """This release's metrics from its gate, beside the serving release's it was compared with."""
    report = release.gate or {}
    if "questions" not in report:
        return None
    if not report["questions"]:
        return {"questions": 0, "decision": report.get("decision"), "notes": report.get("notes", [])}
    mine, theirs = report["candidate"], report["serving"]
    return {
        "questions": report["questions"],
        "decision": report.get("decision"),
        "compared_with": theirs["release"],
        **{name: mine.get(name) for name in SHOWN_METRICS},
        "latency_ms": mine["latency_ms"],
        "serving": {**{name: theirs.get(name) for name in SHOWN_METRICS}, "latency_ms": theirs["latency_ms"]},
        "regressions": report.get("regressions", []),
        "better": report.get("better"),
        "worse": report.get("worse"),
    }


def release_summary_lines(release: Release) -> list[str]:
    """A release and its gate report as text (``knowledge_release status``)."""
    lines = [
        f"release {release.pk} of {release.collection.name}: {release.state}",
        f"  chunk profile {release.chunk_profile.name}, embedding model {release.embedding_model}"
        f" ({release.embedding_backend or 'backend not recorded'}), {getattr(release, 'chunks', '?')} chunks",
        f"  built by product {release.product_version or '?'},"
        f" extraction {release.extraction_version or '?'}, readers {release.parser_version or '?'}",
    ]
    if release.reason:
        lines.append(f"  {release.reason}")
    report = release.gate or {}
    if "questions" not in report:
        lines.append("  the gate has not run")
        return lines
    if not report["questions"]:
        lines.append("  the gate had nothing to measure: " + "; ".join(report.get("notes", [])))
        return lines
    lines += _comparison_lines(report)
    return lines


def _comparison_lines(report: dict) -> list[str]:
    serving, candidate = report["serving"], report["candidate"]
    origins = ", ".join(f"{n} {kind}" for kind, n in report["origins"].items() if n)
    lines = [
        f"  gate: {report['questions']} questions ({origins}), tolerance {report['tolerance']}",
        f"  {'metric':<22}{'serving #' + str(serving['release']):>14}{'candidate':>12}",
    ]
    for name in SHOWN_METRICS:
        before, after = serving.get(name), candidate.get(name)
        if before is None and after is None:
            continue
        mark = " !" if any(r["metric"] == name for r in report["regressions"]) else ""
        lines.append(f"  {name:<22}{_shown(before):>14}{_shown(after):>12}{mark}")
    before, after = serving["latency_ms"]["p50"], candidate["latency_ms"]["p50"]
    lines.append(f"  {'latency p50 (ms)':<22}{before:>14}{after:>12}")
    lines.append(f"  questions better: {report['better']}, worse: {report['worse']}")
    for row in worse_questions(report)[:10]:
        lines.append(f"    worse: {row['question'][:80]} ({row['change']})")
    return lines


def worse_questions(report: dict) -> list[dict]:
    """The gate's questions the candidate answers worse than the serving release: {"question", "change"}."""
    rows = (report or {}).get("per_question", [])
    return [{"question": r["question"], "change": _rank_change(r)} for r in rows if r["change"] == "worse"]


def _rank_change(row: dict) -> str:
    if row["answerable"]:
        return f"gold rank {row['serving_rank'] or '-'} -> {row['candidate_rank'] or '-'}"
    return "refused before, answers now" if row["serving_refused"] else "answered before, refuses now"


def _shown(value) -> str:
    return "-" if value is None else f"{value:.3f}"
