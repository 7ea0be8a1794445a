"""`Authorization: Bearer <token>` authentication for the API, backed by accounts.api_tokens."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied

from accounts.api_tokens import token_authenticate
from accounts.policy import account_hold


class BearerTokenAuthentication(BaseAuthentication):
    """No Bearer header: not this scheme (session may apply). A bad or revoked token: 401."""

    keyword = b"bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise AuthenticationFailed("the Authorization header must be 'Bearer <token>'")
        try:
            secret = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed("invalid or revoked token") from None
        user = token_authenticate(secret)
        if user is None:
            raise AuthenticationFailed("invalid or revoked token")
        # A token made before the default password was flagged, or before MFA_REQUIRED covered the account.
        held = account_hold(user)
        if held:
            raise PermissionDenied(held.message)
        return user, None

    def authenticate_header(self, request) -> str:
        # Makes unauthenticated requests a 401 (with this challenge) rather than a 403.
        return 'Bearer realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A personal API token (kn_...)."}
