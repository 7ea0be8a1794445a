"""/scim/v2/ (config.urls). Providers write the resource names capitalised; a trailing slash is
accepted too."""

from django.urls import re_path

from accounts.scim import views

app_name = "scim"
urlpatterns = [
    re_path(r"^Users/?$", views.users, name="users"),
    re_path(r"^Users/(?P<user_id>[^/]+)/?$", views.user, name="user"),
    re_path(r"^Groups/?$", views.groups, name="groups"),
    re_path(r"^Groups/(?P<group_id>[^/]+)/?$", views.group, name="group"),
    re_path(r"^ServiceProviderConfig/?$", views.service_provider_config, name="service_provider_config"),
    re_path(r"^ResourceTypes/?$", views.resource_types, name="resource_types"),
    re_path(r"^ResourceTypes/(?P<name>[^/]+)/?$", views.resource_types, name="resource_type"),
    re_path(r"^Schemas/?$", views.schemas, name="schemas"),
    re_path(r"^Schemas/(?P<name>[^/]+)/?$", views.schemas, name="schema"),
]
