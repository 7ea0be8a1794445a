"""Request bodies built to crash the JSON decoder get a 400 with the usual error body, never a 500."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.api.conftest import assert_error

pytestmark = [pytest.mark.django_db, pytest.mark.security]

DEEP_OBJECT = '{"a":' * 5_000 + "1" + "}" * 5_000
DEEP_ARRAY = "[" * 100_000 + "]" * 100_000
# Under Python's recursion limit, so only the configured depth limit refuses it.
MODERATELY_DEEP = "[" * 200 + "]" * 200


@pytest.mark.parametrize("body", [DEEP_OBJECT, DEEP_ARRAY, MODERATELY_DEEP], ids=["object", "array", "200"])
@pytest.mark.parametrize(
    "path", ["/api/v1/collections/", "/api/v1/query/", "/api/v1/retrieve/", "/api/v1/profiles/"]
)
def test_deeply_nested_bodies_are_a_400(bearer, alice, path, body):
    response = bearer(alice).post(path, data=body, content_type="application/json")
    error = assert_error(response, 400)
    assert "nests deeper than" in error["message"]


def test_deeply_nested_body_before_authentication_is_a_400(db):
    response = APIClient().post("/api/v1/auth/token/", data=DEEP_ARRAY, content_type="application/json")
    assert_error(response, 400)


def test_the_depth_limit_is_a_setting(bearer, alice, settings):
    body = '{"name": {"a": {"b": 1}}}'
    settings.API_MAX_JSON_DEPTH = 2
    response = bearer(alice).post("/api/v1/collections/", data=body, content_type="application/json")
    assert "nests deeper than 2" in assert_error(response, 400)["message"]
    settings.API_MAX_JSON_DEPTH = 32
    response = bearer(alice).post("/api/v1/collections/", data=body, content_type="application/json")
    assert "nests deeper" not in response.content.decode()  # parsed; the serializer judges the value
