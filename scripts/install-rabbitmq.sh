#!/usr/bin/env bash
# Install Debian's rabbitmq-server for the tests, without running the system service:
# the tests start private nodes of their own (testbed/rabbitmq.py).
set -euo pipefail

log() { echo "install-rabbitmq: $*" >&2; }

if [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "rabbitmq-server is not installed; as root run: apt-get install -y rabbitmq-server"
    log "(or set AMQP_SPARK_RABBITMQ_URL to a RabbitMQ you have)"
    exit 1
fi

# policy-rc.d exiting 101 tells invoke-rc.d not to start services the package installs.
policy=/usr/sbin/policy-rc.d
backup=
if [ -e "$policy" ]; then
    backup=$(mktemp)
    cp -p "$policy" "$backup"
fi
restore_policy() {
    if [ -n "$backup" ]; then
        mv -f "$backup" "$policy"
    else
        rm -f "$policy"
    fi
}
trap restore_policy EXIT
printf '#!/bin/sh\nexit 101\n' >"$policy"
chmod 755 "$policy"

log "installing rabbitmq-server with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends rabbitmq-server

# Should a node have started anyway (no invoke-rc.d, say), stop it: it would hold 5672.
if pids=$(pgrep -u rabbitmq -d ' '); then
    log "stopping the node the package started (pids $pids)"
    timeout 30 rabbitmqctl stop || true
    # shellcheck disable=SC2086 # one pid a word
    kill $pids 2>/dev/null || true
fi
log "installed $(dpkg-query -W -f '${Version}' rabbitmq-server)"
