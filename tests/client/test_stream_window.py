"""The stream publisher's window: flow control, confirms and errors."""

from __future__ import annotations

import pytest

from amqp_protocol.stream.values import PublishedMessage
from amqp_spark.client.stream.window import PublishWindow


def messages(first: int, count: int) -> list[PublishedMessage]:
    return [PublishedMessage(i, f"m{i}".encode()) for i in range(first, first + count)]


def test_room_shrinks_with_what_is_sent_and_grows_with_confirms() -> None:
    window = PublishWindow(max_in_flight=10)
    window.sent(messages(100, 8))
    assert (window.room, window.outstanding) == (2, 8)
    window.sent(messages(108, 4))  # the writer may overshoot by one frame
    assert window.room == 0
    window.on_confirm([100, 101, 102])
    assert (window.room, window.outstanding, window.confirmed) == (1, 9, 3)


def test_confirms_out_of_order_twice_or_of_unknown_ids_count_once() -> None:
    window = PublishWindow(max_in_flight=100)
    window.sent(messages(1, 5))
    window.on_confirm([3, 1])
    window.on_confirm([1, 3, 99])  # again, and never sent
    assert (window.confirmed, window.outstanding) == (2, 3)


def test_refused_messages_are_kept_with_their_code_and_leave_the_window() -> None:
    window = PublishWindow(max_in_flight=100)
    window.sent(messages(1, 4))
    window.on_error([(2, 0x02), (3, 0x02)])
    window.on_confirm([1, 4])
    assert window.refused == [(2, 0x02), (3, 0x02)]
    assert (window.outstanding, window.confirmed) == (0, 2)


def test_a_window_without_room_is_refused() -> None:
    with pytest.raises(ValueError, match="max_in_flight must be at least 1, got 0"):
        PublishWindow(0)


def test_after_a_loss_what_the_stream_holds_is_confirmed_and_the_rest_kept_in_order() -> None:
    window = PublishWindow(max_in_flight=100)
    window.sent(messages(1, 10))
    window.on_confirm([1, 2])

    held = window.stored_through(6)  # QueryPublisherSequence on the new connection: 6

    assert (held, window.confirmed, window.outstanding) == (4, 6, 4)
    assert [m.publishing_id for m in window.unconfirmed()] == [7, 8, 9, 10]
    assert window.unconfirmed()[0].message == b"m7"
