"""The retrieval service end to end on real documents, real embeddings and real PostgreSQL."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest
from django.core.management import call_command

from config.base.errors import KnowledgeError, NotFoundError
from knowledge.models import Chunk, Document, Profile, ProfileCollection
from knowledge.retrieval import lexical
from knowledge.retrieval.answerability import coverage_of
from knowledge.retrieval.expansion import expand_references, reference_budget
from knowledge.retrieval.scope import search_scope
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.asking import request_for

pytestmark = pytest.mark.django_db(transaction=True)


def ingest(collection, path):
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    document = Document.objects.get(pk=result.document.pk)
    assert document.status == Document.Status.READY, document.error
    return document


def sources(context) -> list[tuple[str, str]]:
    return [(r.chunk.document.filename, r.chunk.source_ref) for r in context.primary_chunks]


def test_a_user_never_gets_chunks_of_a_collection_they_may_not_read(alice, charlie, corpus):
    secret = collection_create(name="secret", owner=alice)
    ingest(secret, corpus / "text" / "gravity_hill.md")
    own = collection_create(name="charlie's", owner=charlie)
    ingest(own, corpus / "office" / "dummy.docx")
    question = "What is a gravity hill and why do cars seem to roll uphill?"

    as_alice = retrieve(user=alice, request=request_for(alice, question=question, collection_ids=[secret.pk]))
    assert as_alice.primary_chunks and sources(as_alice)[0][0] == "gravity_hill.md"

    with pytest.raises(NotFoundError, match=f"no such collection: {secret.pk}"):
        request_for(charlie, question=question, collection_ids=[secret.pk, own.pk])
    as_charlie = retrieve(
        user=charlie, request=request_for(charlie, question=question, collection_ids=[own.pk])
    )
    assert all(r.chunk.collection_id == own.pk for r in as_charlie.primary_chunks)
    # A profile's collections that are not readable are left out of its search.
    profile = Profile.objects.create(owner=charlie, name="sneaky", tag="sneaky")
    ProfileCollection.objects.create(profile=profile, collection=secret)
    via_profile = retrieve(user=charlie, request=request_for(charlie, question=question, profile=profile))
    assert via_profile.primary_chunks == [] and via_profile.referenced_chunks == []


def test_answerability_takes_the_best_chunks_lexemes_from_its_lexical_hit(alice, corpus, monkeypatch):
    """No round trip to read the best chunk's vector when its lexical hit already says which of the
    question's words it holds; the coverage is the one that vector gives."""
    hills = collection_create(name="hills", owner=alice)
    ingest(hills, corpus / "text" / "gravity_hill.md")
    question = "What is a gravity hill and why do cars seem to roll uphill?"
    read = lexical.chunk_lexemes
    reads = []
    monkeypatch.setattr(lexical, "chunk_lexemes", lambda **kwargs: reads.append(kwargs) or read(**kwargs))
    context = retrieve(user=alice, request=request_for(alice, question=question, collection_ids=[hills.pk]))
    best = context.primary_chunks[0]
    assert best.scores["lexical_rank"] is not None and reads == []
    scope = search_scope(user=alice, collection_ids=[hills.pk])
    weights = lexical.question_term_weights(
        query=question, scope_sql=scope.sql(), scope_params=scope.params()
    )
    held = read(chunk_id=best.chunk.pk, lexemes=list(weights))
    assert context.answerability.evidence.coverage == pytest.approx(coverage_of(weights, held))


def test_profiles_merge_collections_and_collections_compete_on_merit(alice, corpus):
    hills = collection_create(name="hills", owner=alice)
    ingest(hills, corpus / "text" / "gravity_hill.md")
    pets = collection_create(name="pets", owner=alice)
    ingest(pets, corpus / "openapi" / "petstore-expanded-3.0.json")
    profile = Profile.objects.create(owner=alice, name="both", tag="both", knowledge_overrides={"maxDocs": 4})
    for c in (hills, pets):
        ProfileCollection.objects.create(profile=profile, collection=c)

    context = retrieve(
        user=alice, request=request_for(alice, question="How do I delete a pet by its id?", profile=profile)
    )
    assert ("petstore-expanded-3.0.json", "operation=DELETE /pets/{id}") in sources(context)[:2]
    assert len(context.primary_chunks) <= 4
    fused = [r.scores["fused"] for r in context.primary_chunks]
    assert fused == sorted(fused, reverse=True)
    for r in context.primary_chunks:
        assert set(r.scores) >= {"dense_rank", "lexical_rank", "fused", "similarity", "freshness", "adjusted"}
        assert r.scores["similarity"] >= context.config["minRelevanceScore"]

    other = retrieve(
        user=alice,
        request=request_for(alice, question="optical illusion of a slope on a road", profile=profile),
    )
    assert sources(other)[0][0] == "gravity_hill.md"


def test_hybrid_switch_and_no_results_above_threshold(alice, corpus):
    c = collection_create(name="hills", owner=alice)
    ingest(c, corpus / "text" / "gravity_hill.md")
    dense_only = retrieve(
        user=alice,
        request=request_for(
            alice, question="gravity hill", collection_ids=[c.pk], overrides={"hybrid": False}
        ),
    )
    assert all(r.scores["lexical_rank"] is None for r in dense_only.primary_chunks)
    hybrid = retrieve(user=alice, request=request_for(alice, question="gravity hill", collection_ids=[c.pk]))
    assert any(r.scores["lexical_rank"] is not None for r in hybrid.primary_chunks)
    nothing = retrieve(
        user=alice,
        request=request_for(
            alice,
            question="quarterly revenue of a semiconductor company",
            collection_ids=[c.pk],
            overrides={"minRelevanceScore": 0.5},
        ),
    )
    assert nothing.primary_chunks == [] and nothing.blocks == [] and nothing.total_tokens == 0


@pytest.mark.parametrize(
    "question",
    [
        "gravity & | ! ( ) :* <-> 'hill' \" \\ ;--",
        " ".join(["why"] + ["gravity hill car roll uphill slope illusion"] * 40),  # ~300 words
        "!!!",
        "重力の丘はどこにありますか",
        "the and of a to in",
        "DROP TABLE knowledge_chunk; --",
    ],
)
def test_hostile_questions_never_crash(alice, corpus, question):
    c = collection_create(name="hills", owner=alice)
    ingest(c, corpus / "text" / "gravity_hill.md")
    context = retrieve(user=alice, request=request_for(alice, question=question, collection_ids=[c.pk]))
    assert isinstance(context.primary_chunks, list)
    assert Chunk.objects.filter(collection=c).exists()


def test_bad_questions_are_refused_clearly(alice):
    c = collection_create(name="empty", owner=alice)
    with pytest.raises(KnowledgeError, match="empty"):
        retrieve(user=alice, request=request_for(alice, question="   ", collection_ids=[c.pk]))
    with pytest.raises(KnowledgeError, match="limit is 4000"):
        retrieve(user=alice, request=request_for(alice, question="x" * 10_000, collection_ids=[c.pk]))
    with pytest.raises(KnowledgeError, match="profile or at least one collection"):
        retrieve(user=alice, request=request_for(alice, question="hello"))


def test_openapi_operations_expand_to_the_schemas_they_reference(alice, corpus):
    c = collection_create(name="api", owner=alice)
    ingest(c, corpus / "openapi" / "petstore-expanded-3.0.json")
    context = retrieve(
        user=alice,
        request=request_for(alice, question="Creates a new pet in the store", collection_ids=[c.pk]),
    )
    assert ("petstore-expanded-3.0.json", "operation=POST /pets") in sources(context)
    referenced = {r.chunk.source_ref for r in context.referenced_chunks}
    assert "component=schemas/NewPet" in referenced or "component=schemas/NewPet" in {
        s for _, s in sources(context)
    }
    assert context.stats["reference_depth"] >= 1
    numbers = [r.source_number for r in context.sources]
    assert numbers == list(range(1, len(numbers) + 1))
    assert "=== Source 1 ===" in context.context_text


def test_query_intent_narrows_api_chunks_only_when_switched_on(alice, corpus):
    c = collection_create(name="api-intent", owner=alice)
    ingest(c, corpus / "openapi" / "petstore-expanded-3.0.json")
    question = "What fields does a pet object have?"
    on = retrieve(
        user=alice,
        request=request_for(
            alice, question=question, collection_ids=[c.pk], k=10, overrides={"queryIntent": True}
        ),
    )
    off = retrieve(
        user=alice,
        request=request_for(
            alice, question=question, collection_ids=[c.pk], k=10, overrides={"queryIntent": False}
        ),
    )
    assert on.stats["intent"] == "schema"
    assert off.stats["intent"] is None
    assert {r.chunk.metadata.get("type") for r in off.primary_chunks} >= {"operation", "component"}


def test_circular_references_terminate(alice, corpus):
    c = collection_create(name="circular", owner=alice)
    ingest(c, corpus / "openapi" / "circular-3.0.json")
    context = retrieve(
        user=alice,
        request=request_for(
            alice,
            question="schema that references itself",
            collection_ids=[c.pk],
            overrides={"minRelevanceScore": 0.0, "maxDocs": 10},
        ),
    )
    element_ids = [r.chunk.element_id for r in context.primary_chunks + context.referenced_chunks]
    assert len(element_ids) == len(set(element_ids))  # visited set: nothing twice


def _chain(collection, names: list[str], refs: dict[str, list[str]]):
    digest = hashlib.sha256(collection.name.encode()).hexdigest()
    document = Document.objects.create(
        collection=collection,
        filename="api.json",
        content_hash=digest,
        size=1,
        file=f"x/{digest}",
        status=Document.Status.READY,
    )
    vector = np.full(384, 1 / np.sqrt(384), dtype=np.float32)
    return [
        Chunk.objects.create(
            document=document,
            collection=collection,
            chunk_profile=collection.chunk_profile,
            embedding_model="sentence-transformers/all-MiniLM-L6-v2",
            index=i,
            content=name,
            token_count=1,
            source_ref=f"component=schemas/{name}",
            element_id=f"api.json:components/schemas/{name}",
            ref_ids=[f"api.json:components/schemas/{r}" for r in refs.get(name, [])],
            embedding=vector,
        )
        for i, name in enumerate(names)
    ]


def test_expansion_depth_limit_missing_refs_and_cycles(alice, caplog):
    c = collection_create(name="chain", owner=alice)
    refs = {"A": ["B", "Ghost"], "B": ["C", "A"], "C": ["D"], "D": ["E"]}
    chunks = _chain(c, ["A", "B", "C", "D", "E"], refs)
    result = expand_references([chunks[0]], scope=search_scope(user=alice, collection_ids=[c.pk]))
    assert [ch.content for ch in result.chunks] == ["B", "C", "D"]  # depth 3 stops before E
    assert result.depth_reached == 3 and result.limit_hit == "depth"
    assert result.missing_refs == ["api.json:components/schemas/Ghost"]
    assert result.cycles_skipped >= 1  # B -> A
    assert "Ghost" in caplog.text


def test_expansion_respects_the_chunk_budget_and_time_limit(alice):
    c = collection_create(name="wide", owner=alice)
    names = ["Root"] + [f"S{i}" for i in range(20)]
    chunks = _chain(c, names, {"Root": names[1:]})
    scope = search_scope(user=alice, collection_ids=[c.pk])
    result = expand_references([chunks[0]], scope=scope)
    assert len(result.chunks) == reference_budget(1) == 6
    assert result.limit_hit == "chunks"
    assert reference_budget(9) == 6 and reference_budget(12) == 3 and reference_budget(15) == 0
    timed_out = expand_references([chunks[0]], scope=scope, time_limit_ms=-1)
    assert timed_out.partial and timed_out.chunks == []


def test_expansion_never_crosses_into_unreadable_collections(alice, charlie):
    theirs = collection_create(name="theirs", owner=alice)
    _chain(theirs, ["Secret"], {})
    mine = collection_create(name="mine", owner=charlie)
    root = _chain(mine, ["Root"], {"Root": ["Secret"]})[0]
    result = expand_references([root], scope=search_scope(user=charlie, collection_ids=[mine.pk, theirs.pk]))
    assert result.chunks == [] and result.missing_refs == ["api.json:components/schemas/Secret"]


def test_context_respects_the_token_budget(alice, corpus):
    c = collection_create(name="docs", owner=alice)
    ingest(c, corpus / "html" / "flag_day.html")
    wide = retrieve(
        user=alice,
        request=request_for(
            alice,
            question="flag day history",
            collection_ids=[c.pk],
            overrides={"maxDocs": 6, "minRelevanceScore": 0.0},
        ),
    )
    tight = retrieve(
        user=alice,
        request=request_for(
            alice,
            question="flag day history",
            collection_ids=[c.pk],
            overrides={"maxDocs": 6, "minRelevanceScore": 0.0, "maxTokens": 300},
        ),
    )
    assert tight.total_tokens <= 300 < wide.total_tokens
    assert len(tight.blocks) < len(wide.blocks)
    assert tight.stats["left_out_for_budget"] > 0


def test_knowledge_search_command_json(alice, corpus, tmp_path):
    c = collection_create(name="api", owner=alice)
    ingest(c, corpus / "openapi" / "petstore-expanded-3.0.json")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"question": "delete a pet"}\nlist all pets\n\n')
    out = io.StringIO()
    call_command(
        "knowledge_search",
        "--collection",
        "api",
        "--user",
        "alice",
        "--json",
        "--k",
        "2",
        "--queries",
        str(queries),
        stdout=out,
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["query"] for line in lines] == ["delete a pet", "list all pets"]
    first = lines[0]
    assert set(first) >= {"query", "results", "timings_ms"}
    assert len(first["results"]) == 2
    assert set(first["results"][0]) == {"document", "source_ref", "content", "scores"}
    assert first["results"][0]["document"] == "petstore-expanded-3.0.json"
    assert "dense" in first["timings_ms"] and "total" in first["timings_ms"]
