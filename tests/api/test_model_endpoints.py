"""/api/v1/embedding-models/ and /api/v1/rerankers/: staff register an endpoint (a real model
served on 127.0.0.1, tests/model_server.py: all-mpnet-base-v2's 768 dimensions for embeddings),
everyone lists the models, a collection is created on one and a profile chooses a reranker; the
key is never in an answer, and bad input is a 4xx with the reason."""

from __future__ import annotations

import pytest

from knowledge.models import EmbeddingEndpoint, RerankEndpoint

pytest_plugins = ["tests.model_server"]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("endpoint_indexes_dropped")]

SECRET = "sk-api-typed-90d2e1"
NAME = "vllm/all-mpnet-base-v2"
URL = "/api/v1/embedding-models/endpoints/"


@pytest.fixture
def staff(make_user, bearer):
    user = make_user("operator")
    user.is_staff = True
    user.save()
    return bearer(user)


def body(server, **changes) -> dict:
    return {
        "name": NAME,
        "base_url": server.base_url,
        "model": server.model_name,
        "api_key": SECRET,
        **changes,
    }


def test_staff_register_an_endpoint_and_a_user_creates_a_collection_on_it(staff, bearer, alice, mpnet_server):
    response = staff.post(URL, body(mpnet_server, query_prefix="query: "), format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["dimensions"] == 768 and created["api_key_stored"] is True
    assert created["query_prefix"] == "query: "
    assert SECRET not in response.content.decode()

    user = bearer(alice)
    listed = user.get("/api/v1/embedding-models/").json()
    assert {m["name"]: m["dimensions"] for m in listed}[NAME] == 768
    assert {m["kind"] for m in listed} == {"bundled", "endpoint"}
    response = user.post(
        "/api/v1/collections/", {"name": "mpnet notes", "embedding_model": NAME}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["embedding_model"] == NAME

    # The key stays when a change omits it; the dimension cannot change; one in use stays.
    endpoint_url = f"{URL}{created['id']}/"
    response = staff.patch(endpoint_url, {"batch_size": 8}, format="json")
    assert response.status_code == 200 and response.json()["batch_size"] == 8
    assert EmbeddingEndpoint.objects.get().api_key == SECRET
    response = staff.delete(endpoint_url)
    assert response.status_code == 400 and "still embeds" in response.json()["error"]["message"]
    for answer in (staff.get(URL), staff.get(endpoint_url)):
        assert answer.status_code == 200 and SECRET not in answer.content.decode()


def test_only_staff_register_list_or_change_endpoints(bearer, alice, mpnet_server):
    user = bearer(alice)
    assert user.post(URL, body(mpnet_server), format="json").status_code == 403
    assert user.get(URL).status_code == 403
    assert not EmbeddingEndpoint.objects.exists()
    assert not mpnet_server.requests  # nothing was called on a refused request's behalf


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"base_url": "ftp://models.example/v1"}, "http:// or https://"),
        ({"name": "sentence-transformers/all-MiniLM-L6-v2"}, "bundled model's name"),
        ({"name": "bad name!"}, "Letters, digits"),
        ({"batch_size": 0}, "greater than or equal to 1"),
        ({"colour": "blue"}, "unknown field"),
    ],
    ids=["scheme", "bundled-name", "name-characters", "batch-size", "unknown-field"],
)
def test_bad_registrations_are_a_400_with_the_reason(staff, mpnet_server, changes, reason):
    response = staff.post(URL, body(mpnet_server, **changes), format="json")
    assert response.status_code == 400, response.content
    assert reason in response.content.decode()
    assert not EmbeddingEndpoint.objects.exists()


def test_an_endpoint_that_cannot_answer_is_a_400_naming_why(staff, mpnet_server):
    mpnet_server.stop()
    response = staff.post(URL, body(mpnet_server), format="json")
    assert response.status_code == 400
    assert "unreachable" in response.json()["error"]["message"] and SECRET not in response.content.decode()
    assert not EmbeddingEndpoint.objects.exists()


def test_a_second_endpoint_of_the_same_name_is_refused(staff, mpnet_server):
    assert staff.post(URL, body(mpnet_server), format="json").status_code == 201
    response = staff.post(URL, body(mpnet_server), format="json")
    assert response.status_code == 400 and "already exists" in response.content.decode()
    assert EmbeddingEndpoint.objects.count() == 1


def test_staff_register_a_reranker_and_a_user_chooses_it_for_a_profile(
    bearer, make_user, alice, minilm_server
):
    operator = make_user("operator", is_staff=True)
    body = {"name": "jina/reranker", "base_url": minilm_server.base_url, "api_key": SECRET}
    assert bearer(alice).post("/api/v1/rerankers/", body, format="json").status_code == 403
    response = bearer(operator).post("/api/v1/rerankers/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["api_key_stored"] is True and SECRET not in response.content.decode()
    user = bearer(alice)
    listed = user.get("/api/v1/rerankers/").json()["results"]
    assert [r["name"] for r in listed] == ["jina/reranker"] and SECRET not in str(listed)
    profile = {"name": "reranked", "tag": "rr", "reranker": "jina/reranker"}
    response = user.post("/api/v1/profiles/", profile, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["reranker"] == "jina/reranker"
    response = user.post("/api/v1/profiles/", {**profile, "name": "other", "reranker": "nope"}, format="json")
    assert response.status_code == 400 and "no rerank endpoint named 'nope'" in response.content.decode()
    reranker_id = RerankEndpoint.objects.get().pk
    response = bearer(operator).delete(f"/api/v1/rerankers/{reranker_id}/")
    assert response.status_code == 400 and "reranks for a profile" in response.content.decode()
