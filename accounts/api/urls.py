"""The token endpoints, included by knowledge.api.urls in the /api/v1/ namespace ("api")."""

from django.urls import path

from accounts.api import tokens

urlpatterns = [
    path("auth/token/", tokens.PasswordTokenView.as_view(), name="auth_token"),
    path("tokens/", tokens.TokenListView.as_view(), name="tokens"),
    path("tokens/<int:token_id>/", tokens.TokenDetailView.as_view(), name="token"),
]
