"""The chat service: question -> follow-up resolution -> retrieval -> synthesis -> saved turn.

One path for pages, the API and the command line. ``chat_stream`` returns an
iterable of events produced as the work happens (docs/design.md#answers, see
knowledge.synthesis.events), so a view can send them as Server-Sent Events
with ``sse_stream`` while the answer is being written; ``chat_ask`` runs the
same stream to the end and returns the saved ChatTurn.

The answer comes from the configured LLM; with none, or when it fails or
times out, from the extractive synthesiser (labelled, quoting only the
sources); with nothing relevant retrieved, an honest "nothing on this" with
no LLM call. Every turn is saved with its events, so it can be replayed.

The events' payloads are built in knowledge.chat.payloads, and the turn and its session are opened,
filled and saved in knowledge.chat.sessions; this module holds the order of the steps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

from django.core.exceptions import ImproperlyConfigured

from knowledge.access import QuestionScope, question_scope_for
from knowledge.agents.loop import AgenticRun
from knowledge.chat.payloads import (
    Answer,
    call_summary,
    complete_payload,
    estimated_call,
    final_payload,
    llm_step_payload,
    retrieval_payload,
    retrieval_start_payload,
    start_payload,
    tokens_payload,
)
from knowledge.chat.sessions import (
    chat_session_tokens_add,
    chat_turn_answer_set,
    chat_turn_history,
    chat_turn_open,
    chat_turn_save,
)
from knowledge.clients.llm import LLMConfig, LLMError, llm_config, stream_chat
from knowledge.models import ChatSession, ChatTurn, Profile
from knowledge.parameter_values import resolved_config
from knowledge.parameters import validate_overrides
from knowledge.quotas import quota_question_take, quota_tokens_record
from knowledge.retrieval.continuation import with_continuations
from knowledge.retrieval.service import (
    MAX_QUESTION_CHARS,
    KnowledgeContext,
    RetrievalRequest,
    question_clean,
    retrieve,
)
from knowledge.synthesis import events as ev
from knowledge.synthesis.citations import resolve_citations
from knowledge.synthesis.events import Event
from knowledge.synthesis.extractive import LABEL_LLM_FAILED, LABEL_NO_LLM, extractive_answer, says_nothing
from knowledge.synthesis.followup import Resolution, resolve_question
from knowledge.synthesis.prompts import prompt_equivalent_tokens, synthesis_messages
from knowledge.synthesis.refusal import MAX_CLOSEST, refusal_text
from knowledge.text.token_counts import llm_token_count

logger = logging.getLogger(__name__)

DIRECT_TEXT = (
    "That message does not ask about your documents, so nothing was searched. Ask a question about "
    "them and the answer will come from them, with citations."
)


class ChatStream:
    """The events of one question, produced as they happen; ``turn`` is set once it is saved.

    Bad input (empty question, unknown session, no collections) raises
    KnowledgeError here, before anything is streamed. ``asked`` is the scope an edge resolved
    (knowledge.access.question_scope_checked); without it, the profile, collections and session
    given are resolved here, once. Every later step takes ``self.asked``. The question is counted
    against the asker's quotas here too (knowledge.quotas): over one, QuotaExceededError (429) is
    raised before anything is streamed or any LLM is called.
    """

    def __init__(
        self,
        *,
        user,
        question: str,
        asked: QuestionScope | None = None,
        profile: Profile | int | None = None,
        collection_ids: list[int] | None = None,
        session: ChatSession | int | None = None,
        overrides: dict | None = None,
    ) -> None:
        self.user = user
        self.question = question_clean(question)
        if asked is None:
            asked = question_scope_for(
                user=user, profile=profile, collection_ids=collection_ids, session=session
            )
        self.asked, self.session, self.profile = asked, asked.session, asked.profile
        self.overrides = validate_overrides(overrides or {})
        self.agentic = resolved_config(self.profile, self.overrides)["agentic.enabled"]
        self._trace: dict | None = None
        self.turn: ChatTurn | None = None
        self._stored: list[dict] = []
        self._seq = 0
        self._errors: list[str] = []
        self._durations: dict = {}
        self._calls: list[dict] = []
        self._completed = False
        self._tokens_counted = False
        quota_question_take(user=user)

    def __iter__(self) -> Iterator[Event]:
        if self.turn is not None:
            raise RuntimeError("a ChatStream runs once; ask again with a new one")
        return self._run()

    # -- the steps, in order -------------------------------------------------

    def _run(self) -> Iterator[Event]:
        self._started = time.perf_counter()
        self._open_turn()
        try:
            yield from self._steps()
        except GeneratorExit:
            self._abandon("the stream was closed before the answer was complete")
            raise
        except BaseException as exc:
            self._abandon(f"failed: {exc}")
            raise

    def _steps(self) -> Iterator[Event]:
        yield self._emit(
            ev.EXECUTION_START,
            start_payload(session=self.session, turn=self.turn, question=self.question, profile=self.profile),
        )
        llm = self._llm()
        resolution = self._timed("resolve", self._resolve, llm)
        yield self._emit(
            ev.RETRIEVAL_START,
            retrieval_start_payload(
                asked=self.asked,
                question=self.question,
                resolved=resolution.question,
                method=resolution.method,
            ),
        )
        if self.agentic:
            answer = yield from self._agentic_answer(resolution, llm)
        else:
            answer = yield from self._standard_answer(resolution, llm)
        chat_turn_answer_set(
            turn=self.turn,
            answer=answer,
            resolved_question=resolution.question,
            calls=self._calls,
            errors=self._errors,
        )
        yield self._emit(ev.LLM_STEP, self._llm_step_payload(answer))
        yield self._emit(ev.TOKEN_UPDATE, self._account())
        yield self._emit(ev.FINAL_ANSWER, final_payload(answer, passages=self.turn.retrieved))
        yield self._finish()

    def _open_turn(self) -> None:
        self.turn = chat_turn_open(user=self.user, asked=self.asked, question=self.question)
        self.session = self.turn.session

    def _llm(self) -> LLMConfig | None:
        try:
            return llm_config()
        except ImproperlyConfigured as exc:
            logger.error("LLM configuration refused: %s", exc)
            self._errors.append(f"LLM configuration: {exc}")
            return None

    def _resolve(self, llm: LLMConfig | None) -> Resolution:
        previous, history = chat_turn_history(turn=self.turn)
        resolution = resolve_question(self.question, previous=previous, history=history, llm=llm)
        resolution.question = resolution.question[:MAX_QUESTION_CHARS]
        if resolution.error:
            self._errors.append(resolution.error)
        if resolution.llm is not None:
            self._calls.append(call_summary("rewrite", resolution.llm))
        return resolution

    def _standard_answer(self, resolution: Resolution, llm: LLMConfig | None):
        context = self._timed("retrieval", self._retrieve, resolution.question)
        yield self._retrieval_event(context)
        synthesis_started = time.perf_counter()
        answer = yield from self._answer(context, resolution, llm)
        self._durations["synthesis"] = _ms_since(synthesis_started)
        return answer

    def _agentic_answer(self, resolution: Resolution, llm: LLMConfig | None):
        """The agentic loop (knowledge.agents.loop) with this stream's events and answers."""

        def generate(context, step_llm, *, deltas, label=None):
            return self._answer(context, resolution, step_llm, deltas=deltas, label=label)

        run = AgenticRun(
            user=self.user,
            question=resolution.question,
            asked=self.asked,
            overrides=self.overrides,
            llm=llm,
            emit=self._emit,
            on_context=self._retrieval_event,
            generate=generate,
        )
        started = time.perf_counter()
        try:
            _context, answer = yield from run.run()
        finally:  # also when the client left half-way: the steps' calls were made and count
            self._calls.extend(run.budget.calls)
        self._durations["agentic"] = _ms_since(started)
        self._trace = {**run.trace.as_dict(), "settings": run.settings.as_dict()}
        return answer if answer is not None else self._direct()

    def _retrieve(self, question: str) -> KnowledgeContext:
        context = retrieve(
            user=self.user,
            request=RetrievalRequest(question=question, asked=self.asked, overrides=self.overrides),
        )
        return answerable_only(context)

    def _answer(
        self,
        context: KnowledgeContext,
        resolution: Resolution,
        llm: LLMConfig | None,
        *,
        deltas: bool = True,
        label: str | None = None,
    ):
        if not context.sources:
            return self._no_results(context)
        if llm is None or not llm.configured:
            label = label or (LABEL_LLM_FAILED if self._errors and llm is None else LABEL_NO_LLM)
            return self._extractive(context, resolution, label)
        try:
            return (yield from self._llm_answer(context, llm, deltas=deltas))
        except LLMError as exc:
            self._errors.append(f"synthesis failed, extractive answer instead: {exc}")
            yield self._emit(ev.LLM_ERROR, {"error": str(exc), "fallback": ChatTurn.Mode.EXTRACTIVE})
            return self._extractive(context, resolution, LABEL_LLM_FAILED)

    def _llm_answer(self, context: KnowledgeContext, llm: LLMConfig, *, deltas: bool = True):
        _previous, history = chat_turn_history(turn=self.turn)
        messages = synthesis_messages(
            config=context.config, context_text=context.context_text, history=history, question=self.question
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
                    yield self._emit(ev.ANSWER_DELTA, {"text": delta})
        finally:
            chunks.close()
            if result is None:  # cut off before the LLM reported its usage: what it sent still counts
                self._calls.append(estimated_call(llm, messages, "".join(received)))
        self._calls.append(call_summary("synthesis", result))
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

    def _extractive(self, context: KnowledgeContext, resolution: Resolution, label: str) -> Answer:
        extracted = extractive_answer(
            question=resolution.question,
            sources=with_continuations(
                context.sources, says_nothing=says_nothing, runners_up=context.runners_up
            ),
            label=label,
            cover_documents=context.cover_documents,
        )
        if not extracted.sentences:
            # Nothing in the sources clears the floor or shares anything with the question.
            context.closest = context.closest or context.primary_chunks
            return self._no_results(context)
        return Answer(
            text=extracted.text,
            mode=ChatTurn.Mode.EXTRACTIVE,
            citations=extracted.citations,
            label="extracted",
            input_tokens=prompt_equivalent_tokens(
                config=context.config, context_text=context.context_text, question=self.question
            ),
            output_tokens=llm_token_count(extracted.text),
            passages=extracted.passages,
        )

    def _direct(self) -> Answer:
        """A message that needs no search (the agentic classifier's "direct"): no facts, no LLM call."""
        return Answer(
            text=DIRECT_TEXT,
            mode=ChatTurn.Mode.NO_RESULTS,
            label="direct",
            input_tokens=0,
            output_tokens=llm_token_count(DIRECT_TEXT),
        )

    def _no_results(self, context: KnowledgeContext) -> Answer:
        text = refusal_text(context.closest, context.answerability)
        return Answer(
            text=text,
            mode=ChatTurn.Mode.NO_RESULTS,
            label="no_results",
            input_tokens=prompt_equivalent_tokens(
                config=context.config, context_text="", question=self.question
            ),
            output_tokens=llm_token_count(text),
        )

    def _account(self) -> dict:
        self._count_llm_tokens()
        self.session = chat_session_tokens_add(session=self.session, turn=self.turn)
        return tokens_payload(turn=self.turn, session=self.session)

    def _finish(self) -> Event:
        self._durations["total"] = _ms_since(self._started)
        complete = self._emit(
            ev.EXECUTION_COMPLETE, complete_payload(turn=self.turn, duration_ms=self._durations["total"])
        )
        self._save()
        self._completed = True
        return complete

    def _save(self) -> None:
        chat_turn_save(turn=self.turn, events=self._stored, durations_ms=self._durations)

    def _abandon(self, reason: str) -> None:
        """Keep what was done: a turn that stopped half-way is saved with the reason."""
        if self.turn is None or self._completed:
            return
        self._errors.append(reason)
        self.turn.error = "\n".join(self._errors)
        self._save_quietly()

    def _count_llm_tokens(self) -> None:
        """The LLM calls' tokens go to the asker's ledger once, also when the stream stopped half-way
        (estimates of extracted answers are not LLM spend, and are not counted)."""
        if self._tokens_counted:
            return
        self._tokens_counted = True
        spent = sum(call["input_tokens"] + call["output_tokens"] for call in self._calls)
        quota_tokens_record(user_id=self.user.pk, tokens=spent)

    def _save_quietly(self) -> None:
        try:
            self._durations["total"] = _ms_since(self._started)
            self._save()
            self._count_llm_tokens()
        except Exception:  # the original failure matters more than this one
            logger.exception("could not save the interrupted turn %s", self.turn.pk)

    # -- events ----------------------------------------------------------------

    def _emit(self, name: str, data: dict) -> Event:
        self._seq += 1
        event = Event(name, data, self._seq, _ms_since(self._started))
        if name not in ev.NOT_STORED:
            self._stored.append(event.as_dict())
        return event

    def _timed(self, name: str, function, *args):
        started = time.perf_counter()
        try:
            return function(*args)
        finally:
            self._durations[name] = _ms_since(started)

    def _retrieval_event(self, context: KnowledgeContext) -> Event:
        payload = retrieval_payload(context=context, duration_ms=self._durations.get("retrieval"))
        self.turn.retrieved = payload["sources"]
        return self._emit(ev.RETRIEVAL_COMPLETE, payload)

    def _llm_step_payload(self, answer: Answer) -> dict:
        return llm_step_payload(
            answer=answer,
            turn=self.turn,
            duration_ms=self._durations.get("synthesis"),
            calls=self._calls,
            trace=self._trace,
        )


def answerable_only(context: KnowledgeContext) -> KnowledgeContext:
    """The context, emptied when the answerability verdict says its chunks do not answer.

    The chat then gives the honest "nothing on this" answer without an LLM call, naming the closest
    passages as such; the verdict and its evidence stay on the context for the retrieval event.
    """
    if context.answerability is not None and not context.answerability.answerable:
        context.closest = context.primary_chunks[:MAX_CLOSEST]
        context.primary_chunks, context.referenced_chunks, context.blocks = [], [], []
        context.total_tokens = 0
    return context


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


# -- the public functions ------------------------------------------------------


def chat_stream(
    *,
    user,
    question: str,
    asked: QuestionScope | None = None,
    profile: Profile | int | None = None,
    collection_ids: list[int] | None = None,
    session: ChatSession | int | None = None,
    overrides: dict | None = None,
) -> ChatStream:
    """The events of answering ``user``'s ``question``, to iterate (e.g. into ``sse_stream``).

    The scope is ``asked``, the one an edge resolved and checked (knowledge.access.question_scope_checked),
    or else ``profile``, ``collection_ids`` and ``session``, resolved here; ``overrides`` are per-call
    parameter values (evaluation runs, the agentic MCP tool), below admin locks.
    """
    return ChatStream(
        user=user,
        question=question,
        asked=asked,
        profile=profile,
        collection_ids=collection_ids,
        session=session,
        overrides=overrides,
    )


def chat_ask(
    *,
    user,
    question: str,
    asked: QuestionScope | None = None,
    profile: Profile | int | None = None,
    collection_ids: list[int] | None = None,
    session: ChatSession | int | None = None,
    overrides: dict | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> ChatTurn:
    """Answer a question (``chat_stream``'s arguments) and return the saved turn; ``on_event`` sees
    every event as it happens."""
    stream = chat_stream(
        user=user,
        question=question,
        asked=asked,
        profile=profile,
        collection_ids=collection_ids,
        session=session,
        overrides=overrides,
    )
    for event in stream:
        if on_event is not None:
            on_event(event)
    return stream.turn
