"""Sync a source into a collection, adding the source when it is new.

    knowledge_sync --collection NAME [--create] [--owner USERNAME] --source URL_OR_PATH
                   [--kind web|git|folder] [--branch BRANCH] [--glob PATTERN ...]
                   [--every HOURS | --cron EXPRESSION] [--wait] [--json]

With --json it prints one JSON object (other tools read it: keep its keys):
{"source": id, "added": n, "updated": n, "unchanged": n, "deleted": n, "failed": n,
 "chunks_embedded": n, "errors": [...]}. With --wait the documents are processed by this command
before it returns (chunks_embedded counts their chunks); without it they are queued for the workers.
The command runs as an operator: it may add server folders under KNOWLEDGE_SOURCES_FOLDER_ROOTS.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from accounts.audit import command_audited
from accounts.selectors import user_find
from config.base.errors import KnowledgeError
from knowledge.models import Collection, Source, SourceSync
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add, source_kind_guess, source_sync, sync_report


class Command(BaseCommand):
    help = "Add a source (web site, Git repository, server folder) to a collection and sync it."

    def add_arguments(self, parser):
        parser.add_argument("--collection", required=True, metavar="NAME")
        parser.add_argument("--create", action="store_true", help="Create the collection if missing.")
        parser.add_argument(
            "--owner", metavar="USERNAME", help="The collection's owner (default: admin-owned)."
        )
        parser.add_argument("--source", required=True, metavar="URL_OR_PATH")
        parser.add_argument(
            "--kind", choices=list(Source.Kind.values), help="Default: guessed from the source."
        )
        parser.add_argument("--branch", help="Git: the branch to follow (default main).")
        globs_help = "Git and folders: files to read, e.g. 'docs/**/*.md' (repeatable)."
        parser.add_argument("--glob", action="append", dest="globs", metavar="PATTERN", help=globs_help)
        parser.add_argument("--every", type=int, metavar="HOURS", help="Also sync by itself every HOURS.")
        parser.add_argument(
            "--cron", default="", metavar="EXPRESSION", help='Or on a cron expression ("0 6 * * *").'
        )
        parser.add_argument("--wait", action="store_true", help="Process the documents now.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    @command_audited
    def handle(self, *args, **options):
        try:
            owner = user_find(options["owner"]) if options["owner"] else None
            collection = _collection(options["collection"], owner, create=options["create"])
            source = _source(collection, options, owner)
            run = source_sync(
                source=source, trigger="command", wait=options["wait"], on_stage=self._stage(options)
            )
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from exc
        report = sync_report(run)
        if options["json"]:
            self.stdout.write(json.dumps(report))
        else:
            self._print(report)
        if run.status == SourceSync.Status.FAILED:
            raise CommandError(run.error, returncode=1)

    def _stage(self, options):
        if options["json"]:
            return None
        return lambda text: self.stderr.write(f"  {text}")

    def _print(self, report: dict) -> None:
        counts = ", ".join(f"{report[k]} {k}" for k in ("added", "updated", "unchanged", "deleted", "failed"))
        self.stdout.write(f"source {report['source']}: {counts}; {report['chunks_embedded']} chunks embedded")
        for error in report["errors"]:
            self.stdout.write(f"  failed: {error}")


def _collection(name: str, owner, *, create: bool) -> Collection:
    existing = Collection.objects.filter(name=name, owner=owner).first()
    if existing:
        return existing
    if not create:
        whose = f"owned by {owner.username}" if owner else "admin-owned"
        raise KnowledgeError(f"no {whose} collection named {name!r}; pass --create to create it")
    return collection_create(name=name, owner=owner)


def _source(collection: Collection, options: dict, owner) -> Source:
    location = options["source"].strip()
    kind = options["kind"] or source_kind_guess(location)
    existing = Source.objects.filter(collection=collection, kind=kind, location=location).first()
    if existing:
        return existing
    settings = {}
    if options["branch"]:
        settings["branch"] = options["branch"]
    if options["globs"]:
        settings["globs"] = options["globs"]
    spec = SourceSpec(
        location=location, kind=kind, options=settings, interval_hours=options["every"], cron=options["cron"]
    )
    return source_add(collection=collection, spec=spec, user=owner, operator=True)
