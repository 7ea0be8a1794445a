from django.urls import path

from knowledge import chat_views, marketplace_views, profile_views, views

app_name = "knowledge"

urlpatterns = [
    path("", views.home, name="home"),
    path("collections/", views.collection_list, name="collections"),
    path("collections/<int:collection_id>/", views.collection_detail, name="collection"),
    path("collections/link/<slug:share_token>/", views.collection_link_view, name="collection_link"),
    path("collections/<int:collection_id>/upload/", views.collection_upload, name="upload"),
    path("collections/<int:collection_id>/settings/", views.collection_settings, name="collection_settings"),
    path(
        "collections/<int:collection_id>/documents.json",
        views.collection_documents_status,
        name="documents_status",
    ),
    path("documents/<int:document_id>/retry/", views.document_retry_view, name="document_retry"),
    path("documents/<int:document_id>/delete/", views.document_delete_view, name="document_delete"),
    path("documents/<int:document_id>/view/", chat_views.document_view, name="document_view"),
    path("documents/<int:document_id>/file/", chat_views.document_file, name="document_file"),
    path("chat/", chat_views.chat_page, name="chat"),
    path("profiles/", profile_views.profiles_page, name="profiles"),
    path("profiles/<int:profile_id>/", profile_views.profiles_page, name="profile"),
    path("chat/ask/", chat_views.chat_ask_stream, name="chat_ask"),
    path("marketplace/", marketplace_views.marketplace_page, name="marketplace"),
    path("marketplace/<int:collection_id>/subscribe/", marketplace_views.subscribe_view, name="subscribe"),
    path(
        "marketplace/<int:collection_id>/unsubscribe/", marketplace_views.unsubscribe_view, name="unsubscribe"
    ),
    path(
        "collections/<int:collection_id>/subscriptions/<int:subscription_id>/<str:action>/",
        marketplace_views.subscription_owner_action_view,
        name="subscription_action",
    ),
    path(
        "collections/<int:collection_id>/listing/",
        marketplace_views.collection_listing_view,
        name="collection_listing",
    ),
]
