"""An operator registers an embedding endpoint in the admin and moves a collection onto it: a
release built beside the serving one, measured by the gate on the collection's questions, with
both releases' figures on its admin page; the endpoint's key is never shown or recorded.

The endpoint is a real HTTP server on 127.0.0.1 serving all-mpnet-base-v2 (768 dimensions) over
OpenAI's /embeddings (tests/model_server.py).
"""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from knowledge.models import Collection, EmbeddingEndpoint, Release, RerankEndpoint
from tests.admin.test_content import _collection_change_form
from tests.model_server import Reply

pytest_plugins = ["tests.model_server"]
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.usefixtures("endpoint_indexes_dropped"),
]

SECRET = "sk-admin-typed-4b1e0d"
NAME = "tei/all-mpnet-base-v2"


def endpoint_form(server, **changes) -> dict:
    form = {
        "name": NAME,
        "base_url": server.base_url,
        "model": server.model_name,
        "api_key": SECRET,
        "query_prefix": "",
        "passage_prefix": "",
        "batch_size": "16",
        "max_input_tokens": "384",
        "timeout_seconds": "30",
        "max_retries": "2",
    }
    return {**form, **changes}


def test_the_operator_registers_an_endpoint_switches_a_collection_and_reads_both_releases(
    admin_client, handbook, mpnet_server
):
    response = admin_client.post("/admin/knowledge/embeddingendpoint/add/", endpoint_form(mpnet_server))
    assert response.status_code == 302, response.content.decode()[:3000]
    endpoint = EmbeddingEndpoint.objects.get(name=NAME)
    assert (endpoint.dimensions, endpoint.api_key) == (768, SECRET)
    assert mpnet_server.requests[-1].authorization == f"Bearer {SECRET}"
    pages = [
        admin_client.get("/admin/knowledge/embeddingendpoint/").content.decode(),
        admin_client.get(f"/admin/knowledge/embeddingendpoint/{endpoint.pk}/change/").content.decode(),
    ]
    assert "768" in pages[0] and NAME in pages[0]
    # Saved again with the key field left empty: the stored key stays.
    response = admin_client.post(
        f"/admin/knowledge/embeddingendpoint/{endpoint.pk}/change/", endpoint_form(mpnet_server, api_key="")
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert EmbeddingEndpoint.objects.get(pk=endpoint.pk).api_key == SECRET

    serving = Release.objects.get(collection=handbook, state=Release.State.SERVING)
    url = f"/admin/knowledge/collection/{handbook.pk}/change/"
    pages.append(admin_client.get(url).content.decode())
    assert NAME in pages[-1]  # offered beside the bundled models
    response = admin_client.post(url, _collection_change_form(handbook, embedding_model=NAME))
    assert response.status_code == 302, response.content.decode()[:3000]

    built = Release.objects.filter(collection=handbook, embedding_model=NAME).get()
    report = built.gate
    assert report["serving"]["release"] == serving.pk and report["candidate"]["release"] == built.pk
    assert report["questions"] >= 10
    for side in ("serving", "candidate"):
        assert 0 <= report[side]["recall@5"] <= 1 and 0 <= report[side]["mrr"] <= 1
    page = admin_client.get(f"/admin/knowledge/release/{built.pk}/change/").content.decode()
    pages.append(page)
    assert f"embedding model {NAME}" in page and f"serving #{serving.pk}" in page
    assert "recall@5" in page and "mrr" in page
    handbook.refresh_from_db()
    if built.state == Release.State.SERVING:
        assert handbook.embedding_model == NAME
    else:  # held: the old model serves on, the operator decides
        assert handbook.embedding_model != NAME and built.state == Release.State.HELD

    for text in pages:
        assert SECRET not in text
    events = AuditEvent.objects.filter(action__startswith="embedding_endpoint.")
    assert events.exists()
    assert all(SECRET not in str(event.changes) for event in events)
    added = events.get(action="embedding_endpoint.added")
    assert "(changed)" in str(added.changes["api_key"])  # that a key was typed, not which


def test_an_endpoint_that_does_not_answer_is_refused_in_the_admin_with_the_reason(admin_client, mpnet_server):
    mpnet_server.stop()
    response = admin_client.post("/admin/knowledge/embeddingendpoint/add/", endpoint_form(mpnet_server))
    assert response.status_code == 200
    assert "is unreachable" in response.content.decode()
    assert SECRET not in response.content.decode()
    assert not EmbeddingEndpoint.objects.exists()
    assert not Collection.objects.filter(embedding_model=NAME).exists()


def test_the_operator_registers_a_rerank_endpoint_in_the_admin_and_its_key_stays_hidden(
    admin_client, minilm_server
):
    form = {"name": "tei/reranker", "base_url": minilm_server.base_url, "model": "", "api_key": SECRET}
    form["timeout_seconds"] = "5"
    response = admin_client.post("/admin/knowledge/rerankendpoint/add/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    endpoint = RerankEndpoint.objects.get()
    assert endpoint.api_key == SECRET
    assert minilm_server.requests[-1].path.endswith("/rerank")  # checked with one question
    pages = [
        admin_client.get("/admin/knowledge/rerankendpoint/").content.decode(),
        admin_client.get(f"/admin/knowledge/rerankendpoint/{endpoint.pk}/change/").content.decode(),
    ]
    assert all("tei/reranker" in page and SECRET not in page for page in pages)
    events = AuditEvent.objects.filter(action__startswith="rerank_endpoint.")
    assert events.exists() and all(SECRET not in str(event.changes) for event in events)
    minilm_server.script(Reply(status=500, error_message="model not loaded"))
    response = admin_client.post("/admin/knowledge/rerankendpoint/add/", {**form, "name": "broken"})
    assert response.status_code == 200 and "answered HTTP 500: model not loaded" in response.content.decode()
    assert not RerankEndpoint.objects.filter(name="broken").exists()
