#!/usr/bin/env bash
# Build (or reuse) one venv per older PySpark the connector supports, each with that PySpark
# installed first and this checkout installed beside it (editable, with the test extras),
# and print "VERSION PYTHON" per venv. The newest supported PySpark is .venv's (bootstrap.sh).
#
#   bash scripts/pyspark-venvs.sh [VERSION...]    default: the versions in $versions below
#
# Venvs live under $AMQP_SPARK_PYSPARK_VENVS (default /var/cache/amqp-spark/pyspark-venvs,
# else ~/.cache/amqp-spark/pyspark-venvs when /var/cache is not writable), one folder per
# version. A venv is rebuilt only when pyproject.toml or the checkout changed. Installing
# the project must keep the PySpark that was there: the script fails if pip replaced it.
# PySpark ships as a ~400 MB source distribution; pip's wheel cache keeps the built wheel,
# so a second machine-local build takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

# The latest patch of each supported minor below the newest (4.3, .venv's).
versions=(4.0.5 4.1.4 4.2.1)
[ "$#" -eq 0 ] || versions=("$@")

log() { echo "pyspark-venvs: $*" >&2; }

root=${AMQP_SPARK_PYSPARK_VENVS:-}
if [ -z "$root" ]; then
    root=/var/cache/amqp-spark/pyspark-venvs
    mkdir -p "$root" 2>/dev/null && [ -w "$root" ] || root="$HOME/.cache/amqp-spark/pyspark-venvs"
fi
mkdir -p "$root"

python=${PYTHON:-}
if [ -z "$python" ]; then
    # The interpreter .venv was made from, so that every venv runs the same Python.
    if [ -x .venv/bin/python ]; then
        python=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
    else
        python=python3
    fi
fi

pip_quiet=(--disable-pip-version-check --progress-bar off -q)

build() { # VERSION: make or refresh $root/VERSION, then print its python
    local version=$1 venv="$root/$1"
    local want
    want="$(sha256sum pyproject.toml | cut -d' ' -f1) $($python -V 2>&1) $(pwd)"
    if [ "$(cat "$venv/.amqp-spark-installed" 2>/dev/null)" != "$want" ]; then
        if [ ! -x "$venv/bin/python" ]; then
            log "creating $venv with $python"
            "$python" -m venv "$venv"
        fi
        # PySpark first, as a user's environment (or a Databricks runtime) has it.
        log "$version: pip install pyspark[connect]==$version"
        "$venv/bin/python" -m pip install "${pip_quiet[@]}" "pyspark[connect]==$version"
        log "$version: pip install -e '.[test]' beside it"
        "$venv/bin/python" -m pip install "${pip_quiet[@]}" \
            --config-settings editable_mode=compat -e '.[test]'
        echo "$want" >"$venv/.amqp-spark-installed"
    fi
    local got
    got=$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')
    if [ "$got" != "$version" ]; then
        log "$version: installing the project replaced PySpark $version with $got"
        return 1
    fi
    echo "$version $venv/bin/python"
}

# One build at a time per venv folder (two checkouts may ask at once).
for version in "${versions[@]}"; do
    (
        flock 9
        build "$version"
    ) 9>"$root/$version.lock"
done
