#!/usr/bin/env bash
# Make this checkout ready to run: a .venv with the project installed editable with its
# dev extras, and a Java >= 17 for Spark. Idempotent: a second run with an unchanged
# pyproject.toml installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "bootstrap: $*" >&2; }

find_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11 python3.10; do
        [ -n "$candidate" ] && command -v "$candidate" >/dev/null || continue
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

if [ ! -x .venv/bin/python ]; then
    python=$(find_python) || {
        log "no Python >= 3.10 found; install one (Debian: apt-get install python3 python3-venv)"
        exit 1
    }
    log "creating .venv with $python"
    "$python" -m venv .venv
fi

# The editable install is in setuptools' "compat" mode: a path entry for the checkout
# rather than an import hook, because Spark finds `pyspark_amqp` (and so format("amqp")
# without register()) by scanning sys.path for pyspark_* modules, which an import hook hides.
# Reinstall only when what pip would be told changed.
stamp=.venv/.amqp-spark-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $(.venv/bin/python -V 2>&1) editable=compat"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "installing the project into .venv (pip install -e '.[dev]', compat mode)"
    .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off \
        --config-settings editable_mode=compat -e '.[dev]'
    echo "$want" >"$stamp"
fi

# Spark runs the java named by JAVA_HOME when set, else the one on PATH.
java_bin=java
[ -n "${JAVA_HOME:-}" ] && java_bin="$JAVA_HOME/bin/java"

java_major() {
    # `java -version` prints e.g. 'openjdk version "17.0.15"' or '"1.8.0_392"'.
    "$java_bin" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9.]*\).*/\1/p' | head -n1 |
        awk -F. '{ print ($1 == 1) ? $2 : $1 }'
}

major=$(java_major 2>/dev/null || true)
if [ -z "$major" ] || [ "$major" -lt 17 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ -z "${JAVA_HOME:-}" ]; then
        log "Java >= 17 not found (got '${major:-none}'); installing openjdk-17-jre-headless"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update
        apt-get install -y --no-install-recommends openjdk-17-jre-headless
        major=$(java_major)
    else
        log "Spark needs Java >= 17, found '${major:-none}' ($java_bin)."
        log "Install it, e.g. as root: apt-get install -y openjdk-17-jre-headless"
        log "(or point JAVA_HOME at a Java 17+ installation)."
        exit 1
    fi
fi
log "ready: $(.venv/bin/python -V), Java $major"
