"""Ask a profile or a collection a question, as a given user, and print the cited answer.

    knowledge_ask (--profile NAME | --collection NAME) [--user USERNAME]
                  [--session ID] [--json] QUESTION

A collection alone is searched with the global settings. --session continues
a conversation (follow-ups are resolved from its history). Without --json the
answer is printed as it is written; with --json one object is printed:
answer, mode, citations, dropped_citations, tokens, events, session (and turn,
resolved_question, model, error, durations_ms).
"""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_find
from knowledge.chat import chat_ask, turn_summary
from knowledge.collections import collection_find
from knowledge.errors import KnowledgeError
from knowledge.profiles import profile_find
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
        parser.add_argument("question")

    def handle(self, *args, **options):
        try:
            user = user_find(options["user"]) if options["user"] else None
            profile, collection_ids, user = _target(options, user)
            turn = chat_ask(
                user=user,
                question=options["question"],
                profile=profile,
                collection_ids=collection_ids,
                session=options["session"],
                on_event=None if options["json"] else self._show_progress,
            )
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(turn_summary(turn), ensure_ascii=False))
        else:
            self._print(turn)

    def _show_progress(self, event) -> None:
        # The LLM's text as it arrives; the final, citation-checked answer is printed after.
        if event.name == ev.ANSWER_DELTA:
            self.stderr.write(event.data["text"], ending="")
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


def _target(options, user):
    if options["profile"]:
        profile = profile_find(options["profile"])
        return profile, None, user or profile.owner or _operator()
    collection = collection_find(options["collection"], owner=user, any_owner=True)
    return None, [collection.pk], user or collection.owner or _operator()


def _operator():
    operator = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
    if operator is None:
        raise KnowledgeError("admin-owned collection and no operator account; pass --user")
    return operator
