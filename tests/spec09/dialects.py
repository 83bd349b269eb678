"""Rule tests that hold for AMQP 0-9 and the transitional 0-10 draft alike: the draft keeps
many of 0-9's rules (often under a name instead of a number) for methods it did not change,
so one test checks both dialects, each run claiming its own spec's rules."""

from __future__ import annotations

import pytest

from amqp_protocol import SPEC_0_9, SPEC_0_10


def on_0_9_and_0_10(
    rules_0_9: str | tuple[str, ...], rules_0_10: str | tuple[str, ...]
) -> pytest.MarkDecorator:
    """Parametrize the ``spec`` fixture (the peers' version) with 0-9, claiming
    ``rules_0_9`` of amqp0-9.xml, and with the 0-10 draft, claiming ``rules_0_10`` of
    amqp-transitional0-10.xml."""

    def ids(rules: str | tuple[str, ...]) -> tuple[str, ...]:
        return (rules,) if isinstance(rules, str) else rules

    return pytest.mark.parametrize(
        "spec",
        [
            pytest.param(SPEC_0_9, marks=pytest.mark.spec_rule(*ids(rules_0_9)), id="0-9"),
            pytest.param(SPEC_0_10, marks=pytest.mark.spec010_rule(*ids(rules_0_10)), id="0-10"),
        ],
    )
