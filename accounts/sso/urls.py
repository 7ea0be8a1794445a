"""allauth's pages under /accounts/, after ours (accounts/urls.py: log-in, log-out, sign-up and the
password pages win), less the flows that duplicate ours without their rules.

Blocked (404): e-mail management and confirmation, setting a password without the old one,
allauth's reset-by-key (ours revokes API tokens and clears the log-in limits), log-in and
re-authentication by e-mailed code, and the social sign-up form and connections page (a new
provider user is signed up by accounts/sso/adapters.py's rules or refused). tests/identity/
test_routes.py holds the list of every route served.

allauth.mfa's pages are served under /accounts/2fa/ (authenticators, recovery codes, the second
factor of a sign-in, passkey sign-in), with its add pages open to local accounts only
(accounts/mfa_views.py); its passkey sign-up is off (ours is accounts/passkey_signup.py).
"""

from django.http import Http404
from django.urls import include, path, re_path

from accounts import mfa_views

BLOCKED = [
    r"^email/",
    r"^confirm-email/",
    r"^password/set/",
    r"^password/reset/key/",
    r"^login/code/",
    r"^reauthenticate/code/",
    r"^3rdparty/signup/",
    r"^3rdparty/$",
    r"^social/",  # allauth's deprecated redirects to the 3rdparty pages
]


def not_found(request, *args, **kwargs):
    raise Http404("not available here")


LOCAL_ACCOUNTS_ONLY = [
    path("2fa/totp/activate/", mfa_views.activate_totp, name="mfa_activate_totp"),
    path("2fa/webauthn/add/", mfa_views.add_webauthn, name="mfa_add_webauthn"),
]

urlpatterns = [
    *[re_path(pattern, not_found) for pattern in BLOCKED],
    *LOCAL_ACCOUNTS_ONLY,
    path("", include("allauth.urls")),
]
