"""The synthesis component on its own: a context in, events and an Answer out, no turn and no database.

The contexts are built from unsaved chunks, as retrieval returns them; the language model is the
loopback OpenAI-compatible server (real HTTP through the real ``openai`` client).
"""

from __future__ import annotations

import re

import pytest

from knowledge.clients.llm import LLMConfig
from knowledge.models import Chunk, Document
from knowledge.parameters import PARAMETERS
from knowledge.retrieval.answerability import REASON_MISSING_TERM, Evidence, Verdict
from knowledge.retrieval.service import RetrievedChunk, context_from_chunks
from knowledge.synthesis import events as ev
from knowledge.synthesis.answer import AnswerRequest, Synthesis, answerable_only, direct_answer
from knowledge.synthesis.citations import answer_html
from knowledge.synthesis.events import ContextReady, Emitted
from knowledge.synthesis.extractive import LABEL_LLM_FAILED, LABEL_NO_LLM
from knowledge.synthesis.refusal import CLOSEST_HEADING
from tests.synthesis.openai_server import Reply, llm_server  # noqa: F401 (a fixture)

QUESTION = "Why do cars seem to roll uphill on a gravity hill?"
PASSAGES = (
    ("A gravity hill is a place where a downhill slope appears to be uphill.", "heading=Gravity hill"),
    (
        "The illusion comes from an obstructed horizon: the eye has no true level to judge by.",
        "heading=Cause",
    ),
)
DEFAULTS = {key: parameter.default for key, parameter in PARAMETERS.items()}


def retrieved(number: int, content: str, source_ref: str) -> RetrievedChunk:
    document = Document(pk=number, filename="gravity_hill.md", title="Gravity hill")
    chunk = Chunk(pk=number, document=document, collection_id=1, content=content, source_ref=source_ref)
    return RetrievedChunk(chunk, {"similarity": 0.7})


def context(verdict: Verdict | None = None):
    made = context_from_chunks(
        question=QUESTION,
        config=DEFAULTS,
        scope=None,
        ranked=[[retrieved(n, text, ref) for n, (text, ref) in enumerate(PASSAGES, start=1)]],
    )
    made.answerability = verdict
    return made


def refused() -> Verdict:
    evidence = Evidence(0.3, 0.0, 0.2, 0.0, missing_terms=("zeppelin",))
    return Verdict(False, 0.1, 0.5, REASON_MISSING_TERM, evidence)


def run(steps) -> tuple[list, object]:
    """Every item the steps yield, and the Answer they return."""
    items = []
    while True:
        try:
            items.append(next(steps))
        except StopIteration as done:
            return items, done.value


def llm(server) -> LLMConfig:
    return LLMConfig(base_url=server.url, api_key="test-key", model="test-model", timeout=10, max_retries=0)


def test_a_refused_verdict_answers_with_the_closest_matches_and_leaves_the_retrieved_context_as_it_was(
    llm_server,  # noqa: F811
):
    retrieved_context = context(refused())
    synthesis = Synthesis(AnswerRequest(question=QUESTION, resolved=QUESTION, llm=llm(llm_server)))
    items, answer = run(synthesis.respond(retrieved_context))
    announced = items[0]
    assert isinstance(announced, ContextReady) and len(items) == 1
    assert announced.context is not retrieved_context and announced.context.sources == []
    assert len(announced.context.closest) == 2
    assert len(retrieved_context.sources) == 2 and retrieved_context.closest == []  # not changed
    assert answer.mode == "no_results" and "zeppelin" in answer.text and CLOSEST_HEADING in answer.text
    assert llm_server.requests == [] and synthesis.calls == []  # a refusal makes no LLM call
    # Each closest match's line links to its place, like a citation chip; the excerpt stays text.
    assert [place["source_ref"] for place in answer.closest] == ["heading=Gravity hill", "heading=Cause"]
    links = re.findall(
        r'<a class="closest-match" href="([^"]+)">([^<]+)</a>', answer_html(answer.text, [], answer.closest)
    )
    assert [href for href, _ in links] == [place["url"] for place in answer.closest]
    assert links[0][1].startswith("gravity_hill.md, ")


def test_without_a_language_model_the_sources_are_quoted_under_a_label_that_says_why():
    for refused_config, label in ((False, LABEL_NO_LLM), (True, LABEL_LLM_FAILED)):
        request = AnswerRequest(question=QUESTION, resolved=QUESTION, llm=None, llm_refused=refused_config)
        items, answer = run(Synthesis(request).respond(context()))
        assert [type(item) for item in items] == [ContextReady]
        assert answer.mode == "extractive" and answer.text.startswith(label), answer.text
        assert answer.citations and answer.citations[0].source_ref.startswith("heading=")
        assert answer.input_tokens > 0 and answer.output_tokens > 0  # what the prompt would have cost


def test_the_language_models_answer_streams_and_its_markers_become_citations(llm_server):  # noqa: F811
    llm_server.script(Reply(text="The horizon is hidden, so the slope is misjudged [Source 2]."))
    synthesis = Synthesis(AnswerRequest(question=QUESTION, resolved=QUESTION, llm=llm(llm_server)))
    items, answer = run(synthesis.respond(context()))
    deltas = [item.data["text"] for item in items if isinstance(item, Emitted)]
    assert all(item.name == ev.ANSWER_DELTA for item in items[1:]) and deltas
    assert "".join(deltas).startswith("The horizon is hidden")
    assert answer.mode == "llm" and [c.source_ref for c in answer.citations] == ["heading=Cause"]
    assert (answer.input_tokens, answer.output_tokens) == (321, 47)
    assert [call["purpose"] for call in synthesis.calls] == ["synthesis"]
    prompt = llm_server.requests[-1].system
    assert "obstructed horizon" in prompt and llm_server.requests[-1].messages[-1]["content"] == QUESTION


def test_answers_without_deltas_keep_the_text_to_the_answer(llm_server):  # noqa: F811
    synthesis = Synthesis(AnswerRequest(question=QUESTION, resolved=QUESTION))
    items, answer = run(synthesis.answer(context(), llm(llm_server), deltas=False))
    assert items == [] and answer.mode == "llm"


def test_a_failing_language_model_falls_back_to_the_extract_with_the_reason(llm_server):  # noqa: F811
    llm_server.script(Reply(status=500, error_message="the model is down"))
    synthesis = Synthesis(AnswerRequest(question=QUESTION, resolved=QUESTION, llm=llm(llm_server)))
    items, answer = run(synthesis.respond(context()))
    errors = [item for item in items if isinstance(item, Emitted) and item.name == ev.LLM_ERROR]
    assert len(errors) == 1 and errors[0].data["fallback"] == "extractive"
    assert answer.mode == "extractive" and answer.text.startswith(LABEL_LLM_FAILED)
    assert len(synthesis.errors) == 1 and "extractive answer instead" in synthesis.errors[0]


def test_an_answer_cut_off_half_way_still_counts_what_was_sent(llm_server):  # noqa: F811
    llm_server.script(Reply(text="One two three four five six seven eight nine ten [Source 1]."))
    synthesis = Synthesis(AnswerRequest(question=QUESTION, resolved=QUESTION, llm=llm(llm_server)))
    steps = synthesis.respond(context())
    assert isinstance(next(steps), ContextReady)
    assert next(steps).name == ev.ANSWER_DELTA
    steps.close()  # the client left
    assert [call["purpose"] for call in synthesis.calls] == ["synthesis (cut off)"]
    assert synthesis.calls[0]["input_tokens"] > 0 and synthesis.calls[0]["output_tokens"] > 0


def test_an_answerable_context_is_kept_as_it_is():
    kept = context()
    assert answerable_only(kept) is kept


def test_a_message_that_asks_nothing_gets_the_direct_answer_without_facts():
    answer = direct_answer()
    assert answer.mode == "no_results" and answer.label == "direct" and answer.citations == []


@pytest.fixture(autouse=True)
def no_database(django_db_blocker):
    """These tests must not need the database: any query fails them."""
    with django_db_blocker.block():
        yield
