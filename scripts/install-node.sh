#!/usr/bin/env bash
# Node.js and npm for the amqplib client's test (tests/broker/test_clients.py), from
# Debian's apt when missing (bookworm: nodejs 18, npm 9). Exit status 1 when they are
# missing and cannot be installed (not root, no apt-get), saying what to install.
set -euo pipefail

log() { echo "install-node: $*" >&2; }

if command -v node >/dev/null && command -v npm >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "node and npm are needed for the amqplib test; as root run: apt-get install -y nodejs npm"
    exit 1
fi
log "installing nodejs and npm with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends nodejs npm
log "installed node $(node --version), npm $(npm --version)"
