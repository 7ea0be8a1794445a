"""The API tokens page: list, create (the secret is shown once, in that response only) and revoke."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts.api_tokens import token_create, token_revoke, tokens_for_user
from config.base.errors import KnowledgeError, NotFoundError


@never_cache  # the response that carries a new secret must not be cached anywhere
@login_required
@require_http_methods(["GET", "POST"])
def tokens_page(request):
    context = {"new_secret": None, "new_token": None, "error": None, "name": ""}
    status = 200
    if request.method == "POST":
        context["name"] = request.POST.get("name", "")
        try:
            context["new_token"], context["new_secret"] = token_create(
                user=request.user, name=context["name"]
            )
            context["name"] = ""
        except KnowledgeError as exc:
            context["error"], status = str(exc), exc.status_code
    context["tokens"] = tokens_for_user(user=request.user).order_by("-created_at", "-pk")
    return render(request, "accounts/tokens.html", context, status=status)


@login_required
@require_POST
def token_revoke_view(request, token_id: int):
    try:
        token = token_revoke(user=request.user, token_id=token_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    messages.success(request, f"Revoked {token.name}. Clients using it are refused from now on.")
    return redirect("accounts:tokens")
