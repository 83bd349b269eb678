#!/usr/bin/env bash
# Everything CI checks: lint, format, types, then the tests (arguments go to pytest).
# Every step runs even when an earlier one failed, so one run shows all that is wrong;
# the exit code is non-zero if any failed. With CI=true, a RabbitMQ that cannot be had
# fails the run instead of skipping the tests that need it.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
bin=.venv/bin
failed=()

step() { echo "== $*" >&2; }
check() {
    local name=$1
    shift
    step "$name"
    "$@" || failed+=("$name")
}

check "ruff check" "$bin/ruff" check .
check "ruff format --check" "$bin/ruff" format --check .

# mypy refuses a folder without Python files; check the packages written so far.
targets=()
for package in amqp_protocol amqp_spark amqp_spark_demo broker pyspark_amqp testbed tests benchmarks scripts; do
    if [ -n "$(find "$package" -name '*.py' -print -quit 2>/dev/null)" ]; then
        targets+=("$package")
    fi
done
if [ "${#targets[@]}" -gt 0 ]; then
    check "mypy ${targets[*]}" "$bin/mypy" "${targets[@]}"
else
    step "mypy: no Python packages yet, nothing to check"
fi

# ensure NAME WHAT_IS_SKIPPED COMMAND...: run an install step; in CI its failure fails the
# run, elsewhere it is a warning and the tests that need NAME skip, saying why.
ensure() {
    local name=$1 skipped=$2
    shift 2
    step "ensure $name"
    if ! "$@" >&2; then
        if [ "${CI:-}" = true ]; then
            failed+=("$name install")
        else
            echo "warning: no $name; $skipped will be skipped" >&2
        fi
    fi
}

# Two RabbitMQs: 4 (the reference every [rabbitmq] test runs against, from a trixie root)
# and 3.10 (from bookworm's apt; the connector's tests run against it too), unless a URL names
# one to use instead.
[ -n "${AMQP_SPARK_RABBITMQ_URL:-}" ] ||
    ensure "RabbitMQ 4" "the tests that need it" bash scripts/install-rabbitmq4.sh
[ -n "${AMQP_SPARK_RABBITMQ3_URL:-}" ] ||
    ensure "RabbitMQ 3.10" "the tests that need it" bash scripts/install-rabbitmq.sh

# Programs single tests need, from apt: node and npm run the amqplib client's test (node
# alone is not enough: the test installs amqplib with npm), chromium the console's browser test.
ensure npm "the amqplib client's test" \
    bash scripts/install-apt-tool.sh "the amqplib client's test" npm nodejs npm
ensure chromium "the management console's browser test" \
    bash scripts/install-apt-tool.sh "the console's browser test" chromium chromium

# Two jobs at once, since most of their time is waiting (Spark triggers, broker round trips,
# node and JVM start-ups) rather than CPU; each writes a log, printed when both are done. A
# third at once made Spark's Python workers miss their 10 s to connect back (measured).
#  1. the Spark tests on the local session (one JVM), but the clusters'; then the clients'
#     own upstream suites (aiormq 6.9.3, aio-pika 9.6.0) against the bundled broker, compared
#     with the tests that passed on RabbitMQ 4 (tests/peer/rabbitmq4-passed.txt, written by
#     scripts/peer-suites.sh --write-baseline): a test that passes there and fails here fails;
#  2. every other test; then the connector's behaviour tests on the older PySparks it
#     supports (4.0, 4.1, 4.2; .venv has the newest: scripts/test-pyspark-versions.sh), each in
#     a venv of its own built or found in its cache by scripts/pyspark-venvs.sh; then the
#     tests that start clusters (a three-node RabbitMQ 4, tests/cluster; a standalone Spark,
#     tests/spark_cluster).
logs=$(mktemp -d)
clusters=(tests/cluster tests/spark_cluster)
step "2 jobs: pytest -m spark $*, peer suites | pytest -m 'not spark' $*, older PySparks, clusters (logs: $logs)"
{
    rc=0
    "$bin/python" -m pytest -m spark --durations=15 "${clusters[@]/#/--ignore=}" "$@" || rc=$?
    echo "$rc" >"$logs/spark.rc"
    bash scripts/peer-suites.sh --broker bundled --parallel || echo "$?" >"$logs/peer.rc"
} >"$logs/spark.log" 2>&1 &
spark_job=$!
{
    rc=0
    "$bin/python" -m pytest -m "not spark" --durations=15 "$@" || rc=$?
    echo "$rc" >"$logs/other.rc"
    bash scripts/test-pyspark-versions.sh "$@" || echo "$?" >"$logs/versions.rc"
    rc=0
    "$bin/python" -m pytest -m spark --durations=10 "${clusters[@]}" "$@" || rc=$?
    echo "$rc" >"$logs/clusters.rc"
} >"$logs/other.log" 2>&1
wait "$spark_job" || true
spark_rc=$(cat "$logs/spark.rc")
other_rc=$(cat "$logs/other.rc")
clusters_rc=$(cat "$logs/clusters.rc")
cat "$logs/other.log" "$logs/spark.log"

pytest_failed() { # NAME RC [OTHER_RC]: exit code 5 (nothing collected) is fine for one half
    case $2 in
    0) ;;
    5) [ "$3" != 5 ] || failed+=("pytest (collected no tests: a run that tests nothing fails)") ;;
    *) failed+=("$1 (exit code $2)") ;;
    esac
}
pytest_failed "pytest -m 'not spark'" "$other_rc" "$spark_rc"
pytest_failed "pytest -m spark" "$spark_rc" 0
pytest_failed "pytest -m spark ${clusters[*]}" "$clusters_rc" 0
[ ! -e "$logs/versions.rc" ] || failed+=("the older PySparks (scripts/test-pyspark-versions.sh)")
[ ! -e "$logs/peer.rc" ] || failed+=("peer suites (bundled broker vs RabbitMQ 4 baseline)")

if [ "${#failed[@]}" -gt 0 ]; then
    echo "FAILED:" >&2
    printf '  - %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "all checks passed" >&2
