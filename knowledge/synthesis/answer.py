"""One answer from a retrieved context: the language model's, an extract, or an honest refusal.

The one place that decides how a question is answered (docs/design.md#answers):

- nothing answers it (no passages, or the answerability verdict refuses them): a refusal naming the
  closest matches, with no LLM call;
- no LLM configured, or it fails or times out: the extractive answer, labelled, quoting only the
  sources (and reading a cited page on, knowledge.retrieval.continuation);
- otherwise the LLM's answer, streamed, its [Source N] markers resolved to citations.

``Synthesis.respond`` is the standard path: it applies the verdict to the context (a new context, the
retrieved one is left as it was), announces it, then answers. ``Synthesis.answer`` answers a context
the caller already announced (the agentic loop's), and ``Synthesis.extract`` quotes one under a label
the caller chose (the loop's budget was spent, or its checks found unsupported claims). The first two
are generators: they yield ``Emitted`` events (the chat numbers and times them) and ``ContextReady``,
and return the ``Answer``. Every LLM
call made, also one cut off half-way, is in ``calls``; what went wrong on the way is in ``errors``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field, replace

from knowledge.clients.llm import TOKEN_SOURCE_ESTIMATE, LLMConfig, LLMError, call_record, stream_chat
from knowledge.models import ChatTurn
from knowledge.retrieval.continuation import with_continuations
from knowledge.retrieval.service import KnowledgeContext
from knowledge.synthesis import events as ev
from knowledge.synthesis.citations import resolve_citations
from knowledge.synthesis.events import ContextReady, Emitted
from knowledge.synthesis.extractive import LABEL_LLM_FAILED, LABEL_NO_LLM, extractive_answer, says_nothing
from knowledge.synthesis.prompts import Exchange, prompt_equivalent_tokens, synthesis_messages
from knowledge.synthesis.refusal import MAX_CLOSEST, closest_places, refusal_text
from knowledge.text.token_counts import llm_token_count

DIRECT_TEXT = (
    "That message does not ask about your documents, so nothing was searched. Ask a question about "
    "them and the answer will come from them, with citations."
)


@dataclass
class Answer:
    text: str
    mode: str
    citations: list = field(default_factory=list)
    dropped: int = 0
    label: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    token_source: str = TOKEN_SOURCE_ESTIMATE
    model: str = ""
    duration_ms: float = 0.0
    # The passages its [Source N] number, in that order (RetrievedChunks): the list shown beside it.
    # None for an answer that cites nothing (no results, no search): the retrieved list stands.
    passages: list | None = None
    # A refusal's closest matches (closest_places): each of its lines links to its place.
    closest: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class AnswerRequest:
    """What an answer needs besides its context.

    ``question`` is the one asked (the prompt's), ``resolved`` the follow-up resolved into a search
    question (what an extract is chosen for); ``history`` the conversation's earlier exchanges;
    ``llm`` the language model, None without one; ``llm_refused`` says its configuration was refused,
    so an extract says the model was unavailable rather than not configured.
    """

    question: str
    resolved: str
    history: list[Exchange] = field(default_factory=list)
    llm: LLMConfig | None = None
    llm_refused: bool = False


Steps = Generator[Emitted | ContextReady, None, Answer]


class Synthesis:
    """The answers of one question (a loop may answer it more than once); see the module's text."""

    def __init__(self, request: AnswerRequest) -> None:
        self.request = request
        self.calls: list[dict] = []
        self.errors: list[str] = []

    def respond(self, context: KnowledgeContext) -> Steps:
        context = answerable_only(context)
        yield ContextReady(context)
        return (yield from self.answer(context, self.request.llm))

    def answer(self, context: KnowledgeContext, llm: LLMConfig | None, *, deltas: bool = True) -> Steps:
        """The answer from ``context`` by ``llm`` (the loop passes its budgeted one), extracted
        without one; ``deltas=False`` keeps the LLM's text to the final answer."""
        if not context.sources:
            return self.refusal(context)
        if llm is None or not llm.configured:
            return self.extract(context, LABEL_LLM_FAILED if self.request.llm_refused else LABEL_NO_LLM)
        try:
            return (yield from self._written(context, llm, deltas=deltas))
        except LLMError as exc:
            self.errors.append(f"synthesis failed, extractive answer instead: {exc}")
            yield Emitted(ev.LLM_ERROR, {"error": str(exc), "fallback": ChatTurn.Mode.EXTRACTIVE})
            return self.extract(context, LABEL_LLM_FAILED)

    def extract(self, context: KnowledgeContext, label: str) -> Answer:
        """The sentences of the sources that answer, quoted; a refusal when none clears the floor."""
        extracted = extractive_answer(
            question=self.request.resolved,
            sources=with_continuations(
                context.sources, says_nothing=says_nothing, runners_up=context.runners_up
            ),
            label=label,
            cover_documents=context.cover_documents,
        )
        if not extracted.sentences:
            # Nothing in the sources clears the floor or shares anything with the question.
            return self.refusal(replace(context, closest=context.closest or context.primary_chunks))
        return Answer(
            text=extracted.text,
            mode=ChatTurn.Mode.EXTRACTIVE,
            citations=extracted.citations,
            label="extracted",
            input_tokens=self._prompt_tokens(context, context.context_text),
            output_tokens=llm_token_count(extracted.text),
            passages=extracted.passages,
        )

    def refusal(self, context: KnowledgeContext) -> Answer:
        text = refusal_text(context.closest, context.answerability)
        return Answer(
            text=text,
            mode=ChatTurn.Mode.NO_RESULTS,
            label="no_results",
            closest=closest_places(context.closest),
            input_tokens=self._prompt_tokens(context, ""),
            output_tokens=llm_token_count(text),
        )

    def _written(self, context: KnowledgeContext, llm: LLMConfig, *, deltas: bool) -> Steps:
        messages = synthesis_messages(
            config=context.config,
            context_text=context.context_text,
            history=self.request.history,
            question=self.request.question,
        )
        chunks = stream_chat(llm, messages)
        received, result = [], None
        try:
            while True:
                try:
                    delta = next(chunks)
                except StopIteration as done:
                    result = done.value
                    break
                received.append(delta)
                if deltas:
                    yield Emitted(ev.ANSWER_DELTA, {"text": delta})
        finally:
            chunks.close()
            if result is None:  # cut off before the LLM reported its usage: what it sent still counts
                self.calls.append(_estimated_call(llm, messages, "".join(received)))
        self.calls.append(call_record("synthesis", result))
        cited = resolve_citations(result.text, context.sources)
        return Answer(
            text=cited.text,
            mode=ChatTurn.Mode.LLM,
            citations=cited.citations,
            dropped=cited.dropped,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            token_source=result.token_source,
            model=result.model,
            duration_ms=result.duration_ms,
            passages=context.sources,
        )

    def _prompt_tokens(self, context: KnowledgeContext, context_text: str) -> int:
        """What the prompt would have cost: an extract's or a refusal's estimated input."""
        return prompt_equivalent_tokens(
            config=context.config, context_text=context_text, question=self.request.question
        )


def direct_answer() -> Answer:
    """A message that needs no search (the agentic classifier's "direct"): no facts, no LLM call."""
    return Answer(
        text=DIRECT_TEXT,
        mode=ChatTurn.Mode.NO_RESULTS,
        label="direct",
        input_tokens=0,
        output_tokens=llm_token_count(DIRECT_TEXT),
    )


def answerable_only(context: KnowledgeContext) -> KnowledgeContext:
    """The context, emptied when the answerability verdict says its chunks do not answer.

    The answer is then the honest "nothing on this", without an LLM call, naming the closest passages
    as such; the verdict and its evidence stay on the context for the retrieval event. A new context:
    the retrieved one is not changed.
    """
    if context.answerability is None or context.answerability.answerable:
        return context
    return replace(
        context,
        closest=context.primary_chunks[:MAX_CLOSEST],
        primary_chunks=[],
        referenced_chunks=[],
        blocks=[],
        total_tokens=0,
    )


def _estimated_call(llm: LLMConfig, messages: list[dict], text: str) -> dict:
    """A synthesis stopped half-way (the client left, the LLM failed): its tokens, estimated from the
    prompt and the text received, so that leaving early spends the quota too."""
    prompt = "\n".join(str(message.get("content", "")) for message in messages)
    return {
        "purpose": "synthesis (cut off)",
        "model": llm.model,
        "input_tokens": llm_token_count(prompt),
        "output_tokens": llm_token_count(text),
        "token_source": TOKEN_SOURCE_ESTIMATE,
        "duration_ms": 0,
    }
