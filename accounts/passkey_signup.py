"""Sign-up with a passkey instead of a password: a step of our own sign-up page.

allauth's passkey sign-up is off (MFA_PASSKEY_SIGNUP_ENABLED): it requires mandatory e-mail
verification, which this product does not do for any sign-up. Ours keeps the password sign-up's
rules (closed while local log-in is off, the per-address sign-up rate, Django's username checks,
an e-mail address for recovery) and creates nothing until the passkey exists:

1. /accounts/signup/passkey/ takes a username and an e-mail address, charges the sign-up rate,
   and reserves the account's id (the next value of auth_user's id sequence): a passkey stores
   its account's id as the user handle, so the id must be known before the passkey is made.
2. /accounts/signup/passkey/create/ asks the browser for a discoverable, user-verified passkey for
   that id (allauth's WebAuthn ceremony and its JavaScript), and on its answer creates the account
   (no usable password), the passkey and recovery codes in one transaction, signs in and shows
   the codes.

An abandoned step 2 leaves nothing behind but an unused id; the name stays free until an account
really takes it (checked again at step 2, in any case, and under the database's unique constraint).

A lost passkey is not a lost account: the e-mail address gets a password reset (accounts.forms:
such an account may reset, though it has no password), and the password then signs in with a
recovery code as its second factor.
"""

from __future__ import annotations

from allauth.account.internal.flows.login import record_authentication
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.webauthn.internal import auth as webauthn
from allauth.mfa.webauthn.internal.flows import signup_authenticator
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.db import IntegrityError, connection, transaction
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.client_address import client_address
from accounts.mfa_forms import well_formed
from accounts.throttles import throttle_charge
from accounts.views import form_rate_limited, page_closed  # the password sign-up's own refusals, alike here
from config.base.errors import RateLimitedError

PENDING_SESSION_KEY = "accounts.passkey_signup"
RECOVERY_CODES_MESSAGE = (
    "Keep these recovery codes somewhere safe: if you lose your passkey, reset your password by "
    "e-mail and sign in with it and one of these codes."
)


class PasskeySignUpForm(forms.ModelForm):
    """The password sign-up's fields less the passwords: Django's username rules, a unique name."""

    email = forms.EmailField(
        required=True,
        help_text="Used to reach you about your account, and to let you back in if you lose your passkey.",
    )

    class Meta:
        model = get_user_model()
        fields = ("username", "email")

    def clean_username(self) -> str:
        """Unique whatever the case, as the password sign-up's form checks it."""
        username = self.cleaned_data["username"]
        if get_user_model().objects.filter(username__iexact=username).exists():
            raise forms.ValidationError("A user with that username already exists.")
        return username


class PasskeyForm(forms.Form):
    """The browser's answer to the registration ceremony, checked against the session's challenge."""

    credential = forms.JSONField(widget=forms.HiddenInput)

    def clean_credential(self) -> dict:
        credential = self.cleaned_data["credential"]
        binding = well_formed(lambda: _registered(credential))
        discoverable = credential.get("clientExtensionResults", {}).get("credProps", {}).get("rk")
        if not binding.is_user_verified() or not discoverable:
            # Without both, the passkey could not sign in alone, and the account would have no way in.
            raise forms.ValidationError("This authenticator cannot make a passkey: use another one.")
        return credential


def _registered(credential: dict):
    """The passkey's data, once its challenge, origin and RP ID check out (allauth's ceremony)."""
    webauthn.parse_registration_response(credential)
    return webauthn.complete_registration(credential)


@require_http_methods(["GET", "POST"])
def passkey_signup(request):
    if not settings.LOCAL_LOGIN_ENABLED:
        return page_closed(request, "Sign-up is closed: accounts come from your organisation's sign-in.")
    form = PasskeySignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:  # accounts created, per client address: the same rate as the password sign-up
            throttle_charge(scope="signup", ident=f"address-{client_address(request)}")
        except RateLimitedError as exc:
            return form_rate_limited(request, "accounts/signup_passkey.html", form, exc)
        request.session[PENDING_SESSION_KEY] = {"id": _reserve_user_id(), **form.cleaned_data}
        return redirect("accounts:signup_passkey_create")
    return render(request, "accounts/signup_passkey.html", {"form": form})


@require_http_methods(["GET", "POST"])
def passkey_signup_create(request):
    pending = request.session.get(PENDING_SESSION_KEY)
    if not settings.LOCAL_LOGIN_ENABLED or not pending:
        return redirect("accounts:signup_passkey")
    form = PasskeyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        passkey = _create_account(request, pending, form.cleaned_data["credential"])
        if passkey is None:
            messages.error(request, f"The name {pending['username']} was taken meanwhile: choose another.")
            return redirect("accounts:signup_passkey")
        user = passkey.user
        login(request, user, backend="accounts.backends.LocalPasswordBackend")
        # The passkey was presented a moment ago: allauth's pages that ask for it again (the recovery
        # codes, shown next) take that as a re-check, as if just asked (for the next few minutes).
        record_authentication(
            request, user, "mfa", id=passkey.pk, type=passkey.type, passwordless=True, reauthenticated=True
        )
        messages.success(request, f"Welcome, {user.username}. {RECOVERY_CODES_MESSAGE}")
        return redirect("mfa_view_recovery_codes")
    options = webauthn.begin_registration(_pending_user(pending), passwordless=True)
    context = {"form": form, "username": pending["username"], "js_data": {"creation_options": options}}
    return render(request, "accounts/signup_passkey_create.html", context)


def _reserve_user_id() -> int:
    """An id no account has or will be given: taken from the sequence that numbers accounts."""
    table = get_user_model()._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [table])
        return cursor.fetchone()[0]


def _pending_user(pending: dict):
    """The account to be, unsaved, as the ceremony names it (its id, username and address)."""
    return get_user_model()(pk=pending["id"], username=pending["username"], email=pending["email"])


def _create_account(request, pending: dict, credential: dict):
    """The account, its passkey and its recovery codes, together or not at all: the passkey (its
    ``user`` the account), or None when the name is taken by now."""
    user = _pending_user(pending)
    user.set_unusable_password()
    try:
        with transaction.atomic():
            if get_user_model().objects.filter(username__iexact=user.username).exists():
                return None  # "Alice" signed up while "alice" made the passkey
            user.save(force_insert=True)
            passkey = signup_authenticator(request, user=user, name="Passkey", credential=credential)
            RecoveryCodes.activate(user)  # allauth makes none at a passkey sign-up
    except IntegrityError:
        return None
    finally:
        request.session.pop(PENDING_SESSION_KEY, None)
    return passkey
