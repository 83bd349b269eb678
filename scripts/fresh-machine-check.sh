#!/usr/bin/env bash
# The README's two commands on a fresh machine: a minimal Debian bookworm root
# (debootstrap --variant=minbase, then python3, python3-venv, python3-pip, git and
# ca-certificates; no Node, Java or RabbitMQ) with a systemd machine's open-files limits
# (soft 1024; hard 524288 where this machine lets it be raised, else its own hard limit).
# A clone of this checkout's HEAD (committed work only) goes to
# /work/main in it, with /work/shared beside it, and there, with CI=true:
#
#     bash scripts/demo.sh
#     bash scripts/test.sh [PYTEST_ARGS...]
#
# Usage (as root): bash scripts/fresh-machine-check.sh [--no-demo] [--no-tests] [--keep]
#                  [PYTEST_ARGS...]
#   e.g. bash scripts/fresh-machine-check.sh tests/security/test_load.py
#
# The base root is built once and kept in $FRESH_MACHINE_CACHE (default
# /var/cache/amqp-spark/fresh-bookworm); each run works in a copy of it, deleted at the end
# (--keep keeps it and prints where). apt's downloaded .deb files are cached between runs
# (every package is still installed by the project's own scripts); pip downloads afresh.
# The exit code is the first failing command's; both commands run even if the demo fails.
#
# The root shares this machine's network, so it gets this machine's local CA certificates
# (/usr/local/share/ca-certificates: a TLS-inspecting proxy's, say) and the variables that
# point tools at the CA bundle (SSL_CERT_FILE, PIP_CERT, NODE_EXTRA_CA_CERTS, ...) when set:
# without them nothing in it would reach PyPI or npm through such a proxy.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$(pwd)

log() { echo "fresh-machine-check: $*" >&2; }

demo=true tests=true keep=false
while [ $# -gt 0 ]; do
    case $1 in
    --no-demo) demo=false ;;
    --no-tests) tests=false ;;
    --keep) keep=true ;;
    *) break ;;
    esac
    shift
done

if [ "$(id -u)" != 0 ]; then
    log "needs root (debootstrap, chroot, mounts)"
    exit 1
fi
if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap
fi

cache=${FRESH_MACHINE_CACHE:-/var/cache/amqp-spark/fresh-bookworm}
base=$cache/base
mkdir -p "$cache/apt-archives"

mounted=()
mount_in() { # mount_in ROOT: what a chroot needs of /proc, /dev and /sys
    local root=$1 point
    # The root bound onto itself, so that / is a mount point in the chroot as on a machine:
    # `unshare --mount` (the RabbitMQ 4 node's tooling) cannot make / private otherwise.
    mount --bind "$root" "$root"
    mounted=("$root" "${mounted[@]}")
    for point in proc sys dev dev/pts; do
        mkdir -p "$root/$point"
        case $point in
        proc) mount -t proc proc "$root/proc" ;;
        sys) mount -t sysfs sysfs "$root/sys" ;;
        dev) mount --bind /dev "$root/dev" ;;
        dev/pts) mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" ;;
        esac
        mounted=("$root/$point" "${mounted[@]}")
    done
    mkdir -p "$root/var/cache/apt/archives"
    mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
    mounted=("$root/var/cache/apt/archives" "${mounted[@]}")
    cp /etc/resolv.conf "$root/etc/resolv.conf"
}

kill_inside() { # processes left running in ROOT (an epmd, a broker): ended by their pid
    local root=$1 pid pids=()
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
        [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ] && pids+=("$pid")
    done
    if [ "${#pids[@]}" -gt 0 ]; then
        log "ending processes left in the root: ${pids[*]}"
        kill "${pids[@]}" 2>/dev/null || true
        sleep 1
        kill -9 "${pids[@]}" 2>/dev/null || true
    fi
}

work=
cleanup() {
    local point
    [ -n "$work" ] && kill_inside "$work"
    for point in "${mounted[@]}"; do
        umount "$point" 2>/dev/null || umount -l "$point" || log "could not unmount $point"
    done
    mounted=()
    if [ -n "$work" ] && [ -d "$work" ]; then
        if $keep; then
            log "kept the root: $work"
        elif ! findmnt -rn -o TARGET | grep -qE "^$work(/|$)"; then
            rm -rf --one-file-system "$work"
        else
            log "something is still mounted under $work; not deleting it"
        fi
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

trust=()
for var in SSL_CERT_FILE SSL_CERT_DIR PIP_CERT REQUESTS_CA_BUNDLE CURL_CA_BUNDLE \
    NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO; do
    [ -n "${!var:-}" ] && trust+=("$var=${!var}")
done

in_root() { # in_root ROOT COMMAND...: as a fresh login would, with systemd's nofile limits
    local root=$1
    shift
    ulimit -Hn 524288 2>/dev/null || true
    ulimit -Sn 1024
    env -i HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "${trust[@]}" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        chroot "$root" "$@"
}

as_installed() { # as_installed ROOT: what the Debian installer writes and debootstrap does not
    local root=$1
    echo fresh-machine >"$root/etc/hostname"
    printf '%s\n' '127.0.0.1 localhost' '127.0.1.1 fresh-machine' \
        '::1 localhost ip6-localhost ip6-loopback' 'ff02::1 ip6-allnodes' \
        'ff02::2 ip6-allrouters' >"$root/etc/hosts"
}

trust_local_cas() { # trust_local_cas ROOT
    local root=$1
    if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
        in_root "$root" update-ca-certificates >/dev/null
    fi
}

if [ ! -e "$base/.complete" ]; then
    log "building the base root in $base (debootstrap bookworm, minbase)"
    rm -rf --one-file-system "$base"
    debootstrap --variant=minbase bookworm "$base" http://deb.debian.org/debian
    work=$base kept=$keep keep=true
    mount_in "$base"
    in_root "$base" apt-get update
    in_root "$base" apt-get install -y --no-install-recommends \
        python3 python3-venv python3-pip git ca-certificates
    in_root "$base" apt-get clean
    cleanup
    work= keep=$kept
    touch "$base/.complete"
fi
for tool in node npm java rabbitmq-server; do
    if in_root "$base" sh -c "command -v $tool" >/dev/null; then
        log "the base root has $tool: it is not a fresh machine; delete $base and rerun"
        exit 1
    fi
done

work=$(mktemp -d "$cache/run.XXXXXX")
log "copying the base root to $work"
cp -a "$base/." "$work/"
mount_in "$work"
as_installed "$work"
trust_local_cas "$work"
mkdir -p "$work/work"
git clone --quiet "$checkout" "$work/work/main"
cp -a /work/shared "$work/work/shared"
log "checkout: $(git -C "$work/work/main" log -1 --format='%h %s' | cut -c1-100)"
log "limits in the root: nofile soft $(in_root "$work" sh -c 'ulimit -Sn'), hard $(in_root "$work" sh -c 'ulimit -Hn')"

rc=0
run() {
    local status=0
    log "running: $*"
    in_root "$work" env CI=true bash -c 'cd /work/main && "$@"' bash "$@" || status=$?
    log "$* exited with $status"
    [ "$rc" != 0 ] || rc=$status
}
$demo && run bash scripts/demo.sh
$tests && run bash scripts/test.sh "$@"
if [ "$rc" = 0 ]; then
    log "passed"
else
    log "FAILED (exit code $rc)"
fi
exit "$rc"
