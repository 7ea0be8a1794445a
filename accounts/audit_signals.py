"""Sign-ins, failed sign-ins, lock-outs and password changes, recorded from the signals that announce
them (Django's auth signals, django-axes' lock-out, a user saved with a new password), so every path
that performs one is covered: log-in page, admin log-in, API password exchange, reset, admin, commands.
"""

from __future__ import annotations

from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.db import connection, transaction
from django.db.models.signals import post_save
from django.utils import timezone

from accounts.audit import AuditSubject, audit_record
from accounts.login_limits import address_locked, login_failures, pair_locked
from accounts.models import AuditEvent

# pg_advisory_xact_lock key serialising lock-out records: two failures reaching a limit at once
# would otherwise both find no record and both write one.
_LOCKOUT_LOCK = 0x6B6E6F636B  # "knock"


def connect() -> None:
    user_logged_in.connect(_logged_in, dispatch_uid="audit-login")
    user_login_failed.connect(_login_failed, dispatch_uid="audit-login-failed")
    user_locked_out.connect(_locked_out, dispatch_uid="audit-locked-out")
    post_save.connect(_user_saved, sender=get_user_model(), dispatch_uid="audit-password")


def _logged_in(sender, request, user, **kwargs) -> None:
    audit_record(action="auth.login", obj=user, actor=user)


def _login_failed(sender, credentials, request=None, **kwargs) -> None:
    """The attempted name is kept as the object (Django has already masked the password)."""
    _record_named("auth.login_failed", credentials.get("username") or "")


def _locked_out(sender, request=None, username=None, ip_address=None, **kwargs) -> None:
    """One record per lock reached (the username at the address, the address), once per cool-off.

    django-axes sends this signal for every failure at or past a limit, without saying which:
    two failures counted at once pass a limit without meeting it, and an address reaching its
    limit while the pair is past its own is a new lock-out (of every name from there). So each
    lock's own count is read (accounts/login_limits.py), and a lock reached is recorded unless a
    record of it is younger than the cool-off; the lock makes a second failure wait for the
    first's record. A failure refused uncounted (axes_failures_since_start None) adds nothing.
    """
    if getattr(request, "axes_failures_since_start", None) is None:
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCKOUT_LOCK])
        since = timezone.now() - settings.AXES_COOLOFF_TIME
        reached = _locks_reached(username, ip_address, since)
        locked = [key for key in reached if not _recorded_since(key, since)]
        if locked:
            _record_named("auth.locked_out", username or "", changes={"locked": [None, locked]})


def _locks_reached(username: str | None, address: str | None, since) -> list[str]:
    """The locks, in words, that the counts since the cool-off began have reached."""
    if not address:
        return []
    found = login_failures(username=username, address=address, since=since)
    reached = [f"username {username} at address {address}"] if username and pair_locked(found) else []
    return reached + ([f"address {address}"] if address_locked(found) else [])


def _recorded_since(key: str, since) -> bool:
    recent = AuditEvent.objects.filter(action="auth.locked_out", at__gte=since)
    return recent.filter(changes__locked__1__contains=[key]).exists()


def _record_named(action: str, username: str, changes: dict | None = None) -> None:
    user = get_user_model().objects.filter(username=username).first() if username else None
    if user is not None:
        audit_record(action=action, obj=user, changes=changes)
    else:
        named = AuditSubject(object_type="auth.user", object_repr=username)
        audit_record(action=action, obj=named, changes=changes)


def _user_saved(sender, instance, created, **kwargs) -> None:
    """A password set on any path (change, reset, admin, command) is held on the instance until its
    save returns: Django's AbstractBaseUser.save reads ``_password`` after this signal."""
    if created or getattr(instance, "_password", None) is None:
        return
    # Reset by e-mail, nobody is signed in: the account's owner acts.
    audit_record(
        action="auth.password_changed", obj=instance, default_actor=instance, changes={"password": ["", ""]}
    )
