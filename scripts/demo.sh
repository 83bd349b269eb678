#!/usr/bin/env bash
# The end-to-end demo: see amqp_spark_demo/orders.py. Arguments are passed to it.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
exec .venv/bin/python -m amqp_spark_demo "$@"
