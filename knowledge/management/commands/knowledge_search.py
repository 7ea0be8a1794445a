"""Search a profile or collection from the command line, as a given user.

    knowledge_search (--profile NAME | --collection NAME) [--user USERNAME]
                     [--k N] [--json] (QUERY | --queries FILE)

--queries reads one query per line, or JSON Lines with a "question" field; the
model is loaded once for all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from config.base.errors import KnowledgeError
from knowledge.access import question_scope_checked
from knowledge.management.targets import resolve_target
from knowledge.retrieval.passages import source_fields
from knowledge.retrieval.service import RetrievalRequest, retrieve


class Command(BaseCommand):
    help = "Retrieve the chunks a question gets, with every score, from a profile or a collection."

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--profile", metavar="NAME")
        target.add_argument("--collection", metavar="NAME")
        parser.add_argument("--user", metavar="USERNAME", help="Search as this user (default: the owner).")
        parser.add_argument("--k", type=int, help="Chunks to return (overrides maxDocs).")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--queries", metavar="FILE", help="One query per line, or JSON Lines.")
        parser.add_argument("query", nargs="?")

    def handle(self, *args, **options):
        try:
            queries = _queries(options)
            profile, collection_ids, user = resolve_target(
                profile=options["profile"], collection=options["collection"], username=options["user"]
            )
            asked = question_scope_checked(user=user, profile=profile, collection_ids=collection_ids)
            for query in queries:
                context = retrieve(
                    user=user, request=RetrievalRequest(question=query, asked=asked, k=options["k"])
                )
                self._print(query, context, as_json=options["json"])
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from exc

    def _print(self, query, context, *, as_json: bool) -> None:
        if as_json:
            payload = {
                "query": query,
                "results": [_result(r) for r in context.primary_chunks],
                "references": [_result(r) for r in context.referenced_chunks],
                "timings_ms": context.timings_ms,
            }
            self.stdout.write(json.dumps(payload))
            return
        self.stdout.write(f"\n{query}")
        if not context.primary_chunks:
            self.stdout.write("  (nothing above the relevance threshold)")
        for n, r in enumerate(context.primary_chunks + context.referenced_chunks, start=1):
            s = r.scores
            score = (
                f"sim {s['similarity']:.3f} adj {s['adjusted']:.3f} fused {s['fused']:.4f}"
                if s
                else "reference"
            )
            self.stdout.write(f"  {n:>2}. {r.chunk.document.filename} [{r.chunk.source_ref}]  {score}")
        self.stdout.write(f"  timings (ms): {context.timings_ms}")


def _result(r) -> dict:
    return source_fields(r, ("document", "source_ref", "content", "scores"))


def _queries(options) -> list[str]:
    if options["queries"]:
        path = Path(options["queries"])
        if not path.is_file():
            raise KnowledgeError(f"{path}: no such file")
        return [q for q in (_query_from_line(line) for line in path.read_text().splitlines()) if q]
    if not options["query"]:
        raise KnowledgeError("give a QUERY or --queries FILE")
    return [options["query"]]


def _query_from_line(line: str) -> str:
    line = line.strip()
    if line.startswith("{"):
        try:
            return str(json.loads(line).get("question", "")).strip()
        except json.JSONDecodeError:
            return line
    return line
