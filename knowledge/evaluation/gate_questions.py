"""The questions a collection's releases are measured on (knowledge.evaluation.gate).

In this order, up to KNOWLEDGE_RELEASE_GATE_QUESTIONS: the answers users rated helpful that cite
only this collection's documents (their citations are the expected sources), the question sets an
operator linked to the collection, and, when an LLM is configured, questions it writes from
sampled passages, each kept only if at least one release retrieves its passage and judges that
what it found answers the question.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Func, TextField
from django.db.models.functions import Cast

from knowledge.clients.llm import LLMError, complete, llm_config
from knowledge.evaluation.questions import EvalQuestion, normalise, parse_question
from knowledge.evaluation.release_request import release_request
from knowledge.evaluation.runner import chunk_source
from knowledge.evaluation.store import eval_set_questions
from knowledge.models import ChatTurn, Chunk, Document, Release
from knowledge.retrieval.service import retrieve
from knowledge.services.feedback import feedback_question, rated_turns
from knowledge.text.json_reply import json_object, text_field

logger = logging.getLogger(__name__)

GENERATED_QUESTIONS = 12
PASSAGE_CHARS = 1500
_WRITE_QUESTION = (
    "Write one question a user of this document collection could ask that the passage below "
    "answers, in the user's own words (do not copy its phrases). Reply with JSON: "
    '{"question": "..."}.\n\nPassage:\n'
)


@dataclass
class GateQuestions:
    items: list[EvalQuestion] = field(default_factory=list)
    origins: dict = field(default_factory=lambda: {"rated": 0, "imported": 0, "generated": 0})
    notes: list[str] = field(default_factory=list)

    def add(self, question: EvalQuestion, origin: str) -> bool:
        if len(self.items) >= settings.KNOWLEDGE_RELEASE_GATE_QUESTIONS:
            return False
        if any(normalise(q.question) == normalise(question.question) for q in self.items):
            return True
        self.items.append(question)
        self.origins[origin] += 1
        return True

    def nothing_reason(self) -> str:
        return "; ".join(self.notes) or "no questions"


def gate_questions(*, collection, reader, releases: list[Release]) -> GateQuestions:
    found = GateQuestions()
    _rated(collection, found)
    _imported(collection, found)
    _generated(collection, reader, releases, found)
    return found


def _rated(collection, found: GateQuestions) -> None:
    names = {
        normalise(n)
        for n in Document.objects.filter(collection=collection).values_list("filename", flat=True)
    }
    kept = 0
    for turn in rated_turns(rating=ChatTurn.Rating.UP).iterator():
        question = parse_question(json.dumps(feedback_question(turn)))
        if not question.expected or not all(document in names for document, _ in question.expected):
            continue  # cites another collection's documents, or nothing
        if not found.add(question, "rated"):
            break
        kept += 1
    if not kept:
        found.notes.append("no answer citing this collection has been rated helpful")


def _imported(collection, found: GateQuestions) -> None:
    sets = list(collection.gate_eval_sets.all())
    if not sets:
        found.notes.append("no question set is linked to the collection")
    for eval_set in sets:
        for question in eval_set_questions(eval_set=eval_set):
            if not found.add(question, "imported"):
                return


def _generated(collection, reader, releases: list[Release], found: GateQuestions) -> None:
    config = llm_config()
    if not config.configured:
        found.notes.append(f"no questions written from passages: no LLM ({config.status})")
        return
    for chunk in _sampled_passages(collection, releases[0]):
        try:
            reply = complete(
                config, [{"role": "user", "content": _WRITE_QUESTION + chunk.content[:PASSAGE_CHARS]}]
            )
            text = text_field(json_object(reply.text), "question", max_chars=500)
        except (LLMError, ValueError) as exc:
            found.notes.append(f"the LLM wrote no question for a passage: {exc}")
            continue
        source = chunk_source(chunk)
        question = EvalQuestion(
            id=f"generated-{chunk.pk}", question=text, expected=(source,), kind="generated"
        )
        if not _retrieved_by_any(question, reader, collection.pk, releases):
            continue  # no release finds its passage: a question about nothing the index can show
        if not found.add(question, "generated"):
            return


def _sampled_passages(collection, release: Release) -> list[Chunk]:
    """A sample of the serving release's passages, in an order that looks random but is the same
    run after run (so two gates of one collection ask about the same passages)."""
    chunks = Chunk.objects.filter(
        collection=collection,
        chunk_profile_id=release.chunk_profile_id,
        embedding_model=release.embedding_model,
    ).select_related("document")
    spread = Func(Cast("id", TextField()), function="md5")
    return list(chunks.annotate(_spread=spread).order_by("_spread")[:GENERATED_QUESTIONS])


def _retrieved_by_any(question: EvalQuestion, reader, collection_id: int, releases: list[Release]) -> bool:
    for release in releases:
        request = release_request(
            question.question, reader=reader, collection_id=collection_id, release=release
        )
        context = retrieve(user=reader, request=request)
        found = question.expected[0] in {chunk_source(r.chunk) for r in context.primary_chunks}
        if found and context.answerable:  # among the results, and judged to answer the question
            return True
    return False
