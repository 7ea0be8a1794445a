"""What the service provider supports (RFC 7644 section 4): ServiceProviderConfig, ResourceTypes
and Schemas, as providers read them to learn the endpoint."""

from __future__ import annotations

from accounts.scim.errors import not_found
from accounts.scim.groups import GROUP_SCHEMA
from accounts.scim.http import MAX_PAGE_SIZE, list_response, location
from accounts.scim.users import ENTERPRISE_SCHEMA, USER_SCHEMA

CONFIG_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
RESOURCE_TYPE_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
SCHEMA_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema"


def service_provider_config() -> dict:
    return {
        "schemas": [CONFIG_SCHEMA],
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": MAX_PAGE_SIZE},
        "changePassword": {"supported": False},
        "sort": {"supported": False},
        "etag": {"supported": False},
        "authenticationSchemes": [
            {
                "type": "oauthbearertoken",
                "name": "Bearer token",
                "description": "A SCIM token made in the admin, sent as 'Authorization: Bearer <token>'.",
                "primary": True,
            }
        ],
        "meta": {"resourceType": "ServiceProviderConfig", "location": location("ServiceProviderConfig")},
    }


_TYPES = {
    "User": {"endpoint": "/Users", "schema": USER_SCHEMA, "extensions": [ENTERPRISE_SCHEMA]},
    "Group": {"endpoint": "/Groups", "schema": GROUP_SCHEMA, "extensions": []},
}


def _resource_type(name: str) -> dict:
    kind = _TYPES[name]
    return {
        "schemas": [RESOURCE_TYPE_SCHEMA],
        "id": name,
        "name": name,
        "endpoint": kind["endpoint"],
        "schema": kind["schema"],
        "schemaExtensions": [{"schema": one, "required": False} for one in kind["extensions"]],
        "meta": {"resourceType": "ResourceType", "location": location(f"ResourceTypes/{name}")},
    }


def resource_types(name: str = "") -> dict:
    if name:
        if name not in _TYPES:
            raise not_found("resource type")
        return _resource_type(name)
    return list_response([_resource_type(one) for one in _TYPES], total=len(_TYPES), start=1)


def _attribute(name: str, kind: str = "string", **more) -> dict:
    return {
        "name": name,
        "type": kind,
        "multiValued": False,
        "required": False,
        "caseExact": False,
        "mutability": "readWrite",
        "returned": "default",
        "uniqueness": "none",
        **more,
    }


_SCHEMAS = {
    USER_SCHEMA: {
        "name": "User",
        "attributes": [
            _attribute("userName", required=True, uniqueness="server"),
            _attribute("externalId"),
            _attribute(
                "name",
                "complex",
                subAttributes=[_attribute("givenName"), _attribute("familyName")],
            ),
            _attribute("displayName", mutability="readOnly"),
            _attribute("active", "boolean"),
            _attribute(
                "emails",
                "complex",
                multiValued=True,
                subAttributes=[_attribute("value"), _attribute("type"), _attribute("primary", "boolean")],
            ),
        ],
    },
    GROUP_SCHEMA: {
        "name": "Group",
        "attributes": [
            _attribute("displayName", required=True, uniqueness="server"),
            _attribute("externalId"),
            _attribute(
                "members",
                "complex",
                multiValued=True,
                subAttributes=[_attribute("value", mutability="immutable"), _attribute("display")],
            ),
        ],
    },
}


def _schema(uri: str) -> dict:
    return {
        "schemas": [SCHEMA_SCHEMA],
        "id": uri,
        **_SCHEMAS[uri],
        "meta": {"resourceType": "Schema", "location": location(f"Schemas/{uri}")},
    }


def schemas(name: str = "") -> dict:
    if name:
        if name not in _SCHEMAS:
            raise not_found("schema")
        return _schema(name)
    return list_response([_schema(uri) for uri in _SCHEMAS], total=len(_SCHEMAS), start=1)
