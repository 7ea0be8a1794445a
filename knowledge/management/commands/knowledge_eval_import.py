"""Import (replace) a stored evaluation set from JSON Lines or a BEIR folder.

    knowledge_eval_import --name NAME (--jsonl FILE | --beir FOLDER [--corpus-out DIR])

--corpus-out writes the BEIR corpus as one .txt per document, ready for
knowledge_ingest; see knowledge.evaluation.store.eval_set_import_beir for the
document/source_ref mapping.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from knowledge.evaluation.store import eval_set_import, eval_set_import_beir


class Command(BaseCommand):
    help = "Import or replace an EvalSet from a JSON Lines question file or a BEIR folder."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, metavar="NAME")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--jsonl", metavar="FILE")
        source.add_argument("--beir", metavar="FOLDER")
        parser.add_argument(
            "--corpus-out", metavar="DIR", help="With --beir: write corpus docs as .txt here."
        )

    def handle(self, *args, **options):
        if options["corpus_out"] and not options["beir"]:
            raise CommandError("--corpus-out needs --beir")
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
