"""One error format everywhere, throttling, and the OpenAPI schema and its offline docs page."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from drf_spectacular.validation import validate_schema

from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db


def test_unknown_api_urls_and_methods_use_the_error_format(bearer, alice, anon, world):
    client = bearer(alice)
    assert_error(client.get("/api/v1/nothing-here/"), 404, "not_found")
    no_slash = assert_error(client.get("/api/v1/collections"), 404)
    assert "did you mean /api/v1/collections/" in no_slash["message"]
    assert_error(anon.get("/api/v1/nothing-here/"), 404)
    assert_error(client.put(f"/api/v1/collections/{world['private'].pk}/", {}, format="json"), 405)
    assert_error(client.get(f"/api/v1/collections/{10**25}/"), 404)
    assert_error(client.get("/api/v1/documents/0/"), 404)


def test_every_endpoint_requires_authentication(anon, world):
    for method, url in [
        ("get", "/api/v1/collections/"),
        ("post", "/api/v1/collections/"),
        ("get", f"/api/v1/collections/{world['public'].pk}/"),
        ("get", f"/api/v1/collections/{world['public'].pk}/documents/"),
        ("get", "/api/v1/documents/1/"),
        ("post", "/api/v1/documents/1/retry/"),
        ("post", "/api/v1/documents/1/reindex/"),
        ("post", "/api/v1/retrieve/"),
        ("get", "/api/v1/profiles/"),
        ("get", "/api/v1/profiles/1/effective-config/"),
        ("get", "/api/v1/tokens/"),
        ("delete", "/api/v1/tokens/1/"),
    ]:
        response = getattr(anon, method)(url)
        assert_error(response, 401, "not_authenticated")
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_malformed_bodies_are_400(bearer, alice):
    client = bearer(alice)
    assert_error(
        client.post("/api/v1/collections/", "{", content_type="application/json"), 400, "parse_error"
    )
    assert_error(client.post("/api/v1/collections/", "[]", content_type="application/json"), 400)
    assert_error(client.post("/api/v1/collections/", "<x/>", content_type="application/xml"), 415)
    assert_error(client.post("/api/v1/collections/", {"name": "\x00"}, format="json"), 400)


def test_an_unexpected_failure_is_a_500_in_the_same_format(bearer, alice, monkeypatch):
    def broken(user):
        raise RuntimeError("database on fire")

    monkeypatch.setattr("knowledge.api.collections.listed_collections", broken)
    error = assert_error(bearer(alice).get("/api/v1/collections/"), 500, "server_error")
    assert "fire" not in error["message"]


def test_retrieve_and_uploads_are_throttled(bearer, alice, anon, world, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"uploads": "2/minute", "retrieve": "1/minute", "auth": "2/minute"},
    }
    client = bearer(alice)
    payload = {"question": "", "collections": [world["private"].pk]}
    assert client.post("/api/v1/retrieve/", payload, format="json").status_code == 400  # counted all the same
    throttled = client.post("/api/v1/retrieve/", payload, format="json")
    assert_error(throttled, 429, "throttled")
    assert int(throttled["Retry-After"]) > 0

    uploads = f"/api/v1/collections/{world['private'].pk}/documents/"
    for _ in range(2):
        assert client.post(uploads, {}, format="multipart").status_code == 400
    assert_error(client.post(uploads, {}, format="multipart"), 429)
    assert client.get(uploads).status_code == 200  # listing is not an upload

    login = {"username": "alice", "password": "wrong"}
    for _ in range(2):
        assert anon.post("/api/v1/auth/token/", login, format="json").status_code == 401
    assert_error(anon.post("/api/v1/auth/token/", login, format="json"), 429)


def test_throttle_rates_come_from_the_environment(monkeypatch):
    import importlib

    from django.core.exceptions import ImproperlyConfigured

    import config.api_settings as module

    monkeypatch.setenv("API_THROTTLE_RETRIEVE", "7/hour")
    assert importlib.reload(module).REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["retrieve"] == "7/hour"
    monkeypatch.setenv("API_THROTTLE_RETRIEVE", "lots")
    with pytest.raises(ImproperlyConfigured, match="API_THROTTLE_RETRIEVE"):
        importlib.reload(module)
    monkeypatch.delenv("API_THROTTLE_RETRIEVE")
    assert importlib.reload(module).REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["retrieve"] == "60/minute"


def test_schema_is_valid_openapi_3_and_covers_the_api(anon):
    response = anon.get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)
    paths = set(schema["paths"])
    assert {
        "/api/v1/auth/token/",
        "/api/v1/tokens/",
        "/api/v1/tokens/{token_id}/",
        "/api/v1/collections/",
        "/api/v1/collections/{collection_id}/",
        "/api/v1/collections/{collection_id}/documents/",
        "/api/v1/documents/{document_id}/",
        "/api/v1/documents/{document_id}/retry/",
        "/api/v1/documents/{document_id}/reindex/",
        "/api/v1/retrieve/",
        "/api/v1/profiles/",
        "/api/v1/profiles/{profile_id}/",
        "/api/v1/profiles/{profile_id}/effective-config/",
    } <= paths
    assert schema["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "A personal API token (kn_...).",
    }
    upload = schema["paths"]["/api/v1/collections/{collection_id}/documents/"]["post"]
    assert "multipart/form-data" in upload["requestBody"]["content"]
    assert {"201", "200", "413", "415"} <= set(upload["responses"])
    assert "Error" in schema["components"]["schemas"]


def test_schema_generates_without_warnings(tmp_path):
    call_command(
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--file",
        str(tmp_path / "s.yml"),
    )
    assert "/api/v1/retrieve/" in (tmp_path / "s.yml").read_text()


def test_docs_page_loads_nothing_from_the_internet(anon, settings):
    response = anon.get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    resources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert len(resources) >= 4, resources  # favicon, stylesheet, bundle, preset
    for url in resources:
        assert url.startswith("/static/") or url.startswith("/api/v1/"), url  # our own origin only
        if url.startswith("/static/"):
            assert finders.find(url.removeprefix("/static/")), url
    script = anon.get("/api/v1/docs/?script=").content.decode()  # the split view's start-up script
    assert "/api/v1/schema/" in script and "cdn" not in (html + script).lower()
