"""The SCIM endpoints under /scim/v2/: thin callers of users.py and groups.py (accounts.scim).

Every view runs behind ``scim_endpoint`` (bearer token, SCIM errors, audit context) and sees only
what the token's source provisioned.
"""

from __future__ import annotations

from django.views.decorators.http import require_http_methods

from accounts.scim import discovery
from accounts.scim.filters import GROUP_ATTRIBUTES, USER_ATTRIBUTES, filtered
from accounts.scim.groups import (
    group_resource,
    scim_group,
    scim_group_create,
    scim_group_delete,
    scim_group_patch,
    scim_group_replace,
    scim_groups,
)
from accounts.scim.http import excluded_attributes, page_of, request_json, scim_endpoint, scim_response
from accounts.scim.patch import patch_operations
from accounts.scim.users import (
    scim_user,
    scim_user_create,
    scim_user_delete,
    scim_user_patch,
    scim_user_replace,
    scim_users,
    user_resource,
)


@require_http_methods(["GET", "POST"])
@scim_endpoint
def users(request, token):
    if request.method == "POST":
        user = scim_user_create(source=token.source, body=request_json(request))
        resource = user_resource(user)
        return scim_response(resource, 201, Location=resource["meta"]["location"])
    found = filtered(scim_users(source=token.source), request.GET.get("filter"), USER_ATTRIBUTES)
    return scim_response(page_of(found.distinct(), request, user_resource))


@require_http_methods(["GET", "PUT", "PATCH", "DELETE"])
@scim_endpoint
def user(request, token, user_id: str):
    source = token.source
    if request.method == "DELETE":
        scim_user_delete(source=source, user_id=user_id)
        return scim_response(None, 204)
    if request.method == "PUT":
        found = scim_user_replace(source=source, user_id=user_id, body=request_json(request))
    elif request.method == "PATCH":
        found = scim_user_patch(
            source=source, user_id=user_id, operations=patch_operations(request_json(request))
        )
    else:
        found = scim_user(source=source, user_id=user_id)
    return scim_response(user_resource(found))


@require_http_methods(["GET", "POST"])
@scim_endpoint
def groups(request, token):
    if request.method == "POST":
        team = scim_group_create(source=token.source, body=request_json(request))
        resource = group_resource(team)
        return scim_response(resource, 201, Location=resource["meta"]["location"])
    found = filtered(scim_groups(source=token.source), request.GET.get("filter"), GROUP_ATTRIBUTES)
    members = "members" not in excluded_attributes(request)
    return scim_response(
        page_of(found.distinct(), request, lambda team: group_resource(team, members=members))
    )


@require_http_methods(["GET", "PUT", "PATCH", "DELETE"])
@scim_endpoint
def group(request, token, group_id: str):
    source = token.source
    if request.method == "DELETE":
        scim_group_delete(source=source, group_id=group_id)
        return scim_response(None, 204)
    if request.method == "PUT":
        found = scim_group_replace(source=source, group_id=group_id, body=request_json(request))
    elif request.method == "PATCH":
        scim_group_patch(source=source, group_id=group_id, operations=patch_operations(request_json(request)))
        # Entra ID and Okta need no body back for a group PATCH, and members may be many.
        return scim_response(None, 204)
    else:
        found = scim_group(source=source, group_id=group_id)
    return scim_response(group_resource(found, members="members" not in excluded_attributes(request)))


@require_http_methods(["GET"])
@scim_endpoint
def service_provider_config(request, token):
    return scim_response(discovery.service_provider_config())


@require_http_methods(["GET"])
@scim_endpoint
def resource_types(request, token, name: str = ""):
    return scim_response(discovery.resource_types(name))


@require_http_methods(["GET"])
@scim_endpoint
def schemas(request, token, name: str = ""):
    return scim_response(discovery.schemas(name))
