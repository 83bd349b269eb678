"""Tune negotiation rules (connection.tune / tune-ok)."""

from __future__ import annotations

import pytest

from amqp_spark.client.connection import negotiate, negotiate_heartbeat


@pytest.mark.parametrize(
    ("ours", "theirs", "agreed"),
    [(131072, 65536, 65536), (4096, 131072, 4096), (0, 131072, 131072), (2047, 0, 2047), (0, 0, 0)],
)
def test_limits_take_the_lower_and_zero_means_no_limit(ours: int, theirs: int, agreed: int) -> None:
    assert negotiate(ours, theirs) == agreed


@pytest.mark.parametrize(
    ("ours", "theirs", "agreed"),
    [(None, 60, 60), (0, 60, 0), (10, 60, 10), (120, 60, 60), (10, 0, 10), (None, 0, 0)],
)
def test_heartbeat_unset_takes_the_servers_and_zero_from_us_disables(
    ours: int | None, theirs: int, agreed: int
) -> None:
    assert negotiate_heartbeat(ours, theirs) == agreed
