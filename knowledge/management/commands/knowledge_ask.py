"""Ask a profile or a collection a question, as a given user, and print the cited answer.

    knowledge_ask (--profile NAME | --collection NAME) [--user USERNAME]
                  [--session ID] [--json] [--set KEY=VALUE ...] QUESTION

A collection alone is searched with the global settings. --session continues
a conversation (follow-ups are resolved from its history). Without --json the
answer is printed as it is written; with --json one object is printed:
answer, mode, citations, dropped_citations, tokens, events, session (and turn,
resolved_question, model, error, durations_ms). --set overrides knowledge
parameters for this question only, e.g. --set agentic.enabled=true (the
agentic loop's steps are printed as they run).
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from config.base.errors import KnowledgeError
from knowledge.access import question_scope_checked
from knowledge.chat import chat_ask, turn_summary
from knowledge.management.targets import parse_settings, resolve_target
from knowledge.parameters import ConfigError
from knowledge.synthesis import events as ev


class Command(BaseCommand):
    help = "Answer a question from a profile's or a collection's documents, with citations."

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--profile", metavar="NAME")
        target.add_argument("--collection", metavar="NAME")
        parser.add_argument("--user", metavar="USERNAME", help="Ask as this user (default: the owner).")
        parser.add_argument("--session", metavar="ID", help="Continue this chat session.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        parser.add_argument("question")

    def handle(self, *args, **options):
        try:
            overrides = parse_settings(options["set"])
            profile, collection_ids, user = resolve_target(
                profile=options["profile"], collection=options["collection"], username=options["user"]
            )
            asked = question_scope_checked(
                user=user, profile=profile, collection_ids=collection_ids, session=options["session"]
            )
            turn = chat_ask(
                user=user,
                question=options["question"],
                asked=asked,
                on_event=None if options["json"] else self._show_progress,
                overrides=overrides,
            )
        except (KnowledgeError, ConfigError) as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(turn_summary(turn), ensure_ascii=False))
        else:
            self._print(turn)

    def _show_progress(self, event) -> None:
        # The LLM's text as it arrives; the final, citation-checked answer is printed after.
        if event.name == ev.ANSWER_DELTA:
            self.stderr.write(event.data["text"], ending="")
        elif event.name == ev.AGENT_STEP:
            step = event.data
            note = f" - {step['note']}" if step["note"] else ""
            self.stderr.write(f"[{step['step']} ({step['method']}) {step['duration_ms']:.0f} ms{note}]")
        elif event.name == ev.LLM_ERROR:
            self.stderr.write(f"\n[language model failed: {event.data['error']}; extracting instead]")
        elif event.name == ev.FINAL_ANSWER and event.data["mode"] == "llm":
            self.stderr.write("")

    def _print(self, turn) -> None:
        out = self.stdout
        out.write(turn.answer)
        if turn.cited_sources:
            out.write("\nSources:")
            for c in turn.cited_sources:
                out.write(f"  [{c['n']}] {c['document']} ({c['source_ref']})  {c['url']}")
        if turn.dropped_citations:
            out.write(f"\n{turn.dropped_citations} citation(s) to no retrieved source were removed.")
        if turn.resolved_question and turn.resolved_question != turn.question:
            out.write(f"\nFollow-up read as: {turn.resolved_question}")
        out.write(
            f"\nmode: {turn.mode}  tokens: {turn.input_tokens} in / {turn.output_tokens} out "
            f"({turn.token_source})  session: {turn.session_id}  turn: {turn.index}"
        )
        if turn.error:
            out.write(f"LLM problem: {turn.error}")
