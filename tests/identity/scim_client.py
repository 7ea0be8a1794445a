"""A SCIM client for the tests: real HTTP requests to /scim/v2/ with a bearer token, as an
identity provider sends them, and the request bodies Microsoft Entra ID and Okta document."""

from __future__ import annotations

import requests

from accounts.scim.tokens import scim_token_create

SCIM_JSON = "application/scim+json"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE_SCHEMA = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"


class ScimClient:
    def __init__(self, base_url: str, secret: str | None) -> None:
        self.base = base_url.rstrip("/") + "/scim/v2/"
        self.http = requests.Session()
        self.http.headers["Content-Type"] = SCIM_JSON
        self.http.headers["Accept"] = SCIM_JSON
        if secret is not None:
            self.http.headers["Authorization"] = f"Bearer {secret}"

    def request(self, method: str, path: str, body=None, **params) -> requests.Response:
        return self.http.request(method, self.base + path, json=body, params=params or None, timeout=30)

    def get(self, path: str, **params):
        return self.request("GET", path, **params)

    def post(self, path: str, body):
        return self.request("POST", path, body)

    def put(self, path: str, body):
        return self.request("PUT", path, body)

    def patch(self, path: str, *operations):
        return self.request("PATCH", path, patch(*operations))

    def delete(self, path: str):
        return self.request("DELETE", path)


def scim_client(base_url: str, *, name: str, source: str) -> ScimClient:
    """A client with a new token for ``source``, made as the admin makes one."""
    _token, secret = scim_token_create(name=name, source=source)
    return ScimClient(base_url, secret)


def patch(*operations) -> dict:
    return {"schemas": [PATCH_SCHEMA], "Operations": list(operations)}


def entra_user(user_name: str, external_id: str = "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef") -> dict:
    """Entra ID's create request (Microsoft's "Develop and plan provisioning for a SCIM endpoint",
    User Operations: Create User)."""
    return {
        "schemas": [USER_SCHEMA, ENTERPRISE_SCHEMA],
        "externalId": external_id,
        "userName": user_name,
        "active": True,
        "emails": [{"primary": True, "type": "work", "value": f"{user_name.split('@')[0]}@testuser.com"}],
        "meta": {"resourceType": "User"},
        "name": {"formatted": "givenName familyName", "familyName": "familyName", "givenName": "givenName"},
        "roles": [],
    }


def entra_group(display_name: str, external_id: str = "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159") -> dict:
    """Entra ID's create group request."""
    return {
        "schemas": [GROUP_SCHEMA, "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"],
        "externalId": external_id,
        "displayName": display_name,
        "meta": {"resourceType": "Group"},
    }


def okta_user(user_name: str = "test.user@okta.local", external_id: str = "00ujl29u0le5T6Aj10h7") -> dict:
    """Okta's create request (Okta's SCIM 2.0 protocol reference: Create the user)."""
    return {
        "schemas": [USER_SCHEMA],
        "userName": user_name,
        "name": {"givenName": "Test", "familyName": "User"},
        "emails": [{"primary": True, "value": user_name, "type": "work"}],
        "displayName": "Test User",
        "locale": "en-US",
        "externalId": external_id,
        "groups": [],
        "password": "1mz050nq",
        "active": True,
    }


def okta_group(display_name: str = "Test SCIMv2") -> dict:
    return {"schemas": [GROUP_SCHEMA], "displayName": display_name, "members": []}
