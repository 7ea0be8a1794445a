"""Import (replace) a stored evaluation set from JSON Lines or a BEIR folder.

    knowledge_eval_import --name NAME (--jsonl FILE | --beir FOLDER [--corpus-out DIR]
                                       | --from-feedback [--out FILE]) [--gate COLLECTION ...]

--gate links the set to a collection: its new releases are measured on these questions before
they serve (knowledge.evaluation.gate). Repeatable.

--corpus-out writes the BEIR corpus as one .txt per document, ready for
knowledge_ingest; see knowledge.evaluation.store.eval_set_import_beir for the
document/source_ref mapping. --from-feedback takes the answers rated helpful
(thumbs up) on the chat page or through the API (knowledge.services.feedback); --out
keeps the JSON Lines file it wrote, for knowledge_eval --questions.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from config.base.errors import KnowledgeError
from knowledge.evaluation.feedback import feedback_eval_set_import
from knowledge.evaluation.store import eval_set_import, eval_set_import_beir
from knowledge.services.collections import collection_find


class Command(BaseCommand):
    help = "Import or replace an EvalSet from a JSON Lines question file or a BEIR folder."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, metavar="NAME")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--jsonl", metavar="FILE")
        source.add_argument("--beir", metavar="FOLDER")
        source.add_argument(
            "--from-feedback", action="store_true", help="The answers rated helpful, as questions."
        )
        parser.add_argument("--out", metavar="FILE", help="With --from-feedback: also write the JSONL here.")
        parser.add_argument(
            "--corpus-out", metavar="DIR", help="With --beir: write corpus docs as .txt here."
        )
        parser.add_argument(
            "--gate",
            action="append",
            default=[],
            metavar="COLLECTION",
            help="Measure this collection's new releases on the set before they serve (repeatable).",
        )

    def handle(self, *args, **options):
        try:  # before importing: a wrong name imports nothing
            gated = [collection_find(name, any_owner=True) for name in options["gate"]]
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from exc
        eval_set = self._imported(options)
        if gated:
            eval_set.collections.add(*gated)
            names = ", ".join(c.name for c in gated)
            self.stdout.write(f"new releases of {names} are measured on {eval_set.name!r} before they serve")

    def _imported(self, options):
        if options["corpus_out"] and not options["beir"]:
            raise CommandError("--corpus-out needs --beir")
        if options["out"] and not options["from_feedback"]:
            raise CommandError("--out needs --from-feedback")
        if options["from_feedback"]:
            return self._from_feedback(options["name"], options["out"])
        if options["jsonl"]:
            path = Path(options["jsonl"])
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            eval_set, errors = eval_set_import(name=options["name"], path=path)
            where = path.name
        else:
            folder = Path(options["beir"])
            if not folder.is_dir():
                raise CommandError(f"{folder}: no such folder")
            corpus_out = Path(options["corpus_out"]) if options["corpus_out"] else None
            eval_set, errors = eval_set_import_beir(
                name=options["name"], folder=folder, corpus_out=corpus_out
            )
            where = folder.name
        for number, message in errors:
            self.stderr.write(f"{where}:{number}: skipped: {message}")
        count = eval_set.questions.count()
        self.stdout.write(f"eval set {eval_set.name!r}: {count} question(s), {len(errors)} skipped line(s)")
        if count == 0:
            raise CommandError("no valid questions")
        return eval_set

    def _from_feedback(self, name: str, out: str | None):
        try:
            eval_set, count = feedback_eval_set_import(name=name, out=Path(out) if out else None)
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from exc
        written = f"; written to {out}" if out else ""
        self.stdout.write(f"eval set {eval_set.name!r}: {count} question(s) from rated answers{written}")
        return eval_set
