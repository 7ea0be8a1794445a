"""SCIM's error answer (RFC 7644 section 3.12)."""

from __future__ import annotations

ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"


class ScimError(Exception):
    """A refused SCIM request: ``status``, RFC 7644's ``scim_type`` (e.g. "uniqueness") and a ``detail``
    written for the operator reading the provider's provisioning log."""

    def __init__(self, status: int, detail: str, scim_type: str = "") -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.scim_type = scim_type

    def body(self) -> dict:
        body = {"schemas": [ERROR_SCHEMA], "status": str(self.status), "detail": self.detail}
        if self.scim_type:
            body["scimType"] = self.scim_type
        return body


def schema_check(body: dict, schema: str, what: str) -> None:
    """ScimError 400 unless ``body``'s ``schemas`` is a list naming ``schema`` (a string or a number
    there is no list of schemas, and a string is never searched for a part of it)."""
    schemas = body.get("schemas")
    if not isinstance(schemas, list) or schema not in schemas:
        raise ScimError(400, f"{what} must have the schema {schema}", "invalidSyntax")


def invalid_value(detail: str) -> ScimError:
    return ScimError(400, detail, "invalidValue")


def not_found(what: str) -> ScimError:
    return ScimError(404, f"no such {what}")
