from axes.utils import reset as axes_reset
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.db import transaction
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.api_tokens import tokens_revoke_all
from accounts.client_address import client_address
from accounts.forms import PasswordChangeWithTokensForm, SignUpForm, ThrottledPasswordResetForm
from accounts.throttles import throttle_charge
from config.base.errors import RateLimitedError


@require_http_methods(["GET", "POST"])
def signup(request):
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:  # accounts created, per client address
            throttle_charge(scope="signup", ident=f"address-{client_address(request)}")
        except RateLimitedError as exc:
            return _refused(request, "accounts/signup.html", form, exc)
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
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


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset by e-mail, rate-limited per client address (here) and per account (in the form)."""

    form_class = ThrottledPasswordResetForm

    def form_valid(self, form):
        try:
            throttle_charge(scope="password_reset", ident=f"address-{client_address(self.request)}")
        except RateLimitedError as exc:
            return _refused(self.request, self.template_name, form, exc)
        return super().form_valid(form)


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """Django's password reset; always revokes the API tokens, since the account may have been taken over.

    Whoever reset it owns the mailbox, so the username's failed log-ins are cleared too.
    """

    @transaction.atomic
    def form_valid(self, form):
        response = super().form_valid(form)
        _report_revoked(self.request, tokens_revoke_all(user=form.user))
        axes_reset(username=form.user.get_username())
        return response


def _report_revoked(request, count: int) -> None:
    if count:
        tokens = "1 API token was" if count == 1 else f"{count} API tokens were"
        messages.success(request, f"{tokens} revoked; create new ones on the API tokens page.")


def _refused(request, template: str, form, exc: RateLimitedError):
    """The form again, with the rate's message, as a 429 with Retry-After."""
    form.add_error(None, str(exc))
    response = render(request, template, {"form": form}, status=429)
    response["Retry-After"] = exc.retry_after_header
    return response
