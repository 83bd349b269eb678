#!/usr/bin/env bash
# Build (once, then reuse) a minimal Debian trixie root holding RabbitMQ 4 (trixie's
# rabbitmq-server, 4.0.x), for the tests' private RabbitMQ 4 nodes: bookworm's apt has
# 3.10 only and no Docker engine runs here. testbed/rabbitmq.py runs the node from
# the root with chroot, in a mount namespace of its own (/proc, /dev, /sys bound there).
#
# The root lives outside the checkout, in $AMQP_SPARK_RABBITMQ4_ROOT (default
# /var/cache/amqp-spark/rabbitmq4-trixie). It is rebuilt when missing or broken (no
# completion stamp, or rabbitmq-server not installed in it); a root that is sound is kept
# as it is, so a second run costs a few milliseconds. Prints the root's path on success.
set -euo pipefail

root=${AMQP_SPARK_RABBITMQ4_ROOT:-/var/cache/amqp-spark/rabbitmq4-trixie}
mirror=${AMQP_SPARK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
stamp=.amqp-spark-rabbitmq4-ready

log() { echo "install-rabbitmq4: $*" >&2; }

# Sound: the stamp written by the last step of a build, and dpkg inside saying the
# package is installed with its server script in place.
sound() {
    [ -f "$1/$stamp" ] && [ -x "$1/usr/lib/rabbitmq/bin/rabbitmq-server" ] &&
        [ "$(chroot "$1" dpkg-query -W -f '${Status}' rabbitmq-server 2>/dev/null)" = \
            "install ok installed" ]
}

if [ "$(id -u)" = 0 ] && sound "$root"; then
    echo "$root"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    log "building the RabbitMQ 4 root needs root (debootstrap, chroot); run as root"
    log "(or set AMQP_SPARK_RABBITMQ_URL to a RabbitMQ 4 you have)"
    exit 1
fi

mkdir -p "$(dirname "$root")"
# One build at a time: a second caller waits (bounded) and then finds the root sound.
exec 9>"$root.lock"
if ! flock -w 900 9; then
    log "another build of $root held $root.lock for 15 minutes; giving up"
    exit 1
fi
if sound "$root"; then
    echo "$root"
    exit 0
fi

if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends debootstrap
fi

build="$root.build"
# Unmount whatever an interrupted build left mounted in the half-built root, deepest
# first, before removing it; --one-file-system keeps rm from crossing into a mount left.
unmount_under() {
    local target
    for target in $(awk -v r="$1/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
        umount -l "$target" || true
    done
}
cleanup() {
    unmount_under "$build"
    rm -rf --one-file-system "$build"
}
trap cleanup EXIT
cleanup

log "debootstrap trixie into $build (from $mirror)"
debootstrap --variant=minbase trixie "$build" "$mirror" >&2

# policy-rc.d exiting 101 tells invoke-rc.d not to start the services packages install.
printf '#!/bin/sh\nexit 101\n' >"$build/usr/sbin/policy-rc.d"
chmod 755 "$build/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$build/etc/resolv.conf" 2>/dev/null || true

log "apt-get install rabbitmq-server inside the root"
# In a mount namespace of its own: /proc is gone with it, whatever becomes of this script.
unshare --mount --propagation private sh -euc '
    mount -t proc proc "$1/proc"
    chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get update
    chroot "$1" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends rabbitmq-server
    chroot "$1" apt-get clean
' sh "$build" >&2

version=$(chroot "$build" dpkg-query -W -f '${Version}' rabbitmq-server)
echo "$version" >"$build/$stamp"

# Replace a broken root (nothing may still run from it: its nodes would have made it sound).
if [ -e "$root" ]; then
    unmount_under "$root"
    rm -rf --one-file-system "$root"
fi
mv "$build" "$root"
trap - EXIT
log "RabbitMQ $version ready in $root"
echo "$root"
