from allauth.account.internal.flows.login import perform_password_login
from allauth.account.models import Login
from axes.utils import reset as axes_reset
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.db import transaction
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.api_tokens import tokens_revoke_all
from accounts.client_address import client_address
from accounts.forms import LoginForm, PasswordChangeWithTokensForm, SignUpForm, ThrottledPasswordResetForm
from accounts.sso.providers import allow_provider_forms, provider_buttons
from accounts.throttles import throttle_charge
from config.base.errors import RateLimitedError


class StagedLoginMixin:
    """A right password starts allauth's log-in flow instead of signing in at once: an account
    with a second factor (accounts/mfa.py) is sent to its step (/accounts/2fa/authenticate/) and
    signed in only after it. The password is still checked by Django's form (so django-axes and
    the LOCAL_LOGIN rule apply), and recorded as allauth's first step, which its re-authentication
    reads. Used by the log-in page and the admin's log-in alike."""

    def form_valid(self, form):
        user = form.get_user()
        login = Login(user=user, redirect_url=self.get_success_url())
        return perform_password_login(self.request, {"username": user.get_username()}, login)


class LoginView(StagedLoginMixin, auth_views.LoginView):
    """Django's log-in (so django-axes and accounts/login_limits.py guard it as before), with a
    "Sign in with ..." button per identity provider and one for a passkey; with local log-in off,
    the password form is shown only on request (?local=1), for the break-glass accounts, unless an
    LDAP directory signs people in with it."""

    template_name = "accounts/login.html"
    form_class = LoginForm

    def get_context_data(self, **kwargs):
        local_login = settings.LOCAL_LOGIN_ENABLED
        directory_login = bool(settings.AUTH_LDAP_SERVER_URI)
        on_request = "local" in self.request.GET or self.request.method == "POST"
        return {
            **super().get_context_data(**kwargs),
            "providers": provider_buttons(self.request),
            "local_login": local_login,
            "directory_login": directory_login,
            "show_password_form": local_login or directory_login or on_request,
        }

    def render_to_response(self, context, **response_kwargs):
        return allow_provider_forms(self.request, super().render_to_response(context, **response_kwargs))


class AdminLoginView(StagedLoginMixin, auth_views.LoginView):
    """The admin's log-in form (accounts.admin_site.AuditedAdminSite.login), staged like ours."""


@require_http_methods(["GET", "POST"])
def signup(request):
    if not settings.LOCAL_LOGIN_ENABLED:
        return page_closed(request, "Sign-up is closed: accounts come from your organisation's sign-in.")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:  # accounts created, per client address
            throttle_charge(scope="signup", ident=f"address-{client_address(request)}")
        except RateLimitedError as exc:
            return form_rate_limited(request, "accounts/signup.html", form, exc)
        user = form.save()
        login(request, user, backend="accounts.backends.LocalPasswordBackend")
        messages.success(request, f"Welcome, {user.username}.")
        return redirect("knowledge:collections")
    return render(request, "accounts/signup.html", {"form": form})


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's password change, revoking the API tokens too unless the owner unticks the box."""

    form_class = PasswordChangeWithTokensForm

    def get_form_kwargs(self):
        # The form checks the old password as a log-in, which needs the request.
        return {**super().get_form_kwargs(), "request": self.request}

    @transaction.atomic  # the new password and the revocation land together
    def form_valid(self, form):
        response = super().form_valid(form)
        if form.cleaned_data["revoke_api_tokens"]:
            _report_revoked(self.request, tokens_revoke_all(user=form.user))
        return response


class LocalLoginOnly:
    """A password reset view, closed while local log-in is off (it would set a password nobody may use)."""

    def dispatch(self, request, *args, **kwargs):
        if not settings.LOCAL_LOGIN_ENABLED:
            return page_closed(request, "Password reset is off: sign in with your organisation's provider.")
        return super().dispatch(request, *args, **kwargs)


class PasswordResetView(LocalLoginOnly, auth_views.PasswordResetView):
    """Django's reset by e-mail, rate-limited per client address (here) and per account (in the form)."""

    form_class = ThrottledPasswordResetForm

    def form_valid(self, form):
        try:
            throttle_charge(scope="password_reset", ident=f"address-{client_address(self.request)}")
        except RateLimitedError as exc:
            return form_rate_limited(self.request, self.template_name, form, exc)
        return super().form_valid(form)


class PasswordResetConfirmView(LocalLoginOnly, auth_views.PasswordResetConfirmView):
    """Django's password reset; always revokes the API tokens, since the account may have been taken over.

    Whoever reset it owns the mailbox, so the username's failed log-ins are cleared too.
    """

    @transaction.atomic
    def form_valid(self, form):
        response = super().form_valid(form)
        _report_revoked(self.request, tokens_revoke_all(user=form.user))
        axes_reset(username=form.user.get_username())
        return response


def page_closed(request, message: str):
    """A page refused while local log-in is off: 403, with the reason, inside the site's layout."""
    return render(request, "accounts/closed.html", {"message": message}, status=403)


def _report_revoked(request, count: int) -> None:
    if count:
        tokens = "1 API token was" if count == 1 else f"{count} API tokens were"
        messages.success(request, f"{tokens} revoked; create new ones on the API tokens page.")


def form_rate_limited(request, template: str, form, exc: RateLimitedError):
    """The form again, with the rate's message, as a 429 with Retry-After."""
    form.add_error(None, str(exc))
    response = render(request, template, {"form": form}, status=429)
    response["Retry-After"] = exc.retry_after_header
    return response
