"""Upload files or folders into a collection.

    knowledge_ingest --collection NAME [--create] [--owner USERNAME]
                     [--profile CHUNK_PROFILE] [--wait] [--json] PATH...

Without --wait the documents are queued for the qcluster workers. With --wait
they are processed by this command (through the same django-q2 task, run
in-process) and it returns when each is ready or failed.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.audit import command_audited
from accounts.selectors import user_find
from config.base.errors import KnowledgeError
from knowledge.models import Chunk, Collection, Document
from knowledge.services.collections import chunk_profile_get, collection_create, embedding_model_checked
from knowledge.services.documents import DocumentUpload, document_upload


class Command(BaseCommand):
    help = "Ingest files (folders recursively) into a knowledge collection."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--collection", required=True, metavar="NAME")
        parser.add_argument("--create", action="store_true", help="Create the collection if missing.")
        parser.add_argument(
            "--owner", metavar="USERNAME", help="The collection's owner (default: admin-owned)."
        )
        parser.add_argument("--profile", metavar="CHUNK_PROFILE", help="Chunk profile of a new collection.")
        parser.add_argument(
            "--embedding-model",
            metavar="MODEL",
            help="Embedding model of a new collection: a bundled model or a registered endpoint's name "
            "(default: KNOWLEDGE_EMBEDDING_MODEL).",
        )
        parser.add_argument("--wait", action="store_true", help="Process now; return when all are done.")
        parser.add_argument("--json", action="store_true", help="One JSON object per document.")

    @command_audited
    def handle(self, *args, **options):
        try:
            files = _collect_files(options["paths"])
            owner = _user(options["owner"])
            collection = self._collection(options, owner)
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from exc
        sync = True if options["wait"] else None
        entries = [self._upload(collection, path, owner, sync) for path in self._progress(files, options)]
        rows = [_report(entry) for entry in entries]
        self._print(rows, as_json=options["json"])
        failed = sum(row["status"] == Document.Status.FAILED for row in rows)
        if failed:  # every row is printed first; the exit status then tells scripts that not all went in
            raise CommandError(f"{failed} of {len(rows)} documents failed", returncode=1)

    def _collection(self, options, owner) -> Collection:
        name = options["collection"]
        existing = Collection.objects.filter(name=name, owner=owner).first()
        profile = chunk_profile_get(name=options["profile"]) if options["profile"] else None
        model = options.get("embedding_model")
        if model:
            embedding_model_checked(model)  # a bundled model or a registered endpoint's name
        if existing:
            if model and model != existing.embedding_model:
                raise KnowledgeError(
                    f"collection {name!r} uses embedding model {existing.embedding_model!r}; "
                    "re-index it to change models"
                )
            if profile and profile.pk != existing.chunk_profile_id:
                raise KnowledgeError(
                    f"collection {name!r} uses chunk profile {existing.chunk_profile.name!r}; "
                    "re-index it to change profiles"
                )
            return existing
        if not options["create"]:
            whose = f"owned by {owner.username}" if owner else "admin-owned"
            raise KnowledgeError(f"no {whose} collection named {name!r}; pass --create to create it")
        return collection_create(
            name=name, owner=owner, chunk_profile=profile, embedding_model=options.get("embedding_model")
        )

    def _upload(self, collection, path: Path, owner, sync):
        try:
            result = document_upload(
                collection=collection,
                uploaded_by=owner,
                sync=sync,
                upload=DocumentUpload(filename=path.name, data=path.read_bytes()),
            )
            return path, result.document, ""
        except KnowledgeError as exc:
            return path, None, str(exc)

    def _progress(self, files, options):
        if options["json"] or len(files) < 2:
            return files
        return tqdm(files, desc="Ingesting", unit="file", file=self.stderr._out)

    def _print(self, rows, *, as_json: bool) -> None:
        for row in rows:
            if as_json:
                self.stdout.write(json.dumps(row))
            else:
                detail = row["error"] or f"{row['chunks']} chunks"
                self.stdout.write(
                    f"{row['status']:<10} {row['filename']}  (id {row['document_id']}) {detail}"
                )


def _collect_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(p for p in sorted(path.rglob("*")) if p.is_file() and not _hidden(p, path))
        elif path.is_file():
            files.append(path)
        else:
            raise KnowledgeError(f"{raw}: no such file or folder")
    if not files:
        raise KnowledgeError("no files to ingest")
    return files


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def _user(username: str | None):
    return user_find(username) if username else None


def _report(entry) -> dict:
    path, document, error = entry
    if document is None:
        return {"filename": path.name, "document_id": None, "status": "failed", "chunks": 0, "error": error}
    try:
        document.refresh_from_db()
    except Document.DoesNotExist:
        # A later file of the same name in this run replaced it (an upload replaces its namesake).
        return {
            "filename": document.filename,
            "document_id": document.pk,
            "status": "replaced",
            "chunks": 0,
            "error": "replaced by a later file of the same name",
        }
    collection = document.collection
    chunks = Chunk.objects.filter(
        document=document,
        chunk_profile_id=collection.chunk_profile_id,
        embedding_model=collection.embedding_model,
    )
    return {
        "filename": document.filename,
        "document_id": document.pk,
        "status": document.status,
        "chunks": chunks.count(),
        "error": document.error,
    }
