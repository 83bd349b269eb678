#!/usr/bin/env bash
# Debian's chromium for the management console's browser test
# (tests/management/test_console_browser.py, run headless), from apt when missing. Exit
# status 1 when it is missing and cannot be installed (not root, no apt-get).
set -euo pipefail

log() { echo "install-chromium: $*" >&2; }

if command -v chromium >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "chromium is needed for the console's browser test; as root run: apt-get install -y chromium"
    exit 1
fi
log "installing chromium with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends chromium
log "installed $(chromium --version)"
