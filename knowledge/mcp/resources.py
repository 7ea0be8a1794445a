"""MCP resources: a collection's summary as Markdown, for a client to put in front of the model."""

from __future__ import annotations

from knowledge.access import collection_for_reader
from knowledge.models import Document, DocumentSummary

MAX_DOCUMENTS = 200


def collection_summary(*, user, collection_id: int) -> str:
    """What a readable collection holds: description, then each document with what it is about."""
    collection = collection_for_reader(user=user, collection_id=collection_id)
    documents = list(
        Document.objects.filter(collection=collection, replaced_by__isnull=True).order_by("filename", "pk")[
            : MAX_DOCUMENTS + 1
        ]
    )
    summaries = {
        s.document_id: s for s in DocumentSummary.objects.filter(document__in=documents[:MAX_DOCUMENTS])
    }
    lines = [f"# {collection.name} (collection {collection.pk})", ""]
    if collection.description:
        lines += [collection.description, ""]
    lines += [f"Visibility: {collection.visibility}. Documents: {len(documents[:MAX_DOCUMENTS])}.", ""]
    for document in documents[:MAX_DOCUMENTS]:
        lines.append(_document_line(document, summaries.get(document.pk)))
    if len(documents) > MAX_DOCUMENTS:
        lines.append(f"- ... (only the first {MAX_DOCUMENTS} documents are listed)")
    return "\n".join(lines) + "\n"


def _document_line(document: Document, summary: DocumentSummary | None) -> str:
    line = f"- **{document.display_title}** ({document.filename}, document {document.pk}, {document.status})"
    if summary is not None:
        line += f": {' '.join(summary.summary.split())}"
        if summary.key_topics:
            line += f" Topics: {', '.join(summary.key_topics)}."
    return line
