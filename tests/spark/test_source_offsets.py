"""Offsets serialize canonically (Spark compares them as JSON strings) and refuse what is
not theirs."""

from __future__ import annotations

import json

import pytest

from amqp_spark.source.offsets import ClassicOffset, OffsetError, StreamOffset, to_json


def test_json_has_sorted_keys_whatever_the_insertion_order() -> None:
    a = StreamOffset({"zeta": 1, "alpha": 2})
    b = StreamOffset({"alpha": 2, "zeta": 1})
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict()) == to_json(a)
    assert list(a.to_dict()["queues"]) == ["alpha", "zeta"]


def test_offsets_round_trip_through_json() -> None:
    classic = ClassicOffset("c1", {"q": 5, "r": 0})
    stream = StreamOffset({"s": 10})
    assert ClassicOffset.from_dict(json.loads(to_json(classic))) == classic
    assert StreamOffset.from_dict(json.loads(to_json(stream))) == stream


def test_classic_tags_only_count_on_their_connection() -> None:
    offset = ClassicOffset("c1", {"q": 5})
    assert offset.tag("q", "c1") == 5
    assert offset.tag("q", "c2") == 0


def test_offset_of_other_queue_type_names_the_fix() -> None:
    with pytest.raises(OffsetError, match="new checkpointLocation"):
        StreamOffset.from_dict(ClassicOffset("c", {}).to_dict())


@pytest.mark.parametrize(
    "raw",
    [{"kind": "stream", "queues": {"s": -1}}, {"kind": "stream", "queues": {"s": True}}],
)
def test_malformed_offsets_are_refused(raw: dict[str, object]) -> None:
    with pytest.raises(OffsetError):
        StreamOffset.from_dict(raw)
