"""The collection page's "Teams" card: its manager shares it with a group, changes or stops a share."""

from __future__ import annotations

from django.contrib import messages
from django.views.decorators.http import require_POST

from accounts.throttles import user_throttle_charge
from config.base.errors import KnowledgeError
from config.base.validation import id_parse
from knowledge.access import collection_for_manager
from knowledge.services.teams import collection_share_remove, collection_share_set
from knowledge.web.pages import collection_settings_redirect, knowledge_page

ACCESS_WORDS = {"read": "read it", "write": "read and write it"}


@require_POST
@knowledge_page
def collection_teams_view(request, collection_id: int):
    """``action=share`` (a group id and read or write access) or ``action=unshare`` (a group id)."""
    collection = collection_for_manager(user=request.user, collection_id=collection_id)
    action = request.POST.get("action")
    group_id = id_parse(request.POST.get("group", ""), field="the team")
    if action == "share":
        access = request.POST.get("access", "read")
        if access not in ACCESS_WORDS:
            raise KnowledgeError("access: read, or write")
        user_throttle_charge(user=request.user, scope="writes")
        share, _ = collection_share_set(
            collection=collection, user=request.user, group=group_id, can_write=access == "write"
        )
        messages.success(request, f"Members of {share.group.name} can {ACCESS_WORDS[access]} now.")
    elif action == "unshare":
        collection_share_remove(collection=collection, group_id=group_id)
        messages.success(request, "No longer shared with that team; its members lost access at once.")
    else:
        raise KnowledgeError("unknown action")
    return collection_settings_redirect(collection.pk, section="teams")
