"""Tests of the classes the transitional 0-10 draft keeps from 0-9 (access, file, stream,
tunnel) run against both dialects: the draft's rules say what 0-9's say, under other names."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from amqp_protocol import SPEC_0_9, SPEC_0_10


def in_both_dialects(*spec09_rules: str, draft: Sequence[str] = ()) -> pytest.MarkDecorator:
    """Run the test with a 0-9 ``peer`` claiming ``spec09_rules`` of amqp0-9.xml and with a
    0-10 draft ``peer`` claiming the ``draft`` rules of amqp-transitional0-10.xml (the
    ``spec`` fixture, which ``peer_factory`` speaks)."""
    return pytest.mark.parametrize(
        "spec",
        [
            pytest.param(SPEC_0_9, marks=pytest.mark.spec_rule(*spec09_rules), id="0-9"),
            pytest.param(SPEC_0_10, marks=pytest.mark.spec010_rule(*draft), id="0-10"),
        ],
        indirect=True,
    )
