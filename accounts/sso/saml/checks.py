"""What a SAML response must be beyond python3-saml's strict checks, and the audit's word for
each refusal.

python3-saml checks an audience and a recipient only when the assertion names them, and allauth
finds the sign-in a response answers by the Response's InResponseTo, which the assertion's
signature does not cover. Here the signed assertion must name us as its audience, our ACS as its
recipient and the sign-in it answers; and an assertion is accepted once, whatever the session.
"""

from __future__ import annotations

import binascii
from datetime import UTC, datetime

from django.core.cache import cache
from onelogin.saml2.errors import OneLogin_Saml2_Error, OneLogin_Saml2_ValidationError
from onelogin.saml2.response import OneLogin_Saml2_Response

_V = OneLogin_Saml2_ValidationError
# python3-saml's error codes, as the reasons the audit log records.
REASONS = {
    _V.NO_SIGNED_ASSERTION: "unsigned assertion",
    _V.NO_SIGNATURE_FOUND: "unsigned assertion",
    _V.INVALID_SIGNATURE: "signature",
    _V.INVALID_SIGNED_ELEMENT: "signature",
    _V.WRONG_SIGNED_ELEMENT: "signature",
    _V.ID_NOT_FOUND_IN_SIGNED_ELEMENT: "signature",
    _V.DUPLICATED_ID_IN_SIGNED_ELEMENTS: "signature",
    _V.DUPLICATED_REFERENCE_IN_SIGNED_ELEMENTS: "signature",
    _V.UNEXPECTED_SIGNED_ELEMENTS: "signature",
    _V.WRONG_NUMBER_OF_SIGNATURES: "signature",
    _V.WRONG_NUMBER_OF_SIGNATURES_IN_ASSERTION: "signature",
    _V.WRONG_NUMBER_OF_SIGNATURES_IN_RESPONSE: "signature",
    _V.DEPRECATED_SIGNATURE_METHOD: "deprecated algorithm",
    _V.DEPRECATED_DIGEST_METHOD: "deprecated algorithm",
    _V.WRONG_AUDIENCE: "audience",
    _V.WRONG_SUBJECTCONFIRMATION: "subject confirmation",
    _V.WRONG_DESTINATION: "destination",
    _V.EMPTY_DESTINATION: "destination",
    _V.WRONG_ISSUER: "issuer",
    _V.ASSERTION_EXPIRED: "expired",
    _V.ASSERTION_TOO_EARLY: "expired",
    _V.SESSION_EXPIRED: "expired",
    _V.RESPONSE_EXPIRED: "expired",
    _V.STATUS_CODE_IS_NOT_SUCCESS: "the provider refused",
}
REPLAY_WINDOW_SECONDS = (60, 24 * 3600)  # at least a minute, at most a day, whatever NotOnOrAfter says


class ResponseRefused(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(detail or reason)
        self.reason = reason


def checked_response(auth, request_data: dict) -> OneLogin_Saml2_Response:
    """Runs python3-saml's checks on the posted response (``auth`` built for this app); returns the
    parsed response, or raises ResponseRefused with the reason."""
    try:
        auth.process_response(request_id=None)  # the sign-in it answers: bound_to_sign_in
        response = OneLogin_Saml2_Response(auth.get_settings(), request_data["post_data"]["SAMLResponse"])
    except (binascii.Error, OneLogin_Saml2_Error, KeyError, ValueError) as exc:
        raise ResponseRefused("malformed", str(exc)) from exc
    if auth.get_errors():
        raise ResponseRefused(_reason(response, request_data), auth.get_last_error_reason() or "")
    return response


def _reason(response: OneLogin_Saml2_Response, request_data: dict) -> str:
    """python3-saml keeps only the message; the check is run again for its code."""
    try:
        response.is_valid(request_data, raise_exceptions=True)
    except OneLogin_Saml2_ValidationError as exc:
        return REASONS.get(exc.code, "invalid response")
    except Exception:  # a document python3-saml cannot even read
        return "malformed"
    return "invalid response"


def bound_to_sign_in(response: OneLogin_Saml2_Response, *, sp_entity_id: str, acs_url: str) -> str:
    """The id of our sign-in request this response answers, read from the signed assertion; raises
    ResponseRefused when the assertion does not name it, our ACS and our entity id."""
    request_id = response.get_in_response_to()
    if not request_id:
        raise ResponseRefused("IdP-initiated sign-in", "no sign-in of ours asked for this response")
    if sp_entity_id not in response.get_audiences():
        raise ResponseRefused("audience", f"the assertion does not name {sp_entity_id} as its audience")
    confirmations = response._query_assertion(
        "/saml:Subject/saml:SubjectConfirmation/saml:SubjectConfirmationData"
    )
    if not any(
        node.get("Recipient") == acs_url and node.get("InResponseTo") == request_id for node in confirmations
    ):
        raise ResponseRefused(
            "subject confirmation", "the signed assertion names another sign-in or recipient"
        )
    return request_id


def use_once(auth, *, provider_id: str) -> None:
    """Records the accepted assertion as used until it expires; raises ResponseRefused("replay")
    when it was used already (the shared cache, so every server process sees it)."""
    assertion_id = auth.get_last_assertion_id()
    expires = auth.get_last_assertion_not_on_or_after()
    seconds = int((expires or 0) - datetime.now(UTC).timestamp())
    seconds = min(max(seconds, REPLAY_WINDOW_SECONDS[0]), REPLAY_WINDOW_SECONDS[1])
    if not assertion_id or not cache.add(f"saml-assertion:{provider_id}:{assertion_id}", 1, seconds):
        raise ResponseRefused("replay", "this assertion was used already")
