"""The chat service: question -> follow-up resolution -> retrieval -> synthesis -> saved turn.

One path for pages, the API and the command line. ``chat_stream`` returns an
iterable of events produced as the work happens (docs/design.md#answers, see
knowledge.synthesis.events), so a view can send them as Server-Sent Events
with ``sse_stream`` while the answer is being written; ``chat_ask`` runs the
same stream to the end and returns the saved ChatTurn.

This module holds the order of the steps, the turn and its session, the quotas and the token
accounting. How the question is answered (the LLM, an extract or a refusal) is decided by the
synthesis component (knowledge.synthesis.answer), directly or inside the agentic loop
(knowledge.agents.loop); both yield their events here to be numbered, timed and stored. The events'
payloads are built in knowledge.chat.payloads, and the turn and its session are opened, filled and
saved in knowledge.chat.sessions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.core.exceptions import ImproperlyConfigured

from knowledge.access import QuestionScope
from knowledge.agents.loop import AgenticRun
from knowledge.agents.request import AgenticRequest
from knowledge.chat.followup import Resolution, resolve_question
from knowledge.chat.payloads import (
    complete_payload,
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
from knowledge.clients.llm import LLMConfig, call_record, llm_config
from knowledge.models import ChatTurn
from knowledge.parameter_values import resolved_config
from knowledge.parameters import validate_overrides
from knowledge.quotas import quota_question_take, quota_tokens_record
from knowledge.retrieval.service import MAX_QUESTION_CHARS, RetrievalRequest, question_clean, retrieve
from knowledge.synthesis import events as ev
from knowledge.synthesis.answer import AnswerRequest, Synthesis, direct_answer
from knowledge.synthesis.events import ContextReady, Event

logger = logging.getLogger(__name__)


class ChatStream:
    """The events of one question, produced as they happen; ``turn`` is set once it is saved.

    ``asked`` is the scope the edge resolved and checked (knowledge.access.question_scope_checked).
    Bad input (an empty question) raises KnowledgeError here, before anything is streamed. The
    question is counted against the asker's quotas here too (knowledge.quotas): over one,
    QuotaExceededError (429) is raised before anything is streamed or any LLM is called.
    """

    def __init__(self, *, user, question: str, asked: QuestionScope, overrides: dict | None = None) -> None:
        self.user = user
        self.question = question_clean(question)
        self.asked, self.session, self.profile = asked, asked.session, asked.profile
        self.overrides = validate_overrides(overrides or {})
        self.agentic = resolved_config(self.profile, self.overrides)["agentic.enabled"]
        self.turn: ChatTurn | None = None
        self.synthesis: Synthesis | None = None
        self._trace: dict | None = None
        self._stored: list[dict] = []
        self._seq = 0
        self._errors: list[str] = []
        self._durations: dict = {}
        self._calls: list[dict] = []  # the follow-up rewrite's LLM call
        self._calls_of_steps: list[dict] = []  # the agentic loop's budget's calls, as they are made
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
        self.turn = chat_turn_open(user=self.user, asked=self.asked, question=self.question)
        self.session = self.turn.session
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
        llm = _llm_or_none(self._errors)
        with _timed(self._durations, "resolve"):
            resolution, history = self._resolve(llm)
        yield self._emit(
            ev.RETRIEVAL_START,
            retrieval_start_payload(
                asked=self.asked,
                question=self.question,
                resolved=resolution.question,
                method=resolution.method,
            ),
        )
        self.synthesis = Synthesis(
            AnswerRequest(
                question=self.question,
                resolved=resolution.question,
                history=history,
                llm=llm,
                llm_refused=llm is None and bool(self._errors),
            )
        )
        if self.agentic:
            answer = yield from self._agentic_answer(resolution, llm)
        else:
            answer = yield from self._standard_answer(resolution)
        chat_turn_answer_set(
            turn=self.turn,
            answer=answer,
            resolved_question=resolution.question,
            calls=self._all_calls(),
            errors=self._all_errors(),
        )
        yield self._emit(
            ev.LLM_STEP,
            llm_step_payload(
                answer=answer,
                turn=self.turn,
                duration_ms=self._durations.get("synthesis"),
                calls=self._all_calls(),
                trace=self._trace,
            ),
        )
        yield self._emit(ev.TOKEN_UPDATE, self._account())
        yield self._emit(ev.FINAL_ANSWER, final_payload(answer, passages=self.turn.retrieved))
        yield self._finish()

    def _resolve(self, llm: LLMConfig | None) -> tuple[Resolution, list]:
        previous, history = chat_turn_history(turn=self.turn)
        resolution = resolve_question(self.question, previous=previous, history=history, llm=llm)
        resolution.question = resolution.question[:MAX_QUESTION_CHARS]
        if resolution.error:
            self._errors.append(resolution.error)
        if resolution.llm is not None:
            self._calls.append(call_record("rewrite", resolution.llm))
        return resolution, history

    def _standard_answer(self, resolution: Resolution):
        with _timed(self._durations, "retrieval"):
            context = retrieve(
                user=self.user,
                request=RetrievalRequest(
                    question=resolution.question, asked=self.asked, overrides=self.overrides
                ),
            )
        with _timed(self._durations, "synthesis"):
            return (yield from self._relayed(self.synthesis.respond(context)))

    def _agentic_answer(self, resolution: Resolution, llm: LLMConfig | None):
        """The agentic loop (knowledge.agents.loop), answering with this stream's synthesis."""
        request = AgenticRequest(
            user=self.user, question=resolution.question, asked=self.asked, overrides=self.overrides, llm=llm
        )
        run = AgenticRun(request, self.synthesis)
        self._calls_of_steps = run.budget.calls  # counted also when the client leaves half-way
        with _timed(self._durations, "agentic"):
            answer = yield from self._relayed(run.run())
        self._trace = {**run.trace.as_dict(), "settings": run.settings.as_dict()}
        return answer if answer is not None else direct_answer()

    def _relayed(self, steps):
        """The events a step of the answer yields, numbered and stored; returns what it returns. A
        ContextReady becomes knowledge_retrieval_complete, listing the context's passages."""
        try:
            while True:
                try:
                    item = next(steps)
                except StopIteration as done:
                    return done.value
                if isinstance(item, ContextReady):
                    payload = retrieval_payload(
                        context=item.context, duration_ms=self._durations.get("retrieval")
                    )
                    self.turn.retrieved = payload["sources"]
                    yield self._emit(ev.RETRIEVAL_COMPLETE, payload)
                else:
                    yield self._emit(item.name, item.data)
        finally:
            steps.close()  # a client that left stops the steps too (their calls still count)

    def _account(self) -> dict:
        self._count_llm_tokens()
        self.session = chat_session_tokens_add(session=self.session, turn=self.turn)
        return tokens_payload(turn=self.turn, session=self.session)

    def _finish(self) -> Event:
        self._durations["total"] = _ms_since(self._started)
        complete = self._emit(
            ev.EXECUTION_COMPLETE, complete_payload(turn=self.turn, duration_ms=self._durations["total"])
        )
        chat_turn_save(turn=self.turn, events=self._stored, durations_ms=self._durations)
        self._completed = True
        return complete

    def _abandon(self, reason: str) -> None:
        """Keep what was done: a turn that stopped half-way is saved with the reason."""
        if self.turn is None or self._completed:
            return
        self._errors.append(reason)
        self.turn.error = "\n".join(self._all_errors())
        try:
            self._durations["total"] = _ms_since(self._started)
            chat_turn_save(turn=self.turn, events=self._stored, durations_ms=self._durations)
            self._count_llm_tokens()
        except Exception:  # the original failure matters more than this one
            logger.exception("could not save the interrupted turn %s", self.turn.pk)

    def _count_llm_tokens(self) -> None:
        """The LLM calls' tokens go to the asker's ledger once, also when the stream stopped half-way
        (estimates of extracted answers are not LLM spend, and are not counted)."""
        if self._tokens_counted:
            return
        self._tokens_counted = True
        spent = sum(call["input_tokens"] + call["output_tokens"] for call in self._all_calls())
        quota_tokens_record(user_id=self.user.pk, tokens=spent)

    def _all_calls(self) -> list[dict]:
        """Every LLM call of the turn: the rewrite's, the answers', then the agentic steps'."""
        answers = self.synthesis.calls if self.synthesis is not None else []
        return self._calls + answers + self._calls_of_steps

    def _all_errors(self) -> list[str]:
        return self._errors + (self.synthesis.errors if self.synthesis is not None else [])

    def _emit(self, name: str, data: dict) -> Event:
        self._seq += 1
        event = Event(name, data, self._seq, _ms_since(self._started))
        if name not in ev.NOT_STORED:
            self._stored.append(event.as_dict())
        return event


def _llm_or_none(errors: list[str]) -> LLMConfig | None:
    """The LLM configuration, or None with the reason in ``errors`` when it is refused."""
    try:
        return llm_config()
    except ImproperlyConfigured as exc:
        logger.error("LLM configuration refused: %s", exc)
        errors.append(f"LLM configuration: {exc}")
        return None


@contextmanager
def _timed(durations: dict, name: str):
    started = time.perf_counter()
    try:
        yield
    finally:
        durations[name] = _ms_since(started)


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


# -- the public functions ------------------------------------------------------


def chat_stream(*, user, question: str, asked: QuestionScope, overrides: dict | None = None) -> ChatStream:
    """The events of answering ``user``'s ``question``, to iterate (e.g. into ``sse_stream``).

    ``asked`` is the scope an edge resolved and checked (knowledge.access.question_scope_checked);
    ``overrides`` are per-call parameter values (evaluation runs, the agentic MCP tool), below admin
    locks.
    """
    return ChatStream(user=user, question=question, asked=asked, overrides=overrides)


def chat_ask(
    *,
    user,
    question: str,
    asked: QuestionScope,
    overrides: dict | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> ChatTurn:
    """Answer a question (``chat_stream``'s arguments) and return the saved turn; ``on_event`` sees
    every event as it happens."""
    stream = chat_stream(user=user, question=question, asked=asked, overrides=overrides)
    for event in stream:
        if on_event is not None:
            on_event(event)
    return stream.turn
