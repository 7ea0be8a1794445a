"""A collection's releases: list them, see one, promote, discard or roll back (docs/design.md#releases).

    knowledge_release list     --collection NAME [--owner USERNAME] [--json]
    knowledge_release status   --collection NAME [--release ID] [--json]
    knowledge_release promote  --collection NAME [--release ID] [--json]
    knowledge_release discard  --collection NAME [--release ID] [--json]
    knowledge_release rollback --collection NAME [--json]

Without --release, status, promote and discard act on the collection's candidate or held release
(status: else the serving one). `list --json` prints one JSON object per release (other tools read
it: keep its keys): {"id", "state", "chunk_profile", "embedding_model", "chunks", "created", and
"gate": the gate's metrics when it ran}. Errors exit non-zero with the reason.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from accounts.audit import command_audited
from accounts.selectors import user_find
from config.base.errors import KnowledgeError
from knowledge.ingestion.reindex import serving_release
from knowledge.services.collections import collection_find
from knowledge.services.releases import (
    release_discard,
    release_get,
    release_promote,
    release_rollback,
    releases_of,
)
from knowledge.services.releases_report import release_row, release_summary_lines

ACTIONS = ("list", "status", "promote", "discard", "rollback")


class Command(BaseCommand):
    help = "List, inspect, promote, discard or roll back a collection's index releases."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=ACTIONS)
        parser.add_argument("--collection", required=True, metavar="NAME")
        parser.add_argument("--owner", metavar="USERNAME", help="The collection's owner (default: any).")
        parser.add_argument("--release", type=int, metavar="ID", help="A release id from `list`.")
        parser.add_argument("--json", action="store_true", help="Print JSON (list: one object per line).")

    @command_audited
    def handle(self, *args, **options):
        try:
            owner = user_find(options["owner"]) if options["owner"] else None
            collection = collection_find(options["collection"], owner=owner, any_owner=owner is None)
            if options["release"] is not None and options["action"] == "rollback":
                raise CommandError(
                    "rollback takes no --release: it returns to the release that served before"
                )
            getattr(self, f"_{options['action']}")(collection, options)
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from exc

    def _list(self, collection, options):
        for release in releases_of(collection):
            row = release_row(release)
            self.stdout.write(json.dumps(row) if options["json"] else _line(row))

    def _status(self, collection, options):
        release = self._chosen(collection, options, default_serving=True)
        chunks = {r.pk: r.chunks for r in releases_of(collection)}
        release.chunks = chunks.get(release.pk, 0)
        if options["json"]:
            self.stdout.write(json.dumps(release_row(release, with_report=True), indent=2))
            return
        for line in release_summary_lines(release):
            self.stdout.write(line)

    def _promote(self, collection, options):
        release = release_promote(release=self._chosen(collection, options), reason="promoted by an operator")
        self._done(options, {"promoted": release.pk, "state": release.state}, f"release {release.pk} serves")

    def _discard(self, collection, options):
        release = self._chosen(collection, options)
        deleted = release_discard(release=release)
        self._done(
            options,
            {"discarded": release.pk, "chunks_deleted": deleted},
            f"release {release.pk} discarded ({deleted} chunks deleted)",
        )

    def _rollback(self, collection, options):
        done = release_rollback(collection=collection)
        queued = (
            f"; {done.documents_queued} documents changed since are re-read into it"
            if done.documents_queued
            else ""
        )
        self._done(
            options,
            {
                "serving": done.serving.pk,
                "retired": done.retired.pk,
                "documents_queued": done.documents_queued,
            },
            f"release {done.serving.pk} serves again (release {done.retired.pk} retired){queued}",
        )

    def _chosen(self, collection, options, *, default_serving: bool = False):
        if options["release"] is None and default_serving:
            try:
                return release_get(collection=collection)
            except KnowledgeError:
                return serving_release(collection)
        return release_get(collection=collection, release_id=options["release"])

    def _done(self, options, payload: dict, message: str):
        self.stdout.write(json.dumps(payload) if options["json"] else message)


def _line(row: dict) -> str:
    gate = row.get("gate") or {}
    measured = f" recall@5 {gate['recall@5']} mrr {gate['mrr']}" if "recall@5" in gate else ""
    return (
        f"{row['id']:>5}  {row['state']:<9}  {row['chunk_profile']} / {row['embedding_model']}  "
        f"{row['chunks']} chunks  {row['created'][:19]}{measured}"
    )
