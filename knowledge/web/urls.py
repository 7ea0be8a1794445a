"""The pages' URL list (namespace "knowledge")."""

from django.urls import path

from knowledge.web import chat, collections, marketplace, profiles, reader, releases, sources, teams, usage

app_name = "knowledge"

urlpatterns = [
    path("", collections.home, name="home"),
    path("collections/", collections.collection_list, name="collections"),
    path("collections/<int:collection_id>/", collections.collection_detail, name="collection"),
    path("collections/link/<slug:share_token>/", collections.collection_link_view, name="collection_link"),
    path("collections/<int:collection_id>/upload/", collections.collection_upload, name="upload"),
    path(
        "collections/<int:collection_id>/settings/",
        collections.collection_settings,
        name="collection_settings",
    ),
    path(
        "collections/<int:collection_id>/documents.json",
        collections.collection_documents_status,
        name="documents_status",
    ),
    path("collections/<int:collection_id>/sources/add/", sources.source_add_view, name="source_add"),
    path(
        "collections/<int:collection_id>/sources/preview/", sources.source_preview_view, name="source_preview"
    ),
    path("sources/<int:source_id>/sync/", sources.source_sync_view, name="source_sync"),
    path("sources/<int:source_id>/delete/", sources.source_delete_view, name="source_delete"),
    path("documents/<int:document_id>/retry/", collections.document_retry_view, name="document_retry"),
    path("documents/<int:document_id>/delete/", collections.document_delete_view, name="document_delete"),
    path("documents/<int:document_id>/view/", reader.document_view, name="document_view"),
    path("documents/<int:document_id>/passage/", reader.document_passage, name="document_passage"),
    path("documents/<int:document_id>/file/", reader.document_file, name="document_file"),
    path("chat/", chat.chat_page, name="chat"),
    path("profiles/", profiles.profiles_page, name="profiles"),
    path("profiles/<int:profile_id>/", profiles.profiles_page, name="profile"),
    path("chat/ask/", chat.chat_ask_stream, name="chat_ask"),
    path("usage/", usage.usage_page, name="usage"),
    path("marketplace/", marketplace.marketplace_page, name="marketplace"),
    path("marketplace/<int:collection_id>/subscribe/", marketplace.subscribe_view, name="subscribe"),
    path("marketplace/<int:collection_id>/unsubscribe/", marketplace.unsubscribe_view, name="unsubscribe"),
    path(
        "collections/<int:collection_id>/subscriptions/<int:subscription_id>/<str:action>/",
        marketplace.subscription_owner_action_view,
        name="subscription_action",
    ),
    path("collections/<int:collection_id>/teams/", teams.collection_teams_view, name="collection_teams"),
    path(
        "collections/<int:collection_id>/releases/",
        releases.collection_releases_view,
        name="collection_releases",
    ),
    path(
        "collections/<int:collection_id>/listing/",
        marketplace.collection_listing_view,
        name="collection_listing",
    ),
]
