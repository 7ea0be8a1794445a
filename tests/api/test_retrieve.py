"""POST /api/v1/retrieve/ on real documents, real embeddings and real PostgreSQL."""

from __future__ import annotations

import pytest

from knowledge.models import Document, Profile, ProfileCollection
from knowledge.services.documents import DocumentUpload, document_upload
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/retrieve/"
QUESTION = "What is a gravity hill and why do cars seem to roll uphill?"


def ingest(collection, path) -> Document:
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    document = Document.objects.get(pk=result.document.pk)
    assert document.status == Document.Status.READY, document.error
    return document


@pytest.fixture
def hills(world, corpus):
    ingest(world["private"], corpus / "text" / "gravity_hill.md")
    ingest(world["public"], corpus / "office" / "dummy.docx")
    return world


def test_retrieve_from_collections(bearer, alice, hills):
    response = bearer(alice).post(
        URL, {"question": QUESTION, "collections": [hills["private"].pk], "k": 2}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {
        "question",
        "results",
        "references",
        "total_tokens",
        "timings_ms",
        "stats",
        "answerable",
        "answerability",
    }
    assert body["question"] == QUESTION
    assert 1 <= len(body["results"]) <= 2
    first = body["results"][0]
    assert first["document"] == "gravity_hill.md" and first["source_ref"].startswith("heading=")
    assert first["collection_id"] == hills["private"].pk and first["role"] == "primary"
    assert first["scores"]["similarity"] >= 0.3 and first["content"]
    assert body["total_tokens"] > 0 and body["timings_ms"]["total"] > 0


def test_charlie_gets_404_for_alices_private_collection_and_profile(bearer, alice, charlie, hills):
    as_charlie = bearer(charlie)
    private = as_charlie.post(
        URL, {"question": QUESTION, "collections": [hills["private"].pk]}, format="json"
    )
    missing = as_charlie.post(URL, {"question": QUESTION, "collections": [987654]}, format="json")
    assert assert_error(private, 404)["message"].replace(str(hills["private"].pk), "N") == assert_error(
        missing, 404
    )["message"].replace("987654", "N")
    mixed = as_charlie.post(
        URL, {"question": QUESTION, "collections": [hills["public"].pk, hills["private"].pk]}, format="json"
    )
    assert_error(mixed, 404)
    assert "gravity" not in (private.content + mixed.content).decode().lower()

    profile = Profile.objects.create(owner=alice, name="hills", tag="hills")
    ProfileCollection.objects.create(profile=profile, collection=hills["private"])
    assert_error(as_charlie.post(URL, {"question": QUESTION, "profile": profile.pk}, format="json"), 404)
    assert (
        bearer(alice).post(URL, {"question": QUESTION, "profile": profile.pk}, format="json").status_code
        == 200
    )


def test_admin_owned_and_opened_unlisted_collections_are_searchable_by_id(bearer, charlie, world, corpus):
    ingest(world["unlisted"], corpus / "text" / "gravity_hill.md")
    ingest(world["admin"], corpus / "office" / "dummy.docx")
    as_charlie = bearer(charlie)
    body = {"question": QUESTION, "collections": [world["unlisted"].pk, world["admin"].pk]}
    assert_error(as_charlie.post(URL, body, format="json"), 404)  # unlisted: not by id alone
    assert as_charlie.post(f"/api/v1/collections/link/{world['unlisted'].share_token}/").status_code == 200
    response = as_charlie.post(URL, body, format="json")
    assert response.status_code == 200
    assert response.json()["results"][0]["collection_id"] == world["unlisted"].pk


def test_profile_retrieval_uses_the_profiles_settings_and_operator_profiles_are_usable(
    bearer, alice, charlie, hills
):
    own = Profile.objects.create(owner=alice, name="mine", tag="mine", knowledge_overrides={"maxDocs": 1})
    ProfileCollection.objects.create(profile=own, collection=hills["private"])
    body = bearer(alice).post(URL, {"question": QUESTION, "profile": own.pk}, format="json").json()
    assert len(body["results"]) == 1 and body["results"][0]["document"] == "gravity_hill.md"

    operator = Profile.objects.create(owner=None, name="everyone", tag="everyone")
    ProfileCollection.objects.create(profile=operator, collection=hills["public"])
    ProfileCollection.objects.create(profile=operator, collection=hills["private"])
    as_charlie = bearer(charlie).post(URL, {"question": QUESTION, "profile": operator.pk}, format="json")
    assert as_charlie.status_code == 200
    # The operator's profile includes Alice's private collection; Charlie still never reads it.
    assert all(r["collection_id"] == hills["public"].pk for r in as_charlie.json()["results"])


def test_overrides_and_k_apply_per_call(bearer, alice, hills):
    client = bearer(alice)
    narrow = client.post(
        URL,
        {"question": QUESTION, "collections": [hills["private"].pk], "k": 1, "overrides": {"hybrid": False}},
        format="json",
    ).json()
    assert len(narrow["results"]) == 1 and narrow["results"][0]["scores"]["lexical_rank"] is None
    assert isinstance(narrow["answerable"], bool)
    assert narrow["answerability"]["answerable"] is narrow["answerable"]
    assert set(narrow["answerability"]["evidence"]) == {
        "best_similarity",
        "margin",
        "coverage",
        "agreement",
        "absent",
        "absent_words",
        "relative_similarity",
        "missing_terms",
        "asked_kind",
        "kind_found",
        "language",
        "english_only",
    }
    nothing = client.post(
        URL,
        {
            "question": QUESTION,
            "collections": [hills["private"].pk],
            "overrides": {"minRelevanceScore": 0.99},
        },
        format="json",
    ).json()
    assert nothing["results"] == []
    # minRelevanceScore is honoured by the verdict too: nothing passes it, so nothing answers.
    assert nothing["answerable"] is False
    assert nothing["answerability"]["reason"] == "no chunk reaches minRelevanceScore"


@pytest.mark.django_db
def test_bad_input_is_a_400_never_a_500(bearer, alice, world):
    client = bearer(alice)
    c = [world["private"].pk]
    cases = {
        "question": {"question": "x" * 10_000, "collections": c},
        "k": {"question": "q", "collections": c, "k": 0},
        "overrides": {"question": "q", "collections": c, "overrides": {"maxDocs": "many"}},
        "collections": {"question": "q"},
    }
    for field, payload in cases.items():
        assert field in assert_error(client.post(URL, payload, format="json"), 400, "invalid")["fields"], (
            field
        )
    wrong_types = [
        {"question": 42, "collections": "all"},
        {"question": ["q"], "collections": c},
        {"question": "q", "collections": ["one"]},
        {"question": "q", "collections": c, "k": "ten"},
        {"question": "q", "collections": c, "k": 101},
        {"question": "q", "profile": "mine"},
        {"question": "q", "collections": c, "overrides": []},
        {"question": "q", "collections": c, "overrides": {"nope": 1}},
        {"question": "q", "collections": c, "overrides": {"hybrid": "perhaps"}},
        {"question": "   ", "collections": c},
        {"question": "q", "collections": [], "surprise": True},
        {"question": "q", "collections": [10**30]},
    ]
    for payload in wrong_types:
        assert_error(client.post(URL, payload, format="json"), 400)
    assert_error(client.post(URL, "not json", content_type="application/json"), 400, "parse_error")
    assert_error(client.post(URL, [1, 2], format="json"), 400)
    assert "4000" in str(client.post(URL, {"question": "x" * 10_000, "collections": c}, format="json").json())
