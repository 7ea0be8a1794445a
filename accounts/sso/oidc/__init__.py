"""OpenID Connect sign-in that verifies every ID token (signature against the provider's keys, and
a nonce bound to the sign-in's state), replacing allauth's provider class under the same id."""
