#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (Playwright's own browser download
# cannot work offline). Install it when it is missing.
set -euo pipefail
command -v chromium >/dev/null && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "Installing Chromium for the browser tests (apt-get install chromium)..."
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
