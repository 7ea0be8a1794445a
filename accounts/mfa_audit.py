"""Every MFA event in the audit log (accounts.audit): authenticators added and removed, recovery
codes regenerated, second factors used (sign-in, passwordless sign-in, re-authentication) and
refused (recorded by accounts/mfa_forms.py, which knows the reason). From allauth.mfa's signals,
so every page that adds, removes or uses an authenticator is covered.

Events: mfa.authenticator_added, mfa.authenticator_removed, mfa.recovery_codes_regenerated,
mfa.login (method totp, recovery_codes or webauthn after a password; passkey alone: passkey),
mfa.recovery_code_used (beside mfa.login), mfa.reauthenticated, mfa.login_refused (method, reason).
No secret is recorded: only the authenticator's type and id.
"""

from __future__ import annotations

from allauth.mfa import signals
from allauth.mfa.models import Authenticator

from accounts.audit import AuditSubject, audit_record


def connect() -> None:
    signals.authenticator_added.connect(_added, dispatch_uid="audit-mfa-added")
    signals.authenticator_removed.connect(_removed, dispatch_uid="audit-mfa-removed")
    signals.authenticator_reset.connect(_reset, dispatch_uid="audit-mfa-reset")
    signals.authenticator_used.connect(_used, dispatch_uid="audit-mfa-used")


def _record(action: str, user, authenticator: Authenticator, **details) -> None:
    changes = {"type": [None, authenticator.type], "authenticator": [None, authenticator.pk]}
    changes.update({name: [None, value] for name, value in details.items()})
    audit_record(action=action, obj=user, changes=changes, default_actor=user)


def _added(sender, request, user, authenticator, **kwargs) -> None:
    _record("mfa.authenticator_added", user, authenticator)


def _removed(sender, request, user, authenticator, **kwargs) -> None:
    _record("mfa.authenticator_removed", user, authenticator)


def _reset(sender, request, user, authenticator, **kwargs) -> None:
    _record("mfa.recovery_codes_regenerated", user, authenticator)


def _used(sender, request, user, authenticator, reauthenticated=False, passwordless=False, **kwargs) -> None:
    """The session is signed in only after this (allauth's log-in stages resume), so the user acts."""
    if reauthenticated:
        _record("mfa.reauthenticated", user, authenticator)
        return
    # "passkey": a passkey alone signed in (no password); else the factor after the password.
    _record("mfa.login", user, authenticator, method="passkey" if passwordless else authenticator.type)
    if authenticator.type == Authenticator.Type.RECOVERY_CODES:
        unused = Authenticator.objects.get(pk=authenticator.pk).wrap().get_unused_codes()
        _record("mfa.recovery_code_used", user, authenticator, left=len(unused))


def mfa_refusal_record(*, user, method: str, reason: str) -> None:
    """A second factor refused: ``user`` is the account signing in (None when not known)."""
    obj = user if user is not None else AuditSubject(object_type="auth.user")
    audit_record(
        action="mfa.login_refused", obj=obj, changes={"method": [None, method], "reason": [None, reason]}
    )
