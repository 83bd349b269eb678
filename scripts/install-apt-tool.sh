#!/usr/bin/env bash
# Install, from Debian's apt, a program a test needs when it is missing:
#   install-apt-tool.sh PURPOSE COMMAND PACKAGE...
# e.g. `install-apt-tool.sh "the amqplib test" npm nodejs npm`. Does nothing when COMMAND is
# on the PATH; exit status 1, naming what to install, when it is missing and cannot be
# installed here (not root, or no apt-get).
set -euo pipefail

purpose=$1 command=$2
shift 2
log() { echo "install-apt-tool: $*" >&2; }

if command -v "$command" >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "$command is needed for $purpose; as root run: apt-get install -y $*"
    exit 1
fi
log "installing $* with apt-get (for $purpose)"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "$@"
log "installed $command: $(command -v "$command")"
