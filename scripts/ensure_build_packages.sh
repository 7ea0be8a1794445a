#!/usr/bin/env bash
# python-ldap (django-auth-ldap's LDAP client) ships only as source and compiles against OpenLDAP's
# and Cyrus SASL's headers. Install them before pip when they are missing.
set -euo pipefail
packages=(libldap2-dev libsasl2-dev)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "Installing the headers python-ldap compiles against (apt-get install ${missing[*]})..."
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
