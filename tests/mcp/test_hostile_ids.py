"""A resource id that is not ASCII digits is "no such collection", not an internal error.

``"²".isdigit()`` is true but ``int("²")`` raises: the resource answered -32603
with the server's traceback in its message.
"""

from __future__ import annotations

import pytest
from mcp import MCPError

from tests.mcp.conftest import http_client, run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]

INTERNAL_ERROR = -32603


@pytest.mark.parametrize("raw", ["²", "1²", "٣", "-1", str(2**63)])
def test_a_collection_resource_with_a_hostile_id_is_not_found(live_mcp, alice, token_for, hills, raw):
    token = token_for(alice)

    async def scenario():
        async with http_client(live_mcp.url, token) as client:
            try:
                await client.read_resource(f"knowledge://collections/{raw}")
            except MCPError as exc:
                return exc
            return None

    error = run(scenario)
    assert error is not None, "the resource was read"
    assert error.code != INTERNAL_ERROR, error.message
    assert "no such collection" in error.message and "Traceback" not in error.message


def test_tool_arguments_with_a_lone_surrogate_are_refused():
    from rest_framework.serializers import ValidationError

    from knowledge.mcp.server import _refuse_nul

    with pytest.raises(ValidationError, match="surrogate"):
        _refuse_nul({"search": "notes\ud800"})
