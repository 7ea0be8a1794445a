import logging
import unicodedata
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.forms import (
    AuthenticationForm,
    PasswordChangeForm,
    PasswordResetForm,
    UserCreationForm,
)

from accounts.mfa import passkey_only_account
from accounts.throttles import throttle_charge
from config.base.errors import RateLimitedError

logger = logging.getLogger(__name__)


class LoginForm(AuthenticationForm):
    """Django's log-in form; with local log-in off every failure says so, the same words whether or
    not the password was right, so the page is no oracle for the passwords of refused accounts."""

    def get_invalid_login_error(self):
        if not settings.LOCAL_LOGIN_ENABLED:
            return forms.ValidationError(
                "Password log-in is off, except for operator accounts: "
                "sign in with your organisation's provider.",
                code="local_login_off",
            )
        return super().get_invalid_login_error()


class SignUpForm(UserCreationForm):
    """Sign-up with an email address, so a forgotten password can be reset."""

    email = forms.EmailField(required=True, help_text="Used only to reset your password.")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class PasswordChangeWithTokensForm(PasswordChangeForm):
    """A password change that, unless unticked, also cuts off every API token (they outlive passwords)."""

    revoke_api_tokens = forms.BooleanField(
        required=False,
        initial=True,
        label="Also revoke my API tokens",
        help_text="Scripts using them are refused until you give them new tokens.",
    )

    def __init__(self, user, *args, request=None, **kwargs):
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self):
        """Checked like a log-in (django-axes counts a wrong one and refuses a locked-out client),
        or a stolen session could guess the password without limit."""
        old_password = self.cleaned_data["old_password"]
        checked = authenticate(self.request, username=self.user.get_username(), password=old_password)
        if checked is None or checked.pk != self.user.pk:
            raise forms.ValidationError(self.error_messages["password_incorrect"], code="password_incorrect")
        return old_password


def _accounts_to_reset(email: str):
    """Django's (active accounts of this address with a password) and those that sign in with a
    passkey alone: their address is their way back in when the passkey is lost (Django leaves out
    every account without a password, taking it for a provider's)."""
    field = get_user_model().get_email_field_name()
    active = get_user_model()._default_manager.filter(**{f"{field}__iexact": email, "is_active": True})
    for user in active:
        if _same_address(email, getattr(user, field)) and (
            user.has_usable_password() or passkey_only_account(user)
        ):
            yield user


def _same_address(one: str, other: str) -> bool:
    """As Django compares them: letters whose capitals collide (a dotless ı is an I in upper case,
    so the database's case-insensitive match finds it) do not make the same address."""
    return unicodedata.normalize("NFKC", one).casefold() == unicodedata.normalize("NFKC", other).casefold()


class ThrottledPasswordResetForm(PasswordResetForm):
    """Sends an account at most API_THROTTLE_PASSWORD_RESET reset e-mails, whoever asks.

    Over the rate the e-mail is not sent and the page answers as usual, so it never tells
    whether an address has an account (the per-address rate is the page's 429).
    """

    def get_users(self, email):
        for user in _accounts_to_reset(email):
            try:
                throttle_charge(scope="password_reset", ident=f"account-{user.pk}")
            except RateLimitedError as exc:
                logger.warning("password reset e-mail to user %s not sent: %s", user.pk, exc)
                continue
            yield user

    def save(self, *args, **kwargs):
        """Links, and the site's name, from KNOWLEDGE_PUBLIC_URL: Django would take them from the
        request's Host header, which the client writes (ALLOWED_HOSTS does not even check its port),
        so a forged one would receive the e-mail's reset token."""
        public = urlsplit(settings.KNOWLEDGE_PUBLIC_URL)
        kwargs.update(domain_override=public.netloc, use_https=public.scheme == "https")
        return super().save(*args, **kwargs)
