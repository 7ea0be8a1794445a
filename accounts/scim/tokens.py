"""SCIM bearer tokens: made in the admin (the secret shown once), revoked there, checked per request.

A secret is found by the SHA-256 of what the client sends, through the unique index: no stored
secret is ever compared character by character, so the time an answer takes says nothing about
how much of a guess was right.
"""

from __future__ import annotations

import secrets

from django.db import transaction
from django.utils import timezone

from accounts.api_tokens import last_used_touch, secret_hash
from accounts.audit import audit_record
from accounts.models import ScimToken
from config.base.errors import KnowledgeError
from config.base.validation import text_clean

SECRET_PREFIX = "scim_"
PREFIX_LENGTH = 12


def scim_token_create(*, name: str, source: str) -> tuple[ScimToken, str]:
    """A new token for the SCIM source ``source`` and its secret, which is not stored."""
    name = text_clean(name, field="a token's name", max_length=100)
    if not name or not source:
        raise KnowledgeError("a SCIM token needs a name and a source")
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ScimToken.objects.create(
            name=name, source=source, prefix=secret[:PREFIX_LENGTH], key_hash=secret_hash(secret)
        )
        audit_record(action="scim_token.created", obj=token, changes={"source": [None, source]})
    return token, secret


def scim_token_revoke(*, token: ScimToken) -> None:
    """Revoke ``token`` (its next request is refused); revoking twice is harmless."""
    if token.revoked_at is not None:
        return
    with transaction.atomic():
        ScimToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
        audit_record(action="scim_token.revoked", obj=token)


def scim_token_authenticate(secret: str) -> ScimToken | None:
    """The unrevoked token whose secret this is, else None."""
    if not secret or not secret.startswith(SECRET_PREFIX) or len(secret) > 200:
        return None
    token = ScimToken.objects.filter(key_hash=secret_hash(secret), revoked_at__isnull=True).first()
    if token is not None:
        last_used_touch(token)  # providers send bursts of requests: at most one write a minute
    return token
