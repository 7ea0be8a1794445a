"""API tokens: exchange a password for one, list yours, create and revoke them."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import authenticate
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from accounts.api.base import ApiView, StrictSerializer, errors, validated
from accounts.api_tokens import token_create, token_revoke, tokens_for_user
from accounts.mfa import MFA_ACCOUNT_TOKEN_MESSAGE, mfa_enabled
from accounts.mfa_audit import mfa_refusal_record
from accounts.models import ApiToken
from accounts.policy import account_hold
from config.base.errors import ForbiddenError, NotAuthenticatedError


class TokenSerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "last_used_at", "revoked_at", "is_revoked"]
        read_only_fields = fields


class NewTokenSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The secret. Shown once; store it now.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class TokenCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)


class PasswordLoginSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False, style={"input_type": "password"})
    name = serializers.CharField(max_length=100, required=False, help_text="Name for the new token.")


class PasswordTokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="The secret. Shown once; store it now.")
    name = serializers.CharField()


def _new_token_body(token: ApiToken, secret: str) -> dict:
    return {**TokenSerializer(token).data, "token": secret}


class PasswordTokenView(ApiView):
    """Username and password in, a new API token out (for scripts that have no token yet).

    Never for an account with a second factor: a password alone would make a token that outlives
    every sign-in without the factor. It answers 403 saying to create the token on the API tokens
    page, after a full sign-in (a code field here would put the factor in scripts, beside the
    password). An account MFA_REQUIRED covers gets no token before it has a factor either.
    """

    authentication_classes = []  # credentials are in the body; no session, so no CSRF either
    permission_classes = [AllowAny]
    throttle_scope = "auth"

    @extend_schema(
        summary="Exchange a username and password for a new API token",
        request=PasswordLoginSerializer,
        responses={201: PasswordTokenSerializer, **errors(400, 401, 403, 429, authenticated=False)},
        auth=[],
    )
    def post(self, request):
        data = validated(PasswordLoginSerializer, request.data)
        user = authenticate(request._request, username=data["username"], password=data["password"])
        if user is None:
            raise NotAuthenticatedError(_refusal())
        held = account_hold(user)  # a token would outlive the default password everyone knows
        if held:
            raise ForbiddenError(held.message)
        if mfa_enabled(user):
            mfa_refusal_record(user=user, method="api password exchange", reason="second factor required")
            raise ForbiddenError(MFA_ACCOUNT_TOKEN_MESSAGE)
        name = data.get("name") or f"API token {timezone.now():%Y-%m-%d %H:%M}"
        token, secret = token_create(user=user, name=name)
        return Response({"token": secret, "name": token.name}, status=status.HTTP_201_CREATED)


class TokenListView(ApiView):
    serializer_class = TokenSerializer

    @extend_schema(
        summary="Your API tokens (never their secrets)", responses={200: TokenSerializer(many=True)}
    )
    def get(self, request):
        return self.paginated(
            tokens_for_user(user=request.user).order_by("-created_at", "-pk"), TokenSerializer
        )

    @extend_schema(
        summary="Create an API token; the secret is in this response only",
        request=TokenCreateSerializer,
        responses={201: NewTokenSerializer, **errors(400)},
    )
    def post(self, request):
        data = validated(TokenCreateSerializer, request.data)
        token, secret = token_create(user=request.user, name=data["name"])
        return Response(_new_token_body(token, secret), status=status.HTTP_201_CREATED)


class TokenDetailView(ApiView):
    serializer_class = TokenSerializer

    @extend_schema(summary="Revoke one of your API tokens", responses={204: None, **errors(404)})
    def delete(self, request, token_id: int):
        token_revoke(user=request.user, token_id=token_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _refusal() -> str:
    """Why a password was not exchanged: a site-wide rule says nothing about any one account."""
    if not settings.LOCAL_LOGIN_ENABLED and not settings.AUTH_LDAP_SERVER_URI:  # directory users may
        return "password log-in is off: sign in on the log-in page and make a token on the API tokens page"
    return "wrong username or password"
