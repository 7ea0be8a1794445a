"""SAML 2.0 sign-in held to safe settings whatever an app's own say (signed assertions, strict
checks, no provider-started sign-in, no SHA-1), with each response bound to the sign-in that asked
for it and used once; replaces allauth's SAML provider class under the same id."""
