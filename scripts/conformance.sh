#!/usr/bin/env bash
# The AMQP 0-9 conformance report: runs every test that claims a rule of amqp0-9.xml and
# writes docs/conformance.md (one row per rule: tests and result, or why it cannot apply).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
mkdir -p var
rc=0
.venv/bin/python -m pytest -q -m spec_rule -p tests.conformance.plugin \
    --conformance-json var/conformance.json "$@" || rc=$?
.venv/bin/python -m tests.conformance.report var/conformance.json docs/conformance.md
exit "$rc"
