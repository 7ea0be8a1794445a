#!/usr/bin/env bash
# The tests of the Redis broker start Debian's redis-server on a free loopback
# port (they skip without it). Install it when it is missing; it is not started
# as a service.
set -euo pipefail
command -v redis-server >/dev/null && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "Installing redis-server for the broker tests (apt-get install redis-server)..."
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >/dev/null
