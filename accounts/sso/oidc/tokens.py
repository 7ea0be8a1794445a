"""ID-token checks allauth leaves out: the signature (always, against the provider's published
keys) and the nonce.

allauth skips the signature when the token came straight from the token endpoint (OpenID Connect
Core allows it over TLS), and sends no nonce at all. A forged or replayed ID token then passes;
here neither does.
"""

from __future__ import annotations

import hmac

import jwt
from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.internal.jwtkit import verify_jti
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from django.utils.crypto import salted_hmac

# Public-key algorithms only: "none" and the HMAC ones (keyed with the client secret, or with a
# public key mistaken for a secret) are refused whatever the token's header says.
SIGNING_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
LEEWAY_SECONDS = 30  # clock drift between the provider and us


class IdTokenRefused(OAuth2Error):
    """An ID token that fails a check; ``reason`` is the audit's word for which one."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def sign_in_nonce(state_id: str) -> str:
    """The nonce sent with the sign-in whose state is ``state_id``: derived, so nothing more is
    stored, and bound to that one state, which allauth consumes on the callback."""
    return salted_hmac("accounts.sso.oidc.nonce", state_id).hexdigest()


def check_nonce(claims: dict, state_id: str) -> None:
    sent = sign_in_nonce(state_id).encode()
    if not hmac.compare_digest(str(claims.get("nonce", "")).encode(), sent):
        raise IdTokenRefused("nonce", "the ID token's nonce is not this sign-in's")


def verified_claims(token: str, *, jwks_uri: str, issuer: str, client_id: str) -> dict:
    """The ID token's claims once its signature, issuer, audience, expiry and replay are checked."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise IdTokenRefused("malformed", f"the ID token cannot be read: {exc}") from exc
    algorithm = header.get("alg")
    if algorithm not in SIGNING_ALGORITHMS:
        raise IdTokenRefused(
            "signature", f"the ID token is signed with {algorithm!r}, not a public-key algorithm"
        )
    key = _published_key(jwks_uri, header.get("kid"), algorithm)
    claims = _decoded(token, key=key, algorithm=algorithm, issuer=issuer, client_id=client_id)
    _check_authorized_party(claims, client_id)
    verify_jti(claims)  # allauth's replay list, in the shared cache
    return claims


def _published_key(jwks_uri: str, kid: str | None, algorithm: str):
    with get_adapter().get_requests_session() as session:
        response = session.get(jwks_uri)
        response.raise_for_status()
        keys = response.json().get("keys", [])
    candidates = [key for key in keys if kid is None or key.get("kid") == kid]
    candidates = [key for key in candidates if key.get("use", "sig") == "sig"]
    if len(candidates) != 1:
        raise IdTokenRefused("signature", f"no single published key has the ID token's kid {kid!r}")
    try:
        return jwt.PyJWK(candidates[0], algorithm=algorithm).key
    except jwt.PyJWTError as exc:
        raise IdTokenRefused("signature", f"the provider's key cannot be used: {exc}") from exc


_REASONS = [
    (jwt.ExpiredSignatureError, "expired"),
    (jwt.InvalidAudienceError, "audience"),
    (jwt.InvalidIssuerError, "issuer"),
    (jwt.InvalidSignatureError, "signature"),
]


def _decoded(token: str, *, key, algorithm: str, issuer: str, client_id: str) -> dict:
    try:
        return jwt.decode(
            token,
            key=key,
            algorithms=[algorithm],
            audience=client_id,
            issuer=issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["iss", "sub", "aud", "exp", "iat"]},
        )
    except jwt.PyJWTError as exc:
        reason = next((word for kind, word in _REASONS if isinstance(exc, kind)), "invalid")
        raise IdTokenRefused(reason, f"the ID token is refused ({reason}): {exc}") from exc


def _check_authorized_party(claims: dict, client_id: str) -> None:
    """A token for several audiences must name us as the party it was issued to (OIDC Core 3.1.3.7)."""
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise IdTokenRefused("audience", "the ID token names several audiences and was not issued to us")
