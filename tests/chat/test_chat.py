"""The chat service end to end: real documents in PostgreSQL, real retrieval, real embeddings,
and the real openai client talking to a loopback OpenAI-compatible server.

The corpus is ingested once for the module through the upload service (tasks
commit and run), outside the per-test transactions; each test's sessions and
turns roll back with the test.
"""

from __future__ import annotations

import io
import json
import re
import time
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from config.base.errors import KnowledgeError, NotFoundError
from knowledge.chat import NO_RESULTS_TEXT, sse_replay, sse_stream
from knowledge.models import ChatSession, ChatTurn, Chunk, Document, Profile, ProfileCollection
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_delete, document_upload
from knowledge.synthesis import events as ev
from knowledge.synthesis.extractive import LABEL_LLM_FAILED, LABEL_NO_LLM, normalise
from knowledge.synthesis.prompts import (
    DEFAULT_SYSTEM_PROMPT,
    REWRITE_SYSTEM_PROMPT,
    history_budget,
    prompt_equivalent_tokens,
)
from knowledge.synthesis.refusal import CLOSEST_HEADING
from knowledge.text.token_counts import llm_token_count
from tests.asking import chat_ask, chat_stream, request_for
from tests.conftest import CORPUS
from tests.synthesis.openai_server import Reply

# The loopback LLM server's fixtures: llm_server, llm_env, no_llm.
pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db

FILES = ("text/gravity_hill.md", "office/dummy.docx", "html/flag_day.html")
COLLECTION = "synthesis corpus"
GRAVITY_QUESTION = "Why does a car appear to roll uphill on a gravity hill?"
NOTHING_QUESTION = "What is the boiling point of liquid mercury?"
QUOTE_LINE = re.compile(r'^- "(.+)" \[Source (\d+)\]$')


@pytest.fixture(scope="module")
def kb(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        reader = get_user_model().objects.create_user("reader", password="pw-reader")
        collection = collection_create(name=COLLECTION, owner=reader)
        documents = {}
        for relative in FILES:
            path = CORPUS / relative
            document = document_upload(
                collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
            ).document
            document.refresh_from_db()
            assert document.status == Document.Status.READY, document.error
            documents[path.name] = document
        yield SimpleNamespace(user=reader, collection=collection, documents=documents)
        ChatSession.objects.filter(user=reader).delete()
        for document in documents.values():
            document_delete(document=document)
        collection.delete()
        reader.delete()


def ask(kb, question, **kwargs):
    kwargs.setdefault("collection_ids", None if "session" in kwargs else [kb.collection.pk])
    return chat_ask(user=kb.user, question=question, **kwargs)


def event_names(turn) -> list[str]:
    return [e["event"] for e in turn.events]


def context_sources(request) -> dict[int, tuple[str, str]]:
    """The [Source N] blocks the LLM was sent: N -> (file name, source_ref)."""
    blocks = re.findall(r"=== Source (\d+) ===\nTitle: .*\nSource: (.+?) \((.+?)\)\n", request.system)
    return {int(n): (filename, ref) for n, filename, ref in blocks}


def synthesis_requests(server):
    return [r for r in server.requests if not r.system.startswith(REWRITE_SYSTEM_PROMPT[:40])]


def assert_grounded(turn, label):
    """Every line is the label or a verbatim quote of the chunk its [Source N] cites."""
    lines = [line for line in turn.answer.splitlines() if line.strip()]
    assert lines[0] == label
    cited = {c["n"]: c for c in turn.cited_sources}
    assert len(lines) >= 2
    for line in lines[1:]:
        match = QUOTE_LINE.match(line)
        assert match, f"not a quoted source sentence: {line!r}"
        sentence, n = match.group(1), int(match.group(2))
        chunk = Chunk.objects.get(pk=cited[n]["chunk_id"])
        assert normalise(sentence) in normalise(chunk.content), (sentence, chunk.content)
        assert cited[n]["text"] == chunk.content
    assert {int(QUOTE_LINE.match(line).group(2)) for line in lines[1:]} == set(cited)


# -- without an LLM -------------------------------------------------------------


def test_without_an_llm_the_answer_quotes_the_sources(kb, no_llm):
    turn = ask(kb, GRAVITY_QUESTION)
    assert turn.mode == ChatTurn.Mode.EXTRACTIVE
    assert_grounded(turn, LABEL_NO_LLM)
    assert "rolling uphill" in turn.answer
    assert {c["document"] for c in turn.cited_sources} == {"gravity_hill.md"}
    assert all(c["source_ref"] == "heading=Gravity hill" for c in turn.cited_sources)
    assert turn.token_source == "estimate"
    assert turn.output_tokens == llm_token_count(turn.answer)
    # The input estimate is what an LLM call would have been sent: prompt, context and question.
    context = retrieve(
        user=kb.user,
        request=request_for(kb.user, question=GRAVITY_QUESTION, collection_ids=[kb.collection.pk]),
    )
    expected = prompt_equivalent_tokens(
        config=context.config, context_text=context.context_text, question=GRAVITY_QUESTION
    )
    assert turn.input_tokens == expected > context.total_tokens
    assert event_names(turn) == list(ev.ORDER)
    assert turn.error == "" and turn.llm_model == ""


def test_nothing_relevant_gives_the_honest_no_results_answer_and_no_llm_call(kb, llm_env):
    turn = ask(kb, NOTHING_QUESTION)
    assert turn.mode == ChatTurn.Mode.NO_RESULTS
    assert turn.answer.startswith(NO_RESULTS_TEXT)
    assert turn.cited_sources == [] and turn.retrieved == []
    assert llm_env.requests == []  # the configured LLM was not called
    assert ChatTurn.objects.filter(pk=turn.pk, session__user=kb.user).exists()  # still saved
    retrieval = next(e for e in turn.events if e["event"] == ev.RETRIEVAL_COMPLETE)["data"]
    assert retrieval["results_count"] == 0 and retrieval["sources"] == []
    assert event_names(turn) == list(ev.ORDER)


def test_another_users_private_collection_is_not_found(kb, no_llm, charlie):
    """The edge's scope check refuses it exactly like a missing one; nothing is asked or saved."""
    with pytest.raises(NotFoundError, match="no such collection"):
        chat_ask(user=charlie, question=GRAVITY_QUESTION, collection_ids=[kb.collection.pk])
    assert not ChatTurn.objects.filter(session__user=charlie).exists()
    with pytest.raises(NotFoundError):
        chat_ask(user=charlie, question="And then?", session=ask(kb, GRAVITY_QUESTION).session_id)


def test_an_empty_question_is_refused_before_anything_is_saved(kb, no_llm):
    with pytest.raises(KnowledgeError, match="empty"):
        ask(kb, "   ")
    assert not ChatTurn.objects.filter(session__user=kb.user).exists()


# -- with the LLM ---------------------------------------------------------------


def test_llm_citations_map_to_the_documents_and_source_refs_it_was_shown(kb, llm_env):
    profile = Profile.objects.create(
        owner=kb.user, name="wide", tag="wide", knowledge_overrides={"maxDocs": 6}
    )
    ProfileCollection.objects.create(profile=profile, collection=kb.collection)

    def respond(request):
        numbers = sorted(context_sources(request))
        claims = " ".join(f"Claim {n} [Source {n}]." for n in numbers)
        return Reply(text=f"{claims} Invented [Source {len(numbers) + 5}].")

    llm_env.responder = respond
    turn = chat_ask(
        user=kb.user,
        question="Why does a car roll uphill on a gravity hill, and when is National Flag of Canada Day?",
        profile=profile,
    )
    assert turn.mode == ChatTurn.Mode.LLM, turn.error
    shown = context_sources(llm_env.requests[-1])
    assert len({filename for filename, _ in shown.values()}) >= 2  # the mapping is tested across documents
    retrieved = {s["n"]: s for s in turn.retrieved}
    assert [c["n"] for c in turn.cited_sources] == sorted(shown)
    for citation in turn.cited_sources:
        chunk = Chunk.objects.select_related("document").get(pk=citation["chunk_id"])
        assert (citation["document"], citation["source_ref"]) == shown[citation["n"]]
        assert (chunk.document.filename, chunk.source_ref) == shown[citation["n"]]
        assert retrieved[citation["n"]]["chunk_id"] == chunk.pk
        assert citation["text"] == chunk.content
        assert citation["url"].startswith(f"/documents/{chunk.document_id}/view/?chunk={chunk.pk}#")
    assert turn.dropped_citations == 1
    assert f"[Source {len(shown) + 5}]" not in turn.answer and "Invented." in turn.answer


def test_invalid_markers_are_dropped_and_only_cited_sources_listed(kb, llm_env):
    llm_env.script(
        Reply(text="Illusion [Source 1]. Trees [Source 2, 42]. Magic [Source 0]. Also [Sources 7-8].")
    )
    turn = ask(kb, GRAVITY_QUESTION)
    assert turn.answer == "Illusion [Source 1]. Trees [Source 2]. Magic. Also."
    assert turn.dropped_citations == 4
    assert [c["n"] for c in turn.cited_sources] == [1, 2]
    assert len(turn.retrieved) >= 3  # source 3 was retrieved but not cited, so it is not listed
    final = next(e for e in turn.events if e["event"] == ev.FINAL_ANSWER)["data"]
    assert [s["n"] for s in final["sources"]] == [1, 2] and final["dropped_citations"] == 4
    assert 'data-source="1"' in final["html"] and 'data-source="42"' not in final["html"]


@pytest.mark.security
@pytest.mark.parametrize("stream", [True, False])
def test_an_answer_with_nul_characters_is_saved_without_them(kb, llm_env, monkeypatch, stream):
    monkeypatch.setenv("LLM_STREAM", "true" if stream else "false")
    llm_env.script(Reply(text="Illusion\x00 of slope [Source 1].\x00"))
    turn = ask(kb, GRAVITY_QUESTION)
    turn.refresh_from_db()
    assert turn.mode == ChatTurn.Mode.LLM, turn.error
    assert turn.answer == "Illusion of slope [Source 1]."
    assert "\\u0000" not in json.dumps(turn.events)


def test_tokens_come_from_the_servers_usage_and_add_up_per_session(kb, llm_env):
    llm_env.script(
        Reply(text="First [Source 1].", prompt_tokens=1234, completion_tokens=56),
        Reply(text="Second [Source 1].", prompt_tokens=2000, completion_tokens=70),
    )
    first = ask(kb, GRAVITY_QUESTION)
    second = ask(kb, "What causes the gravity hill optical illusion for drivers?", session=first.session_id)
    assert (first.input_tokens, first.output_tokens, first.token_source) == (1234, 56, "usage")
    assert (second.input_tokens, second.output_tokens, second.token_source) == (2000, 70, "usage")
    session = ChatSession.objects.get(pk=first.session_id)
    assert (session.input_tokens, session.output_tokens) == (3234, 126)
    update = next(e for e in second.events if e["event"] == ev.TOKEN_UPDATE)["data"]
    assert update == {
        "input_tokens": 2000,
        "output_tokens": 70,
        "source": "usage",
        "total_input": 3234,
        "total_output": 126,
    }
    assert session.title == GRAVITY_QUESTION


def test_the_sse_stream_delivers_events_in_order_while_the_answer_is_written(kb, llm_env):
    answer = "A gravity hill is an optical illusion [Source 1] where the horizon is hidden [Source 2]."
    llm_env.script(Reply(text=answer, chunk_delay=0.25))
    stream = chat_stream(user=kb.user, question=GRAVITY_QUESTION, collection_ids=[kb.collection.pk])
    arrivals = [(time.monotonic(), text) for text in sse_stream(stream)]
    text = "".join(t for _, t in arrivals)
    assert text.startswith(": ")  # a comment first, so the response starts at once
    for block in text.strip().split("\n\n")[1:]:
        assert re.fullmatch(r"id: \d+\nevent: [a-z_]+\ndata: \{.*\}", block), block
    events = ev.parse_sse(text)
    names = [e.name for e in events]
    assert [n for n in names if n != ev.ANSWER_DELTA] == list(ev.ORDER)
    deltas = [e for e in events if e.name == ev.ANSWER_DELTA]
    assert len(deltas) > 3 and "".join(d.data["text"] for d in deltas) == answer
    assert names.index(ev.RETRIEVAL_COMPLETE) < names.index(ev.ANSWER_DELTA) < names.index(ev.LLM_STEP)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    # The text arrived piece by piece, well before the answer was complete.
    first_delta = next(t for t, s in arrivals if "event: answer_delta" in s)
    final = next(t for t, s in arrivals if "event: final_answer" in s)
    assert final - first_delta > 0.75
    # Stored with the turn (without the deltas), and replayable as the same stream.
    turn = stream.turn
    assert event_names(turn) == list(ev.ORDER)
    replayed = ev.parse_sse("".join(sse_replay(turn)))
    assert [e.name for e in replayed] == list(ev.ORDER)
    assert replayed[-2].data["text"] == turn.answer and replayed[-1].data["turn_id"] == turn.pk


def test_an_llm_error_falls_back_to_the_extractive_answer_and_is_recorded(kb, llm_env):
    llm_env.default = Reply(status=500, error_message="the model is overloaded")
    turn = ask(kb, GRAVITY_QUESTION)
    assert turn.mode == ChatTurn.Mode.EXTRACTIVE
    assert_grounded(turn, LABEL_LLM_FAILED)
    assert "HTTP 500" in turn.error and "overloaded" in turn.error
    assert len(llm_env.requests) == 2  # one try, one bounded retry (LLM_MAX_RETRIES=1)
    names = event_names(turn)
    assert names.index(ev.RETRIEVAL_COMPLETE) < names.index(ev.LLM_ERROR) < names.index(ev.LLM_STEP)
    assert [n for n in names if n != ev.LLM_ERROR] == list(ev.ORDER)
    assert turn.token_source == "estimate"


def test_an_llm_timeout_falls_back_to_the_extractive_answer(kb, llm_env, monkeypatch):
    monkeypatch.setenv("LLM_TIMEOUT", "1")
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    llm_env.script(Reply(delay=6))
    turn = ask(kb, GRAVITY_QUESTION)
    at = {e["event"]: e["t_ms"] for e in turn.events}
    assert at[ev.LLM_ERROR] - at[ev.RETRIEVAL_COMPLETE] < 3000  # gave up after about LLM_TIMEOUT
    assert turn.mode == ChatTurn.Mode.EXTRACTIVE
    assert_grounded(turn, LABEL_LLM_FAILED)
    assert "timed out" in turn.error
    error = next(e for e in turn.events if e["event"] == ev.LLM_ERROR)["data"]
    assert error["fallback"] == "extractive" and "timed out" in error["error"]


def test_a_stream_that_dies_half_way_falls_back(kb, llm_env):
    llm_env.script(Reply(text="A gravity hill is an illusion that [Source 1] fools", cut_after_chunks=3))
    turn = ask(kb, GRAVITY_QUESTION)
    assert turn.mode == ChatTurn.Mode.EXTRACTIVE and "ended before" in turn.error
    assert_grounded(turn, LABEL_LLM_FAILED)


def test_the_profiles_synthesis_prompt_override_replaces_the_default(kb, llm_env):
    override = "You are a terse archivist. Quote the documents and cite [Source N]."
    profile = Profile.objects.create(
        owner=kb.user, name="archivist", tag="arch", knowledge_overrides={"synthesisPromptOverride": override}
    )
    ProfileCollection.objects.create(profile=profile, collection=kb.collection)
    chat_ask(user=kb.user, question=GRAVITY_QUESTION, profile=profile)
    ask(kb, GRAVITY_QUESTION)
    with_override, default = synthesis_requests(llm_env)
    assert with_override.system.startswith(override) and DEFAULT_SYSTEM_PROMPT not in with_override.system
    assert default.system.startswith(DEFAULT_SYSTEM_PROMPT)
    assert "=== Source 1 ===" in with_override.system and "=== Source 1 ===" in default.system


def test_an_abandoned_stream_still_saves_the_turn(kb, no_llm):
    stream = chat_stream(user=kb.user, question=GRAVITY_QUESTION, collection_ids=[kb.collection.pk])
    events = iter(stream)
    for event in events:
        if event.name == ev.RETRIEVAL_COMPLETE:
            break
    events.close()  # the client went away
    turn = ChatTurn.objects.get(pk=stream.turn.pk)
    assert turn.mode == "" and "closed before the answer was complete" in turn.error
    assert event_names(turn) == list(ev.ORDER[:3])


# -- sessions and follow-ups ------------------------------------------------------


def test_a_follow_up_is_resolved_from_the_history_without_an_llm(kb, no_llm):
    first = ask(kb, "When is National Flag of Canada Day?")
    assert first.cited_sources[0]["document"] == "flag_day.html"
    follow_up = ask(kb, "Tell me more about the first one", session=first.session_id)
    assert follow_up.index == 1 and follow_up.session_id == first.session_id
    assert follow_up.resolved_question.startswith("Tell me more about the first one (")
    assert "National Flag of Canada Day" in follow_up.resolved_question
    assert follow_up.mode == ChatTurn.Mode.EXTRACTIVE
    assert {c["document"] for c in follow_up.cited_sources} == {"flag_day.html"}
    start = next(e for e in follow_up.events if e["event"] == ev.RETRIEVAL_START)["data"]
    assert start["resolution"] == "rules" and start["resolved_question"] == follow_up.resolved_question
    # Without the history the same words find nothing.
    alone = ask(kb, "Tell me more about the first one")
    assert alone.mode == ChatTurn.Mode.NO_RESULTS and alone.resolved_question == alone.question


def test_a_follow_up_is_rewritten_by_the_llm_and_the_history_is_sent(kb, llm_env):
    rewritten = "Why does the gravity hill illusion make cars seem to roll uphill?"

    def respond(request):
        if request.system.startswith(REWRITE_SYSTEM_PROMPT[:40]):
            return Reply(text=rewritten, prompt_tokens=60, completion_tokens=12)
        return Reply(text="An illusion of slope [Source 1].", prompt_tokens=500, completion_tokens=9)

    llm_env.responder = respond
    first = ask(kb, "What is a gravity hill?")
    second = ask(kb, "Why does it happen?", session=first.session_id)
    assert second.resolved_question == rewritten
    assert second.mode == ChatTurn.Mode.LLM, second.error
    assert {c["document"] for c in second.cited_sources} == {"gravity_hill.md"}
    rewrite = [r for r in llm_env.requests if r.system.startswith(REWRITE_SYSTEM_PROMPT[:40])]
    assert len(rewrite) == 1  # the first question had no history to resolve against
    assert "What is a gravity hill?" in rewrite[-1].messages[-1]["content"]
    assert "Why does it happen?" in rewrite[-1].messages[-1]["content"]
    synthesis = synthesis_requests(llm_env)[-1]
    assert synthesis.messages[1:] == [
        {"role": "user", "content": "What is a gravity hill?"},
        {"role": "assistant", "content": "An illusion of slope."},  # old markers stripped
        {"role": "user", "content": "Why does it happen?"},
    ]
    assert (second.input_tokens, second.output_tokens) == (560, 21)  # rewrite + synthesis usage


def test_a_failed_rewrite_falls_back_to_the_rules(kb, llm_env):
    def respond(request):
        if request.system.startswith(REWRITE_SYSTEM_PROMPT[:40]):
            return Reply(status=400, error_message="no rewriting today")
        return Reply(text="Flag Day is on February 15 [Source 1].")

    llm_env.responder = respond
    first = ask(kb, "When is National Flag of Canada Day celebrated each year?")
    second = ask(kb, "Tell me more about the first one", session=first.session_id)
    assert second.mode == ChatTurn.Mode.LLM, second.error
    first_cited = first.cited_sources[0]  # "the first one"
    heading = first_cited["source_ref"].partition("=")[2]
    assert first_cited["title"] == "National Flag of Canada Day - Wikipedia"  # the page's <title>
    assert second.resolved_question.startswith(
        f"Tell me more about the first one ({first_cited['title']} - {heading}"
    )
    assert "question rewrite failed" in second.error and "HTTP 400" in second.error
    assert second.token_source == "usage"


def test_the_history_sent_to_the_llm_is_bounded_by_tokens(kb, llm_env):
    session = ChatSession.objects.create(user=kb.user, collection_ids=[kb.collection.pk], title="long")
    filler = "The flag has a red maple leaf on a white square between two red bars. " * 40
    for index in range(6):
        ChatTurn.objects.create(
            session=session, index=index, question=f"Old question {index}?", answer=filler, mode="llm"
        )
    ask(kb, "How does hybrid search improve retrieval accuracy in RAG systems?", session=session.pk)
    request = synthesis_requests(llm_env)[-1]
    history = request.messages[1:-1]
    assert history, "the most recent history should be sent"
    assert sum(llm_token_count(m["content"]) for m in history) <= history_budget(2000)
    questions = [m["content"] for m in history if m["role"] == "user"]
    assert questions[-1] == "Old question 5?" and "Old question 0?" not in questions


# -- the command ------------------------------------------------------------------


def run_ask(*args) -> str:
    out = io.StringIO()
    call_command("knowledge_ask", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_knowledge_ask_json_without_an_llm(kb, no_llm):
    result = json.loads(run_ask("--collection", COLLECTION, "--json", GRAVITY_QUESTION))
    assert result["mode"] == "extractive"
    assert result["events"] == list(ev.ORDER)
    assert result["tokens"]["source"] == "estimate" and result["tokens"]["output"] > 0
    assert result["dropped_citations"] == 0
    assert isinstance(result["session"], int)
    texts = {c["n"]: c["text"] for c in result["citations"]}
    assert {c["document"] for c in result["citations"]} == {"gravity_hill.md"}
    lines = result["answer"].splitlines()
    assert lines[0] == LABEL_NO_LLM
    for line in filter(None, lines[1:]):
        sentence, n = QUOTE_LINE.match(line).groups()
        assert normalise(sentence) in normalise(texts[int(n)])


def test_knowledge_ask_no_results_and_a_continued_session(kb, no_llm):
    result = json.loads(run_ask("--collection", COLLECTION, "--json", NOTHING_QUESTION))
    assert (result["mode"], result["citations"]) == ("no_results", [])
    assert result["answer"].startswith(NO_RESULTS_TEXT)
    text = run_ask("--collection", COLLECTION, "--session", str(result["session"]), "When is Flag Day?")
    assert "Sources:" in text and "flag_day.html" in text and f"session: {result['session']}" in text
    assert ChatTurn.objects.filter(session_id=result["session"]).count() == 2


def test_knowledge_ask_with_a_profile_and_another_users_refusal(kb, no_llm, charlie):
    profile = Profile.objects.create(owner=kb.user, name="hills", tag="hills")
    ProfileCollection.objects.create(profile=profile, collection=kb.collection)
    result = json.loads(run_ask("--profile", "hills", "--json", "What is LangGraph used for?"))
    assert result["mode"] == "extractive"
    assert {c["document"] for c in result["citations"]} == {"dummy.docx"}
    assert ChatSession.objects.get(pk=result["session"]).profile == profile
    with pytest.raises(CommandError, match="no such profile"):
        run_ask("--profile", "hills", "--user", "charlie", "What is LangGraph used for?")


def test_a_malformed_llm_setting_is_recorded_and_the_answer_extracted(kb, llm_env, monkeypatch):
    monkeypatch.setenv("LLM_MAX_OUTPUT_TOKENS", "lots")
    turn = ask(kb, GRAVITY_QUESTION)
    assert turn.mode == ChatTurn.Mode.EXTRACTIVE
    assert_grounded(turn, LABEL_LLM_FAILED)
    assert "LLM_MAX_OUTPUT_TOKENS" in turn.error
    assert llm_env.requests == []


@pytest.mark.parametrize("overrides", [{}, {"agentic.enabled": True}], ids=["standard", "agentic"])
def test_a_refusal_names_the_closest_passages_as_such(kb, no_llm, overrides):
    turn = ask(kb, NOTHING_QUESTION, overrides=overrides)
    assert turn.mode == ChatTurn.Mode.NO_RESULTS
    head, heading, closest = turn.answer.partition(CLOSEST_HEADING)
    assert head.strip() == NO_RESULTS_TEXT and heading
    lines = closest.strip().splitlines()
    assert 1 <= len(lines) <= 3
    filenames = set(kb.documents)
    for line in lines:
        assert line.startswith("- ") and line.split(",", 1)[0][2:] in filenames, line
        assert not QUOTE_LINE.match(line)  # never a [Source N] quote
    assert turn.cited_sources == []
