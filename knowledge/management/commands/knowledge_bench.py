"""Benchmarks that report ratios against a reference measured in the same run.

knowledge_bench ingest [--files PATH...] [--backend torch|onnx|onnx-int8] [--rounds N]
knowledge_bench lexical [--chunks N] [--queries N]
knowledge_bench retrieve [--chunks N] [--scope-share P ...] [--queries N] [--warm-up N] [--drop]
knowledge_bench load [--clients C] [--seconds S] [--url URL] [--sse N] [--reference-url URL --rounds N]
knowledge_bench ocr [--files PDF...] [--dpi N ...] [--pages-per-file N]
knowledge_bench rollback [--chunks N] [--rounds N]
knowledge_bench vectors [--chunks N] [--writes N] [--queries N]
knowledge_bench models --set NAME:QUESTIONS.jsonl:FILES.txt ... [--models MODEL ...] [--docs FILE]
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from knowledge.clients.embedding import BACKENDS


class Command(BaseCommand):
    help = "Run a benchmark; each ends with one JSON line of its figures."

    def add_arguments(self, parser):
        benchmarks = parser.add_subparsers(dest="benchmark", required=True)
        ingest = benchmarks.add_parser("ingest", help="Pipeline vs raw encoder throughput.")
        ingest.add_argument("--files", nargs="+", metavar="PATH", help="Default: a mix from the corpus.")
        ingest.add_argument("--backend", choices=BACKENDS, default=None)
        ingest.add_argument(
            "--rounds",
            type=int,
            default=3,
            help="Pipeline and raw encoder runs per file, alternated (medians).",
        )
        backends = benchmarks.add_parser("backends", help="Embedding backends: speed and retrieval quality.")
        backends.add_argument("--collection", required=True, metavar="NAME")
        backends.add_argument("--questions", required=True, metavar="FILE.jsonl")
        lexical = benchmarks.add_parser("lexical", help="BM25 lexical search vs references.")
        lexical.add_argument("--chunks", type=int, default=100_000)
        lexical.add_argument("--queries", type=int, default=50)
        retrieve = benchmarks.add_parser("retrieve", help="Retrieval latency and HNSW recall at N chunks.")
        retrieve.add_argument("--chunks", type=int, default=100_000)
        retrieve.add_argument(
            "--scope-share",
            type=float,
            nargs="+",
            default=[0.5, 0.01],
            metavar="P",
            help="Also search scopes keeping these shares of the rows (default 0.5 0.01).",
        )
        retrieve.add_argument("--queries", type=int, default=50)
        retrieve.add_argument(
            "--recall-queries", type=int, help="Exact scans for recall (default: all <= 200k)."
        )
        retrieve.add_argument(
            "--warm-up",
            type=int,
            default=200,
            metavar="N",
            help="Other questions asked first, as a server in use has been (default 200; 0: just started).",
        )
        retrieve.add_argument(
            "--drop", action="store_true", help="Delete the benchmark collections and exit."
        )
        ocr = benchmarks.add_parser("ocr", help="OCR of drawn PDF pages against their text layer.")
        ocr.add_argument(
            "--files", nargs="+", metavar="PDF", help="Default: pasa.pdf, paper.pdf, influence.pdf."
        )
        ocr.add_argument("--dpi", type=int, nargs="+", default=[150, 200, 300], metavar="N")
        ocr.add_argument("--pages-per-file", type=int, default=3, metavar="N")
        _add_load_arguments(benchmarks.add_parser("load", help="Concurrent clients against a live server."))
        rollback = benchmarks.add_parser(
            "rollback", help="A release rollback on N chunks vs re-embedding them."
        )
        rollback.add_argument(
            "--chunks", type=int, default=10_000, help="Chunks per release (default 10000)."
        )
        rollback.add_argument("--rounds", type=int, default=10)
        _add_model_arguments(benchmarks)

    def handle(self, *args, **options):
        handler = getattr(self, f"_{options['benchmark']}")
        handler(options)

    def _vectors(self, options):
        from knowledge.benchmarks import vectors

        if min(options["chunks"], options["writes"], options["queries"]) < 1:
            raise CommandError("--chunks, --writes and --queries must be at least 1")
        vectors.run(
            self.stdout, chunks=options["chunks"], writes=options["writes"], queries=options["queries"]
        )

    def _models(self, options):
        from knowledge.benchmarks import models
        from knowledge.clients.embedding_registry import embedding_model_info

        try:
            sets = [models.QuestionSet.parse(text) for text in options["set"]]
        except ValueError:
            raise CommandError("--set is NAME:QUESTIONS.jsonl:FILES.txt") from None
        missing = [str(p) for s in sets for p in (s.questions, s.files) if not p.is_file()]
        if missing:
            raise CommandError(f"not a file: {', '.join(missing)}")
        for name in options["models"] or []:
            try:
                embedding_model_info(name)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        if options["one"]:
            if len(options["models"] or []) != 1:
                raise CommandError("--one measures exactly one model (--models NAME)")
            models.measure_one(self.stdout, model=options["models"][0], sets=sets)
            return
        docs = Path(options["docs"]) if options["docs"] else None
        if docs is not None and (not docs.is_file() or models.TABLE_END not in docs.read_text("utf-8")):
            raise CommandError(f"--docs: {docs} has no models table (the line {models.TABLE_END!r})")
        models.run(self.stdout, sets=sets, models=options["models"], docs=docs)

    def _rollback(self, options):
        from knowledge.benchmarks.releases import rollback_benchmark

        if options["chunks"] < 1 or options["rounds"] < 1:
            raise CommandError("--chunks and --rounds must be at least 1")
        rollback_benchmark(chunks=options["chunks"], rounds=options["rounds"], out=self.stdout)

    def _ingest(self, options):
        from django.conf import settings

        from knowledge.benchmarks import ingest

        files = [Path(p) for p in options["files"]] if options["files"] else ingest.default_files()
        missing = [str(p) for p in files if not p.is_file()]
        if missing:
            raise CommandError(f"not a file: {', '.join(missing)}")
        backend = options["backend"] or settings.KNOWLEDGE_EMBEDDING_BACKEND
        if options["rounds"] < 1:
            raise CommandError("--rounds must be at least 1")
        ingest.run(self.stdout, files=files, backend=backend, rounds=options["rounds"])

    def _ocr(self, options):
        from knowledge.benchmarks import ocr

        files = [Path(p) for p in options["files"]] if options["files"] else ocr.default_files()
        missing = [str(p) for p in files if not p.is_file()]
        if missing:
            raise CommandError(f"not a file: {', '.join(missing)}")
        if options["pages_per_file"] < 1 or any(not 50 <= dpi <= 600 for dpi in options["dpi"]):
            raise CommandError("--pages-per-file must be at least 1 and --dpi between 50 and 600")
        ocr.run(self.stdout, files=files, dpis=options["dpi"], pages_per_file=options["pages_per_file"])

    def _backends(self, options):
        from config.base.errors import KnowledgeError
        from knowledge.benchmarks import backends
        from knowledge.evaluation.questions import load_questions
        from knowledge.services.collections import collection_find

        try:
            collection = collection_find(options["collection"], any_owner=True)
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from exc
        path = Path(options["questions"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        backends.run(self.stdout, collection=collection, questions=load_questions(path).questions)

    def _lexical(self, options):
        from knowledge.benchmarks import lexical

        lexical.run(self.stdout, chunks=options["chunks"], queries=options["queries"])

    def _retrieve(self, options):
        from knowledge.benchmarks import retrieve

        if options["drop"]:
            retrieve.drop_collections(self.stdout)
            return
        shares = options["scope_share"]
        if options["chunks"] < 1 or options["queries"] < 1:
            raise CommandError("--chunks and --queries must be >= 1")
        if options["warm_up"] < 0:
            raise CommandError("--warm-up must be >= 0")
        if len(set(shares)) != len(shares) or not all(0 < p < 1 for p in shares):
            raise CommandError("--scope-share values must be distinct and between 0 and 1 (exclusive)")
        if (
            any(round(options["chunks"] * p) < 1 for p in shares)
            or round(options["chunks"] * max(shares)) >= options["chunks"]
        ):
            raise CommandError("--chunks is too small for these scope shares: every scope needs >= 1 chunk")
        retrieve.run(
            self.stdout,
            chunks=options["chunks"],
            scope_shares=shares,
            queries=options["queries"],
            recall_queries=options["recall_queries"],
            warm_up=options["warm_up"],
        )

    def _load(self, options):
        from urllib.parse import urlsplit

        from knowledge.benchmarks import load

        target = urlsplit(options["url"])
        if target.scheme != "http" or not target.hostname:
            raise CommandError("--url must be an http:// URL, e.g. http://127.0.0.1:8000")
        if options["clients"] < 1 or options["seconds"] <= 0 or not 0 <= options["query_share"] <= 1:
            raise CommandError("--clients must be >= 1, --seconds > 0 and --query-share within 0-1")
        if (options["token"] is None) != (options["collection_id"] is None):
            raise CommandError("--token and --collection-id go together")
        if options["users"] < 1 or (options["token"] and options["users"] > 1):
            raise CommandError("--users must be >= 1, and 1 with --token")
        if options["docs"] and not options["reference_url"]:
            raise CommandError("--docs adds a paired run's row: it needs --reference-url")
        plan = load.LoadPlan(
            clients=options["clients"],
            seconds=options["seconds"],
            query_share=options["query_share"],
            users=options["users"],
        )
        if options["reference_url"]:
            self._load_paired(options, plan)
            return
        load.run(
            self.stdout,
            url=options["url"],
            plan=plan,
            sse=options["sse"],
            token=options["token"],
            collection_id=options["collection_id"],
        )

    def _load_paired(self, options, plan):
        from urllib.parse import urlsplit

        from knowledge.benchmarks import load_paired

        docs = Path(options["docs"]) if options["docs"] else None
        if docs is not None and (not docs.is_file() or load_paired.TABLE_END not in docs.read_text("utf-8")):
            raise CommandError(f"--docs: {docs} has no paired table (the line {load_paired.TABLE_END!r})")
        reference = urlsplit(options["reference_url"])
        if reference.scheme != "http" or not reference.hostname:
            raise CommandError("--reference-url must be an http:// URL, e.g. http://127.0.0.1:8001")
        if options["token"] or options["sse"] or options["rounds"] < 1:
            raise CommandError("--reference-url takes neither --token nor --sse, and --rounds >= 1")
        load_paired.run(
            self.stdout,
            url=options["url"],
            reference_url=options["reference_url"],
            rounds=options["rounds"],
            plan=plan,
            labels=(options["label"], options["reference_label"]),
            docs=docs,
        )


def _add_load_arguments(load) -> None:
    load.add_argument("--url", default="http://127.0.0.1:8000")
    load.add_argument("--clients", type=int, default=20)
    load.add_argument("--users", type=int, default=1, help="Spread the clients over this many users.")
    load.add_argument("--seconds", type=float, default=60)
    load.add_argument("--query-share", type=float, default=0.2, help="Share of requests to /query/.")
    load.add_argument("--sse", type=int, default=0, metavar="N", help="Then N answer streams at once.")
    load.add_argument("--token", help="Use this API token (a remote server; with --collection-id).")
    load.add_argument("--collection-id", type=int)
    load.add_argument(
        "--reference-url",
        help="Also load this server (the code before a change, on the same database), in alternating "
        "rounds, and report what --url adds per request.",
    )
    load.add_argument("--rounds", type=int, default=6, help="With --reference-url: rounds per server.")
    load.add_argument(
        "--label",
        default="candidate",
        help="With --reference-url: the candidate's name in the docs' table row.",
    )
    load.add_argument(
        "--reference-label",
        default="reference",
        help="With --reference-url: the reference's name in the table row (a commit, a date).",
    )
    load.add_argument(
        "--docs",
        metavar="FILE",
        help="With --reference-url: add the run's row to the paired table of this page (docs/benchmarks.md).",
    )


def _add_model_arguments(benchmarks) -> None:
    """The storage layouts' and the embedding models' benchmarks."""
    vectors = benchmarks.add_parser(
        "vectors", help="Vector storage layouts: one shared table vs a table per model."
    )
    vectors.add_argument("--chunks", type=int, default=100_000)
    vectors.add_argument("--writes", type=int, default=2_000)
    vectors.add_argument("--queries", type=int, default=200)
    models = benchmarks.add_parser(
        "models", help="Every embedding model: quality beside the naive pipeline, speed, memory."
    )
    models.add_argument(
        "--set",
        action="append",
        required=True,
        metavar="NAME:QUESTIONS:FILES",
        help="A question set (JSON Lines) and a file listing its documents, one path a line.",
    )
    models.add_argument(
        "--models", nargs="+", metavar="MODEL", help="Default: every one a collection may choose."
    )
    models.add_argument("--docs", metavar="FILE", help="Write the table between its markers in FILE.")
    models.add_argument("--one", action="store_true", help="Measure the one model here (the child process).")
