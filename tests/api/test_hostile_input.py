"""Hostile input gets a clear 4xx, never a server error: NUL characters, over-long text, empty profiles.

PostgreSQL cannot hold NUL in text, so before the request guard a NUL in the
marketplace search or a chat question was a DataError (500); a profile with no
(or none of the requested) collections made the scope query raise EmptyResultSet.
Clients here do not re-raise server errors, so a 500 is seen as a response.
"""

from __future__ import annotations

import pytest

from knowledge.models import ChatSession, Collection, Profile, ProfileCollection
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db
NUL = "\x00"


@pytest.mark.security
def test_a_profile_with_no_matching_collections_is_a_clear_400(api, alice, world):
    empty = Profile.objects.create(owner=alice, name="empty", tag="empty")
    other = Profile.objects.create(owner=alice, name="other", tag="other")
    ProfileCollection.objects.create(profile=other, collection=world["public"])
    question = "What is in it?"
    cases = [
        {"question": question, "profile": empty.pk},
        {"question": question, "profile": other.pk, "collections": [world["private"].pk]},
        {"question": question, "profile": empty.pk, "collections": [world["private"].pk]},
    ]
    for url in ("/api/v1/retrieve/", "/api/v1/query/"):
        for body in cases:
            error = assert_error(api.post(url, body, format="json"), 400)
            assert "profile" in error["message"] and "collection" in error["message"], error
    assert not ChatSession.objects.exists()  # a refused question starts nothing


@pytest.mark.security
def test_nul_in_page_inputs_is_a_400_and_stores_nothing(page, alice, world):
    mine = world["private"].pk
    requests = [
        ("get", "/marketplace/", {"q": f"maps{NUL}"}),
        ("get", "/collections/", {"anything": NUL}),
        ("post", "/chat/ask/", {"question": f"What{NUL}?", "collections": [mine]}),
        ("post", "/collections/", {"name": f"new{NUL}", "description": "d"}),
        ("post", "/collections/", {"name": "new", "description": f"d{NUL}"}),
        ("post", "/profiles/", {"name": f"p{NUL}", "tag": "p", "collections": [mine]}),
        ("post", "/accounts/tokens/", {"name": f"t{NUL}"}),
        ("post", f"/collections/{mine}/settings/", {"action": "visibility", "visibility": f"public{NUL}"}),
        ("post", "/accounts/login/", {"username": f"alice{NUL}", "password": "x"}),
    ]
    for method, url, data in requests:
        response = getattr(page, method)(url, data)
        assert response.status_code == 400, (url, data, response.status_code)
        assert "NUL" in response.content.decode(), url
    event_stream = page.post(
        "/chat/ask/", {"question": f"What{NUL}?", "collections": [mine]}, HTTP_ACCEPT="text/event-stream"
    )
    assert event_stream.status_code == 400 and "NUL" in event_stream.json()["error"]
    assert not Collection.objects.filter(name__startswith="new").exists()
    assert not Profile.objects.exists() and not ChatSession.objects.exists()
    assert Collection.objects.get(pk=mine).visibility == "private"


@pytest.mark.security
def test_nul_anywhere_in_api_input_is_a_400(api, alice, world):
    mine = world["private"].pk
    requests = [
        ("get", "/api/v1/marketplace/", {"search": NUL}),
        ("get", "/api/v1/collections/", {"search": f"a{NUL}"}),
        ("get", "/api/v1/collections/", {f"x{NUL}": "1"}),
        ("post", "/api/v1/collections/", {"name": f"n{NUL}"}),
        ("post", "/api/v1/collections/", {"name": "n", "tags": [f"t{NUL}"]}),
        ("patch", f"/api/v1/collections/{mine}/", {"description": NUL}),
        ("post", "/api/v1/query/", {"question": f"q{NUL}", "collections": [mine]}),
        ("post", "/api/v1/retrieve/", {"question": "q", "collections": [mine], "overrides": {NUL: 1}}),
        ("post", "/api/v1/profiles/", {"name": "p", "tag": "p", "knowledge_overrides": {"maxDocs": NUL}}),
        ("post", "/api/v1/tokens/", {"name": f"t{NUL}"}),
        ("post", "/api/v1/auth/token/", {"username": f"alice{NUL}", "password": "x"}),
    ]
    for method, url, data in requests:
        response = getattr(api, method)(url, data, **({} if method == "get" else {"format": "json"}))
        assert_error(response, 400)
    assert Collection.objects.filter(owner=alice).count() == 3 and not Profile.objects.exists()


@pytest.mark.security
def test_over_long_text_on_pages_is_a_400_not_a_database_error(page, alice):
    long = "x" * 201
    for url, data in [
        ("/collections/", {"name": long}),
        ("/profiles/", {"name": long, "tag": "p"}),
        ("/profiles/", {"name": "p", "tag": "t" * 41}),
        ("/profiles/", {"name": "p", "tag": "not a slug!"}),
        ("/accounts/tokens/", {"name": long}),
    ]:
        response = page.post(url, data)
        assert response.status_code == 400, (url, data, response.status_code)
    assert not Collection.objects.exists() and not Profile.objects.exists()


@pytest.mark.security
def test_a_hostile_upload_name_or_declared_type_never_reaches_the_database(page, api, world):
    from django.core.files.uploadedfile import SimpleUploadedFile

    mine = world["private"]
    declared = ["text/plain; x=" + "y" * 300, f"text/pl{NUL}ain", "application/" + "x" * 200]
    for index, content_type in enumerate(declared):
        data = b"plain text number %d" % index
        upload = SimpleUploadedFile(f"api{NUL}{index}.txt", data, content_type=content_type)
        response = api.post(f"/api/v1/collections/{mine.pk}/documents/", {"file": upload}, format="multipart")
        assert response.status_code < 500, (content_type[:20], response.status_code)
        upload = SimpleUploadedFile(f"page{index}.txt", data + b" page", content_type=content_type)
        response = page.post(f"/collections/{mine.pk}/upload/", {"file": upload})
        assert response.status_code < 500, (content_type[:20], response.status_code)
    stored = mine.documents.values_list("filename", "content_type")
    assert all(NUL not in name and len(kind) <= 100 and NUL not in kind for name, kind in stored)


def test_ids_beyond_bigint_are_not_found_or_bad_input(page, api, world):
    """Already handled (Django's int converters and lookups); kept so it stays that way."""
    huge = "9" * 25
    for url in [
        f"/collections/{huge}/",
        f"/documents/{huge}/view/",
        f"/profiles/{huge}/",
        f"/chat/?session={huge}",
        f"/collections/{huge}/documents.json",
    ]:
        assert page.get(url).status_code in (400, 404), url
    for url in [
        f"/api/v1/collections/{huge}/",
        f"/api/v1/documents/{huge}/",
        f"/api/v1/sessions/{huge}/",
        f"/api/v1/profiles/{huge}/",
        f"/api/v1/collections/{huge}/subscriptions/",
    ]:
        assert api.get(url).status_code in (400, 404), url
    assert api.delete(f"/api/v1/tokens/{huge}/").status_code in (400, 404)
    for url in [
        f"/marketplace/{huge}/subscribe/",
        f"/collections/{world['private'].pk}/subscriptions/{huge}/revoke/",
    ]:
        assert page.post(url).status_code in (400, 404), url
    assert page.post("/chat/ask/", {"question": "q", "profile": huge}).status_code in (400, 404)
