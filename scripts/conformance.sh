#!/usr/bin/env bash
# The conformance reports: runs every test that claims a rule of amqp0-9.xml or of the
# transitional 0-10 draft and writes docs/conformance.md and docs/conformance-0-10.md (one row
# per rule: tests and result, or why it cannot apply).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
mkdir -p var
rc=0
.venv/bin/python -m pytest -q -m "spec_rule or spec010_rule" -p tests.conformance.plugin \
    --conformance-json var/conformance.json "$@" || rc=$?
.venv/bin/python -m tests.conformance.report var/conformance.json docs
exit "$rc"
