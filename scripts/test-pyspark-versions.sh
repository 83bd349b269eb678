#!/usr/bin/env bash
# The connector's behaviour tests on each older supported PySpark, each in its own venv
# (built or reused by scripts/pyspark-venvs.sh): the tests marked `versions` (classic,
# quorum and stream queues, the sink, restarts, trigger options), against the bundled
# broker and RabbitMQ 4, and the Spark Connect tests on the oldest version. The full suite
# runs on the newest PySpark (.venv, scripts/test.sh). Arguments go to every pytest.
#
#   bash scripts/test-pyspark-versions.sh             # 4.0.5, 4.1.4, 4.2.1
#   PYSPARK_VERSIONS="4.0.5" bash scripts/test-pyspark-versions.sh -x
set -euo pipefail
cd "$(dirname "$0")/.."

read -r -a versions <<<"${PYSPARK_VERSIONS:-}"
venvs=$(bash scripts/pyspark-venvs.sh "${versions[@]}")

# Only the modules that hold such tests: the others may import what an older PySpark lacks
# (pytest imports every module it collects before selecting by marker).
mapfile -t modules < <(grep -rl --include="test_*.py" "mark.versions" tests | sort)

# pytest exits 5 when it selects no test: a failure, unless this script's own arguments
# (a -k or -m of the caller's) deselected everything of a step.
selecting=$#
passes() {
    local rc=0
    "$@" || rc=$?
    [[ $rc -eq 0 || ($rc -eq 5 && $selecting -gt 0) ]]
}

failed=()
while read -r version python; do
    echo "== PySpark $version: pytest -m versions (${#modules[@]} modules)" >&2
    start=$(date +%s)
    # Not RabbitMQ 3.10 here: the bundled broker and RabbitMQ 4 (3.10 runs on the newest).
    passes "$python" -m pytest -p no:cacheprovider -m versions -k "not rabbitmq3" --durations=5 \
        "${modules[@]}" "$@" || failed+=("$version")
    if [[ $version == 4.0.* ]]; then # the oldest supported minor
        echo "== PySpark $version: the Spark Connect tests" >&2
        passes "$python" -m pytest -p no:cacheprovider tests/spark/test_spark_connect.py "$@" ||
            failed+=("$version (Spark Connect)")
    fi
    echo "== PySpark $version: $(($(date +%s) - start)) s" >&2
done <<<"$venvs"

if [ "${#failed[@]}" -gt 0 ]; then
    echo "FAILED on PySpark ${failed[*]}" >&2
    exit 1
fi
