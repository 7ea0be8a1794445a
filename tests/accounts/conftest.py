"""The API fixtures (generous throttles, Bearer and anonymous clients) for the token endpoints' tests."""

from tests.api.conftest import anon, bearer, generous_throttles  # noqa: F401 (fixtures)
