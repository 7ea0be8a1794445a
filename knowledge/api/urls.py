"""The REST API, mounted at /api/v1/ by config.urls."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny

from accounts.api import urls as token_urls
from accounts.api.errors import api_not_found
from knowledge.api import (
    collections,
    documents,
    feedback,
    marketplace,
    model_endpoints,
    profiles,
    query,
    releases,
    retrieve,
    sources,
    teams,
    usage,
)

app_name = "api"

urlpatterns = [
    *token_urls.urlpatterns,
    path("embedding-models/", model_endpoints.EmbeddingModelListView.as_view(), name="embedding_models"),
    path(
        "embedding-models/endpoints/",
        model_endpoints.EndpointListView.as_view(),
        name="embedding_endpoints",
    ),
    path(
        "embedding-models/endpoints/<int:endpoint_id>/",
        model_endpoints.EndpointDetailView.as_view(),
        name="embedding_endpoint",
    ),
    path("rerankers/", model_endpoints.RerankerListView.as_view(), name="rerankers"),
    path("rerankers/<int:reranker_id>/", model_endpoints.RerankerDetailView.as_view(), name="reranker"),
    path("collections/", collections.CollectionListView.as_view(), name="collections"),
    path("collections/<int:collection_id>/", collections.CollectionDetailView.as_view(), name="collection"),
    path(
        "collections/link/<slug:share_token>/",
        collections.CollectionLinkView.as_view(),
        name="collection_link",
    ),
    path(
        "collections/<int:collection_id>/share-link/",
        collections.CollectionShareLinkView.as_view(),
        name="collection_share_link",
    ),
    path(
        "collections/<int:collection_id>/shares/",
        teams.CollectionSharesView.as_view(),
        name="collection_shares",
    ),
    path(
        "collections/<int:collection_id>/shares/<int:group_id>/",
        teams.CollectionShareDetailView.as_view(),
        name="collection_share",
    ),
    path(
        "collections/<int:collection_id>/releases/",
        releases.CollectionReleasesView.as_view(),
        name="collection_releases",
    ),
    path(
        "collections/<int:collection_id>/releases/rollback/",
        releases.ReleaseRollbackView.as_view(),
        name="collection_release_rollback",
    ),
    path(
        "collections/<int:collection_id>/releases/<int:release_id>/",
        releases.ReleaseDetailView.as_view(),
        name="collection_release",
    ),
    path(
        "collections/<int:collection_id>/releases/<int:release_id>/promote/",
        releases.ReleasePromoteView.as_view(),
        name="collection_release_promote",
    ),
    path(
        "collections/<int:collection_id>/releases/<int:release_id>/discard/",
        releases.ReleaseDiscardView.as_view(),
        name="collection_release_discard",
    ),
    path(
        "collections/<int:collection_id>/documents/",
        documents.CollectionDocumentsView.as_view(),
        name="collection_documents",
    ),
    path("documents/<int:document_id>/", documents.DocumentDetailView.as_view(), name="document"),
    path("documents/<int:document_id>/retry/", documents.DocumentRetryView.as_view(), name="document_retry"),
    path(
        "documents/<int:document_id>/reindex/",
        documents.DocumentReindexView.as_view(),
        name="document_reindex",
    ),
    path(
        "collections/<int:collection_id>/sources/",
        sources.CollectionSourcesView.as_view(),
        name="collection_sources",
    ),
    path("sources/<int:source_id>/", sources.SourceDetailView.as_view(), name="source"),
    path("sources/<int:source_id>/sync/", sources.SourceSyncView.as_view(), name="source_sync"),
    path("retrieve/", retrieve.RetrieveView.as_view(), name="retrieve"),
    path("usage/", usage.UsageView.as_view(), name="usage"),
    path("query/", query.QueryView.as_view(), name="query"),
    path("sessions/", query.SessionListView.as_view(), name="sessions"),
    path("sessions/<int:session_id>/", query.SessionDetailView.as_view(), name="session"),
    path(
        "sessions/<int:session_id>/turns/<int:turn_index>/feedback/",
        feedback.TurnFeedbackView.as_view(),
        name="turn_feedback",
    ),
    path("profiles/", profiles.ProfileListView.as_view(), name="profiles"),
    path("profiles/<int:profile_id>/", profiles.ProfileDetailView.as_view(), name="profile"),
    path(
        "profiles/<int:profile_id>/effective-config/",
        profiles.ProfileEffectiveConfigView.as_view(),
        name="profile_effective_config",
    ),
    # The schema and its docs are public: they describe the API, not anyone's data.
    path(
        "schema/",
        SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[AllowAny]),
        name="schema",
    ),
    path(
        "docs/",
        # The split view serves its start-up script as a file: no inline script under the CSP.
        SpectacularSwaggerSplitView.as_view(
            url_name="api:schema",
            template_name="api/swagger_ui.html",
            authentication_classes=[SessionAuthentication],
            permission_classes=[AllowAny],
        ),
        name="docs",
    ),
    path("marketplace/", marketplace.MarketplaceListView.as_view(), name="marketplace"),
    path(
        "collections/<int:collection_id>/subscribe/",
        marketplace.SubscribeView.as_view(),
        name="collection_subscribe",
    ),
    path(
        "collections/<int:collection_id>/subscriptions/",
        marketplace.CollectionSubscriptionsView.as_view(),
        name="collection_subscriptions",
    ),
    path(
        "collections/<int:collection_id>/subscriptions/<int:subscription_id>/",
        marketplace.CollectionSubscriptionDetailView.as_view(),
        name="collection_subscription",
    ),
    path(
        "collections/<int:collection_id>/subscriptions/<int:subscription_id>/reinstate/",
        marketplace.CollectionSubscriptionReinstateView.as_view(),
        name="collection_subscription_reinstate",
    ),
    re_path(r"^.*$", api_not_found),
]
