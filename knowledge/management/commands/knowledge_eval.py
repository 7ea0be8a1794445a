"""Evaluate retrieval (and, with --answers, answers) on a question set.

    knowledge_eval (--profile NAME | --collection NAME) --questions FILE.jsonl
                   [--k 10] [--answers] [--json] [--set KEY=VALUE ...] [--user USERNAME]
                   [--store NAME] [--per-question FILE.jsonl]

--set overrides knowledge parameters for this run only (stored settings are
untouched), e.g. --set hybrid=false or --set semanticWeight=0 (lexical only),
or --set agentic.enabled=true to answer (--answers) with the agentic loop;
with --answers the JSON also holds retry_rate, rewrite_rate, expansion_rate,
hallucination_detection_rate, avg_retrieval_rounds, graded_relevant_ratio,
llm_calls_per_answer and answer_latency_ms.
--per-question FILE.jsonl writes one line per question (the first gold
source's rank, recall@5, the answerability verdict, the top three sources
and, with --answers, the first quote's source and whether it is gold).
--store NAME imports (replacing) the question file into EvalSet NAME and
records the run with its metrics as an EvalRun (see the admin to compare runs).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from config.base.errors import KnowledgeError
from knowledge.access import question_scope_checked
from knowledge.evaluation.answers import score_answers
from knowledge.evaluation.questions import load_questions
from knowledge.evaluation.runner import RECALL_CUTS, question_rows, run_retrieval, summarise
from knowledge.evaluation.store import RunScope, eval_run_record, eval_set_import
from knowledge.management.targets import parse_settings, resolve_target
from knowledge.models import Collection
from knowledge.parameters import ConfigError

JSON_KEYS = (
    "questions",
    "recall@1",
    "recall@3",
    "recall@5",
    "recall@10",
    "mrr",
    "ndcg@10",
    "abstention_accuracy",
    "answerable_refused",
    "embedding_coverage",
    "latency_ms",
    "by_kind",
)


PROCESS_KEYS = (
    "agentic_answers",
    "llm_calls_per_answer",
    "avg_retrieval_rounds",
    "expansion_rate",
    "rewrite_rate",
    "retry_rate",
    "hallucination_detection_rate",
    "graded_relevant_ratio",
    "budget_exhausted_rate",
)


class Command(BaseCommand):
    help = "Run a JSON Lines question set and print recall@k, MRR, nDCG@10, abstention and latency."

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--profile", metavar="NAME")
        target.add_argument("--collection", metavar="NAME")
        parser.add_argument("--questions", required=True, metavar="FILE.jsonl")
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument("--answers", action="store_true", help="Also synthesise and score answers.")
        parser.add_argument("--json", action="store_true", help="End with one JSON line of every metric.")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        parser.add_argument("--user", metavar="USERNAME", help="Evaluate as this user (default: owner).")
        parser.add_argument("--store", metavar="NAME", help="Store as EvalSet NAME; record the run.")
        parser.add_argument(
            "--per-question", metavar="FILE.jsonl", help="Write one JSON line per question to FILE."
        )

    def handle(self, *args, **options):
        rows_file = Path(options["per_question"]) if options["per_question"] else None
        if rows_file is not None and not rows_file.parent.is_dir():  # say so before a long run, not after
            raise CommandError(f"{rows_file}: cannot write: no folder {rows_file.parent}")
        try:
            overrides = parse_settings(options["set"])
            loaded = self._questions(Path(options["questions"]))
            profile, collection_ids, user = resolve_target(
                profile=options["profile"], collection=options["collection"], username=options["user"]
            )
            results = self._run(loaded.questions, user, profile, collection_ids, options, overrides)
        except (KnowledgeError, ConfigError) as exc:
            raise CommandError(str(exc)) from exc
        summary = summarise(results, k=options["k"], with_answers=options["answers"])
        if rows_file is not None:
            _write_rows(rows_file, question_rows(results))
        summary["skipped_lines"] = len(loaded.errors)
        summary["settings"] = overrides
        self._print_table(summary)
        if options["store"]:
            run = _store(options, summary, profile, collection_ids, user, overrides)
            self.stdout.write(f"stored run #{run.pk} in eval set {run.eval_set.name!r}")
            summary["run_id"] = run.pk
        if options["json"]:
            self.stdout.write(json.dumps(summary))

    def _questions(self, path: Path):
        if not path.is_file():
            raise KnowledgeError(f"{path}: no such file")
        loaded = load_questions(path)
        for number, message in loaded.errors:
            self.stderr.write(f"{path.name}:{number}: skipped: {message}")
        if not loaded.questions:
            raise KnowledgeError(f"{path}: no valid questions")
        return loaded

    def _run(self, questions, user, profile, collection_ids, options, overrides):
        bar = tqdm(
            total=len(questions),
            desc="Evaluating",
            unit="q",
            file=self.stderr._out,
            disable=options["json"] and not self.stderr.isatty(),
        )
        results = run_retrieval(
            questions,
            user=user,
            asked=question_scope_checked(user=user, profile=profile, collection_ids=collection_ids),
            k=options["k"],
            overrides=overrides,
            on_question=lambda _: bar.update(),
        )
        bar.close()
        if options["answers"]:
            answering = tqdm(
                total=sum(1 for r in results if r.question.answerable),
                desc="Answering",
                unit="q",
                file=self.stderr._out,
                disable=options["json"] and not self.stderr.isatty(),
            )
            score_answers(
                results,
                user=user,
                profile=profile,
                collection_ids=collection_ids,
                overrides=overrides,
                on_answer=lambda _: answering.update(),
            )
            answering.close()
        return results

    def _print_table(self, summary: dict) -> None:
        columns = [f"recall@{c}" for c in RECALL_CUTS] + ["mrr", "ndcg@10", "abstention_accuracy"]
        columns += ["answerable_refused"]
        if "composite" in summary:
            columns += ["citation_hit_rate", "first_quote_hit_rate", "answer_similarity", "composite"]
        header = f"{'kind':<14}{'n':>4} " + " ".join(f"{c.replace('_accuracy', ''):>11}" for c in columns)
        self.stdout.write(header)
        rows = [("all", summary)] + list(summary["by_kind"].items())
        for kind, m in rows:
            cells = " ".join(_cell(m.get(c)) for c in columns)
            self.stdout.write(f"{kind:<14}{m['questions']:>4} {cells}")
        latency = ", ".join(
            f"{s} p50 {v['p50']:.0f} / p95 {v['p95']:.0f}" for s, v in summary["latency_ms"].items()
        )
        self.stdout.write(f"latency (ms): {latency}")
        self.stdout.write(f"embedding coverage: {summary['embedding_coverage']}")
        if "retry_rate" in summary:
            process = ", ".join(f"{key} {summary[key]}" for key in PROCESS_KEYS)
            latency = summary["answer_latency_ms"]
            self.stdout.write(f"answering: {process}; latency p50 {latency['p50']} / p95 {latency['p95']} ms")


def _write_rows(path: Path, rows: list[dict]) -> None:
    try:
        with path.open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)
    except OSError as exc:
        raise CommandError(f"{path}: cannot write: {exc.strerror}") from exc


def _cell(value) -> str:
    return f"{value:>11.3f}" if isinstance(value, float) else f"{'-':>11}"


def _store(options, summary, profile, collection_ids, user, overrides):
    eval_set, _ = eval_set_import(name=options["store"], path=Path(options["questions"]))
    collection = Collection.objects.get(pk=collection_ids[0]) if collection_ids else None
    return eval_run_record(
        eval_set=eval_set,
        metrics=summary,
        k=options["k"],
        scope=RunScope(
            collection=collection, profile=profile, settings=overrides, with_answers=options["answers"]
        ),
        created_by=user,
    )
