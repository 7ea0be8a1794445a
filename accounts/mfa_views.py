"""allauth.mfa's pages that add an authenticator, open to local accounts only (accounts/mfa.py)."""

from __future__ import annotations

from functools import wraps

from allauth.mfa.totp import views as totp_views
from allauth.mfa.webauthn import views as webauthn_views
from django.shortcuts import render

from accounts.mfa import EXTERNAL_ACCOUNT_MESSAGE, mfa_local_account


def local_accounts_only(view):
    """``view`` for a local account; a provider's or directory's user gets 403 with the reason
    (their provider does MFA, and a second factor here would not guard their sign-in)."""

    @wraps(view)
    def checked(request, *args, **kwargs):
        if request.user.is_authenticated and not mfa_local_account(request.user):
            return render(request, "accounts/closed.html", {"message": EXTERNAL_ACCOUNT_MESSAGE}, status=403)
        return view(request, *args, **kwargs)

    return checked


activate_totp = local_accounts_only(totp_views.activate_totp)
add_webauthn = local_accounts_only(webauthn_views.add_webauthn)
