"""Sign-ins, failed sign-ins, lock-outs and password changes, recorded from the signals that announce
them (Django's auth signals, django-axes' lock-out, a user saved with a new password), so every path
that performs one is covered: log-in page, admin log-in, API password exchange, reset, admin, commands.
"""

from __future__ import annotations

from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.db.models.signals import post_save
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditEvent


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


def _locked_out(sender, request=None, username=None, **kwargs) -> None:
    """Once per lock-out: django-axes sends this signal again for every later failure while locked
    out (counted, or refused uncounted: axes_failures_since_start None). The count may pass the
    limit without ever equalling it (two failures at once; an address's count over a name's), so
    the record is kept unless this name already has one within the cool-off."""
    failures = getattr(request, "axes_failures_since_start", None)
    if failures is None or failures < settings.AXES_FAILURE_LIMIT:
        return
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    if AuditEvent.objects.filter(
        action="auth.locked_out", object_repr=username or "", at__gte=since
    ).exists():
        return
    _record_named("auth.locked_out", username or "")


def _record_named(action: str, username: str) -> None:
    user = get_user_model().objects.filter(username=username).first() if username else None
    if user is not None:
        audit_record(action=action, obj=user)
    else:
        audit_record(action=action, object_type="auth.user", object_repr=username)


def _user_saved(sender, instance, created, **kwargs) -> None:
    """A password set on any path (change, reset, admin, command) is held on the instance until its
    save returns: Django's AbstractBaseUser.save reads ``_password`` after this signal."""
    if created or getattr(instance, "_password", None) is None:
        return
    # Reset by e-mail, nobody is signed in: the account's owner acts.
    audit_record(
        action="auth.password_changed", obj=instance, default_actor=instance, changes={"password": ["", ""]}
    )
