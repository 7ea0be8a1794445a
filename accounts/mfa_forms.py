"""allauth.mfa's second-factor forms (MFA_FORMS), each recording its refusals in the audit log.

allauth sends a signal for a wrong code only, without telling it from a reused one, and none for a
refused passkey or a rate-limited try; a refusal is recorded here, where its reason is known.
A malformed WebAuthn answer (a missing key in the JSON the browser posts) makes fido2 raise
KeyError, which allauth lets through as a 500: here it is refused as any wrong answer is.
"""

from __future__ import annotations

from allauth.mfa.adapter import get_adapter
from allauth.mfa.base.forms import AuthenticateForm as BaseCodeForm
from allauth.mfa.base.forms import ReauthenticateForm as BaseReauthenticateForm
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.forms import ActivateTOTPForm as BaseActivateTOTPForm
from allauth.mfa.totp.internal.auth import validate_totp_code
from allauth.mfa.utils import decrypt
from allauth.mfa.webauthn.forms import AddWebAuthnForm as BaseAddPasskeyForm
from allauth.mfa.webauthn.forms import AuthenticateWebAuthnForm as BasePasskeyForm
from allauth.mfa.webauthn.forms import LoginWebAuthnForm as BasePasskeyLoginForm
from django.core.exceptions import ValidationError

from accounts.mfa import totp_code_spend
from accounts.mfa_audit import mfa_refusal_record

RATE_LIMITED = "too_many_login_attempts"
REUSED = "reused_code"


class ActivateTOTPForm(BaseActivateTOTPForm):
    """Turning an authenticator app on: its code counts as used, as a sign-in's does. allauth checks
    the first code without marking it, so it would pass once more at the next sign-in."""

    def clean_code(self) -> str:
        code = super().clean_code()
        if not totp_code_spend(user=self.user, code=code):
            raise get_adapter().validation_error("incorrect_code")
        return code


class AuthenticateForm(BaseCodeForm):
    """The code step of a sign-in: an authenticator app's code, or a recovery code. An app's code
    is spent in the database too (allauth's own mark is in the cache, which may evict it)."""

    def clean_code(self) -> str:
        try:
            return spent_once(self, super().clean_code())
        except ValidationError as exc:
            mfa_refusal_record(user=self.user, method="code", reason=code_refusal(self.user, self.data, exc))
            raise


class ReauthenticateForm(BaseReauthenticateForm):
    """The code asked again before a factor is added or removed: spent like a sign-in's."""

    def clean_code(self) -> str:
        return spent_once(self, super().clean_code())


def spent_once(form, code: str) -> str:
    """``code``, accepted by allauth, once spent; refused as reused when it was spent already."""
    if form.authenticator.type == Authenticator.Type.TOTP and not totp_code_spend(user=form.user, code=code):
        raise ValidationError(get_adapter().error_messages["incorrect_code"], code=REUSED)
    return code


def code_refusal(user, data, exc: ValidationError) -> str:
    """Why a code was refused: too many tries, a right code already used once, or a wrong one."""
    if exc.code == RATE_LIMITED:
        return "too many attempts"
    if exc.code == REUSED:
        return "reused code"
    code = str(data.get("code", ""))
    totp = Authenticator.objects.filter(user=user, type=Authenticator.Type.TOTP).first()
    if totp is not None and code and validate_totp_code(decrypt(totp.data["secret"]), code):
        return "reused code"  # right for this time window, but allauth saw it used already
    return "wrong code"


def well_formed(clean):
    """``clean()``, with a malformed WebAuthn answer refused as a wrong one."""
    try:
        return clean()
    except (KeyError, ValueError, TypeError) as exc:
        raise get_adapter().validation_error("incorrect_code") from exc


class AddWebAuthnForm(BaseAddPasskeyForm):
    def clean(self):
        return well_formed(super().clean)


class AuthenticateWebAuthnForm(BasePasskeyForm):
    """The passkey (security key) step of a sign-in, after the password."""

    def clean_credential(self):
        try:
            return well_formed(super().clean_credential)
        except ValidationError as exc:
            reason = "too many attempts" if exc.code == RATE_LIMITED else "passkey not accepted"
            mfa_refusal_record(user=self.user, method="passkey", reason=reason)
            raise


class ReauthenticateWebAuthnForm(AuthenticateWebAuthnForm):
    """The passkey asked again before a factor is added or removed (allauth's, on our checks)."""

    reauthenticated = True
    passwordless = False


class LoginWebAuthnForm(BasePasskeyLoginForm):
    """Sign-in with a passkey alone. The account is whatever the credential claims, so a refusal
    names the account only when the passkey itself was verified (it never is, when refused)."""

    def clean_credential(self):
        try:
            return well_formed(super().clean_credential)
        except ValidationError:
            mfa_refusal_record(user=None, method="passkey", reason="passkey not accepted")
            raise
