#!/usr/bin/env bash
# The identity tests sign in against real providers on 127.0.0.1: OpenLDAP's slapd (with ldap-utils'
# commands), a SAML provider that signs with the xmlsec1 program, and npm's oidc-provider under Node.
# Install the Debian packages when missing, and the provider's npm packages exactly as
# tests/identity/oidc/package-lock.json pins them.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v slapd >/dev/null || [ -x /usr/sbin/slapd ] || missing+=(slapd)
command -v ldapwhoami >/dev/null || missing+=(ldap-utils)
command -v xmlsec1 >/dev/null || missing+=(xmlsec1)
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "Installing the identity test servers (apt-get install ${missing[*]})..."
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
lock=tests/identity/oidc/package-lock.json
stamp=tests/identity/oidc/node_modules/.package-lock.json
# npm ci starts from an empty node_modules/; skip it when the installed tree is the locked one.
if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
    (cd tests/identity/oidc && npm ci --no-audit --no-fund --silent)
fi
