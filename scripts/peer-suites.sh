#!/usr/bin/env bash
# The clients' own upstream test suites (aiormq 6.9.3, aio-pika 9.6.0) against the bundled
# broker and RabbitMQ 4, side by side; fails when a test passes on RabbitMQ and fails on
# ours. Arguments go to tests/peer/suites.py (--suite, --broker, --timeout, -k; --help).
# Needs the project's .venv (scripts/bootstrap.sh) and, for RabbitMQ 4, its trixie root
# (scripts/install-rabbitmq4.sh, as root). The suites' venvs are kept in .peer-venv/.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m tests.peer.suites "$@"
