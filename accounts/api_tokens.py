"""Services for personal API tokens: create (secret shown once), revoke, authenticate."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import ApiToken
from config.base.errors import KnowledgeError, NotFoundError
from config.base.prepared import PreparedSelect
from config.base.validation import text_clean

SECRET_PREFIX = "kn_"
PREFIX_LENGTH = 10  # "kn_" plus 7 random characters: enough to tell tokens apart
MAX_ACTIVE_TOKENS = 50
# The advisory lock's first key: token creations never wait on another feature's locks.
_LOCK_CLASS = "accounts_api_tokens"
LAST_USED_RESOLUTION = timedelta(minutes=1)


def secret_hash(secret: str) -> str:
    """What is stored of a bearer secret (API and SCIM tokens): its SHA-256, looked up through a
    unique index, so no stored secret is compared character by character."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """A new token for ``user`` and its secret; the secret is not stored and cannot be shown again."""
    name = text_clean(name, field="a token's name", max_length=100)
    if not name:
        raise KnowledgeError("a token needs a name")
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        _check_room_for_one_more(user)
        token = ApiToken.objects.create(
            user=user, name=name, prefix=secret[:PREFIX_LENGTH], key_hash=secret_hash(secret)
        )
        # Exchanging a password for a token, nobody is signed in yet: the owner acts.
        audit_record(action="token.created", obj=token, default_actor=user)
    return token, secret


def _check_room_for_one_more(user) -> None:
    """Refuse a token over the cap. The count and the insert after it run under the user's lock,
    held to the commit: counted without it, parallel creations all saw room and all inserted."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtext(%s), mod(%s, 2147483647)::int)", [_LOCK_CLASS, user.pk]
        )
    if ApiToken.objects.filter(user=user, revoked_at__isnull=True).count() >= MAX_ACTIVE_TOKENS:
        raise KnowledgeError(f"you already have {MAX_ACTIVE_TOKENS} active tokens; revoke one first")


def token_revoke(*, user, token_id) -> ApiToken:
    """Revoke one of ``user``'s tokens; others' tokens are NotFound. Revoking twice is harmless."""
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise NotFoundError("no such token")
    if token.revoked_at is None:
        with transaction.atomic():
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            audit_record(action="token.revoked", obj=token, default_actor=user)
    return token


@transaction.atomic
def tokens_revoke_all(*, user) -> int:
    """Revoke every active token of ``user`` (a changed or reset password); returns how many."""
    active = list(ApiToken.objects.select_for_update().filter(user=user, revoked_at__isnull=True))
    ApiToken.objects.filter(pk__in=[token.pk for token in active]).update(revoked_at=timezone.now())
    for token in active:  # a reset is done signed out: the owner acts
        audit_record(action="token.revoked", obj=token, default_actor=user)
    return len(active)


def tokens_for_user(*, user):
    return ApiToken.objects.filter(user=user)


# ApiToken.objects.filter(key_hash=..., revoked_at__isnull=True, user__is_active=True)
# .select_related("user").first(), its SQL built once: compiling it was a tenth of an API request's CPU.
_ACTIVE_TOKEN = PreparedSelect(
    ApiToken,
    related="user",
    where='"m"."key_hash" = %s AND "m"."revoked_at" IS NULL AND "r"."is_active"',
    order_by='"m"."created_at" DESC, "m"."id" DESC',
    limit=1,
)


def token_authenticate(secret: str):
    """The active user a valid, unrevoked token belongs to, else None."""
    if not secret or not secret.startswith(SECRET_PREFIX) or len(secret) > 200:
        return None
    found = _ACTIVE_TOKEN.fetch([secret_hash(secret)])
    if not found:
        return None
    # A directory user removed from the directory loses its tokens too. Only with a directory
    # configured: everyone else's tokens take no query more.
    if settings.AUTH_LDAP_SERVER_URI and not _directory_allows(found[0].user):
        return None
    last_used_touch(found[0])
    return found[0].user


def _directory_allows(user) -> bool:
    from accounts.directory import directory_allows  # python-ldap, loaded only with a directory

    return directory_allows(user)


def last_used_touch(token) -> None:
    """Record a token's use (an ApiToken, a ScimToken), at most once a minute: one conditional
    UPDATE, so busy clients don't write per request."""
    now = timezone.now()
    if token.last_used_at and now - token.last_used_at < LAST_USED_RESOLUTION:
        return
    type(token).objects.filter(pk=token.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    ).update(last_used_at=now)
