"""Marketplace pages: browse and search listings, subscribe and unsubscribe, list or unlist one's own."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from config.base.errors import NotFoundError
from knowledge.access import collection_for_manager, marketplace_listing_for
from knowledge.services.collections import collection_update
from knowledge.services.marketplace import (
    marketplace_collections,
    subscribed_collections,
    subscription_collection_for,
    subscription_create,
    subscription_end,
    subscription_reinstate,
    subscription_revoke,
)
from knowledge.web.pages import CHAT_PRESELECT_KEY, collection_settings_redirect, knowledge_page


def _back(request, default: str):
    """Return to the page the form was on (same host only), else ``default``."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return redirect(target)
    return redirect(default)


@require_GET
@knowledge_page
def marketplace_page(request):
    search = request.GET.get("q", "").strip()[:200]
    return render(
        request,
        "knowledge/marketplace.html",
        {
            "listings": marketplace_collections(user=request.user, search=search),
            "subscribed": subscribed_collections(user=request.user),
            "search": search,
        },
    )


@require_POST
@knowledge_page
def subscribe_view(request, collection_id: int):
    collection = marketplace_listing_for(user=request.user, collection_id=collection_id)
    _, changed = subscription_create(user=request.user, collection=collection)
    if changed:
        messages.success(
            request,
            f"Subscribed to {collection.name}; it is now in your library, and your next chat searches it.",
        )
    request.session[CHAT_PRESELECT_KEY] = collection.pk
    return _back(request, "knowledge:marketplace")


@require_POST
@knowledge_page
def unsubscribe_view(request, collection_id: int):
    collection = subscription_collection_for(user=request.user, collection_id=collection_id)
    if subscription_end(user=request.user, collection=collection):
        messages.success(request, f"Unsubscribed from {collection.name}.")
    return _back(request, "knowledge:marketplace")


@require_POST
@knowledge_page
def collection_listing_view(request, collection_id: int):
    """The owner lists or unlists their collection in the marketplace."""
    collection = collection_for_manager(user=request.user, collection_id=collection_id)
    listed = request.POST.get("listed") in {"1", "true", "on"}
    collection_update(collection=collection, listed=listed)
    state = "listed in" if listed else "removed from"
    messages.success(request, f"{collection.name} is {state} the marketplace.")
    return collection_settings_redirect(collection.pk)


SUBSCRIPTION_OWNER_ACTIONS = {"revoke": subscription_revoke, "reinstate": subscription_reinstate}


@require_POST
@knowledge_page
def subscription_owner_action_view(request, collection_id: int, subscription_id: int, action: str):
    """The owner revokes a subscriber (who stays out) or lets a revoked one back in."""
    collection = collection_for_manager(user=request.user, collection_id=collection_id)
    if action not in SUBSCRIPTION_OWNER_ACTIONS:
        raise NotFoundError("no such action")
    subscription = SUBSCRIPTION_OWNER_ACTIONS[action](
        owner=request.user, subscription_id=subscription_id, collection=collection
    )
    done = "revoked; they stay out until you reinstate them" if action == "revoke" else "reinstated"
    messages.success(request, f"{subscription.user.username}'s access is {done}.")
    return collection_settings_redirect(collection.pk)
