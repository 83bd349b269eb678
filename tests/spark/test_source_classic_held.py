"""One queue's held deliveries: runs merged into one numbering of kinds, cut and acked in tag
order, and kinds renumbered once many are no longer held."""

from __future__ import annotations

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.events import DeliveryColumns, DeliveryKind
from amqp_spark.source.classic.held import MAX_KINDS, HeldDeliveries

Props = SPEC_0_9_1.properties("basic")


def _kind(name: str, redelivered: bool = False) -> DeliveryKind:
    return DeliveryKind("ctag", redelivered, "", "q", Props(message_id=name))


def _name(kind: DeliveryKind) -> str:
    name: str = getattr(kind.properties, "message_id")  # noqa: B009 - Properties is generic
    return name


def _run(tags: list[int], kinds: list[int], distinct: list[DeliveryKind]) -> DeliveryColumns:
    keys: list[bytes | None] = [_name(k).encode() for k in distinct]
    return DeliveryColumns(tags, kinds, [b"x" * t for t in tags], distinct, keys)


def _message_ids(held: HeldDeliveries) -> list[str]:
    c = held.columns
    return [_name(c.distinct[k]) for k in c.kinds]


def test_runs_numbering_their_kinds_apart_are_held_under_one_numbering() -> None:
    held = HeldDeliveries()
    held.add(_run([1, 2], [0, 1], [_kind("a"), _kind("b")]))
    held.add(_run([3, 4, 5], [0, 1, 0], [_kind("b"), _kind("c")]))
    assert _message_ids(held) == ["a", "b", "b", "c", "b"]
    assert len(held.columns.distinct) == 3
    assert held.columns.tags == [1, 2, 3, 4, 5]


def test_add_counts_redelivered_deliveries_and_body_bytes() -> None:
    held = HeldDeliveries()
    redelivered, size = held.add(
        _run([1, 2, 3], [0, 1, 1], [_kind("a"), _kind("b", redelivered=True)])
    )
    assert (redelivered, size) == (2, 1 + 2 + 3)


def test_rows_between_tags_and_their_acking() -> None:
    held = HeldDeliveries()
    held.add(_run([5, 6, 7, 8], [0, 0, 0, 0], [_kind("a")]))
    first, last = held.after(5), held.after(7)
    assert held.rows(first, last).tags == [6, 7]
    assert held.drop(held.after(6)) == 5 + 6
    assert held.columns.tags == [7, 8]
    assert (held.tag_at(0), held.body_size(1)) == (7, 8)


def test_kinds_no_longer_held_are_forgotten_past_the_bound_and_rows_taken_before_keep_theirs() -> (
    None
):
    held = HeldDeliveries()
    count = MAX_KINDS + 10
    held.add(
        _run(list(range(1, count + 1)), list(range(count)), [_kind(str(i)) for i in range(count)])
    )
    taken = held.rows(count - 2, count)
    held.drop(count - 3)
    assert _message_ids(held) == [str(count - 3), str(count - 2), str(count - 1)]
    assert len(held.columns.distinct) == 3
    assert [_name(taken.distinct[k]) for k in taken.kinds] == [
        str(count - 2),
        str(count - 1),
    ]
    held.add(_run([count + 1], [0], [_kind(str(count - 1))]))  # a kind still held: merged
    assert len(held.columns.distinct) == 3
