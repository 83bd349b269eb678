"""The runner side of a classic-queue stream, driven in this process as Spark's source runner
drives it: a batch planned again returns the same messages, Spark's commit acks each queue's
batch with one ``basic.ack`` (``multiple=true``), and SIGTERM closes the connection with
``connection.close``. What the reader sends is read off the wire by a recording proxy."""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import sys
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadMaxRows

from amqp_spark.source.micro_batch import MicroBatchReader
from tests.spark.broker_state import ready_once_unconsumed
from tests.spark.conftest import Broker, ReaderFactory
from tests.spark.inputs import bodies
from tests.spark.recording_proxy import (
    BASIC_ACK,
    CONNECTION_CLOSE,
    QUEUE_DECLARE,
    RecordingProxy,
    SentMethod,
)


def offset_reaching(
    reader: MicroBatchReader, start: dict[str, Any], tags: dict[str, int], rows: int
) -> dict[str, Any]:
    """``latestOffset(start)`` once it reaches ``tags`` (deliveries are on their way)."""
    end = reader.latestOffset(start, ReadMaxRows(rows))
    for _ in range(300):
        if end["deliveryTags"] == tags:
            break
        time.sleep(0.05)
        end = reader.latestOffset(start, ReadMaxRows(rows))
    assert end["deliveryTags"] == tags
    return end


def planned_rows(
    reader: MicroBatchReader, start: dict[str, Any], end: dict[str, Any]
) -> list[tuple[str, int, bytes]]:
    """(queue, delivery tag, body) of the batch, as the executors would read it."""
    table = pa.Table.from_batches(
        [b for p in reader.partitions(start, end) for b in reader.read(p)]
    )
    return sorted((r["queue"], r["delivery_tag"], r["body"]) for r in table.to_pylist())


def method_ids(methods: list[SentMethod]) -> list[tuple[int, int]]:
    return [(m.class_id, m.method_id) for m in methods]


def acks(methods: list[SentMethod]) -> list[tuple[int, int, bool]]:
    """(channel, delivery tag, multiple) of each basic.ack."""
    found = []
    for m in methods:
        if (m.class_id, m.method_id) == BASIC_ACK:
            tag, bits = struct.unpack_from(">QB", m.arguments)
            found.append((m.channel, tag, bool(bits & 1)))
    return found


def only_connection(proxy: RecordingProxy) -> list[SentMethod]:
    (methods,) = proxy.methods_sent()
    return methods


def test_a_batch_planned_again_in_the_same_run_returns_the_same_messages(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    queue = broker.new_queue()
    reader, _ = runner_reader_of(queue=queue, prefetch="100")
    start = reader.initialOffset()
    broker.publish(queue, bodies(10))
    end = offset_reaching(reader, start, {queue: 6}, rows=6)

    first = planned_rows(reader, start, end)
    broker.publish(queue, bodies(5, "late"))  # more arrive, and Spark asks again from `start`
    offset_reaching(reader, start, {queue: 6}, rows=6)
    again = planned_rows(reader, start, end)

    assert first == again == [(queue, i + 1, body) for i, body in enumerate(bodies(6))]


def test_commit_acks_each_queues_batch_with_one_multiple_ack_and_nothing_else(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    a, b = broker.new_queue(), broker.new_queue()
    broker.publish(a, bodies(5, "a"))
    broker.publish(b, bodies(7, "b"))
    reader, proxy = runner_reader_of(queue=f"{a},{b}", prefetch="100")
    start = reader.initialOffset()
    end = offset_reaching(reader, start, {a: 5, b: 7}, rows=100)
    assert len(planned_rows(reader, start, end)) == 12
    sent_before = len(only_connection(proxy))

    reader.commit(end)
    reader.stop()

    # Progress questions (passive queue.declare on the depth channel, asked by latestOffset
    # and written by the client's I/O thread, so possibly after `sent_before` was counted)
    # are not settlements: what is left must be the two acks and the close.
    after_commit = [
        m
        for m in only_connection(proxy)[sent_before:]
        if (m.class_id, m.method_id) != QUEUE_DECLARE
    ]
    assert sorted((tag, multiple) for _, tag, multiple in acks(after_commit)) == [
        (5, True),
        (7, True),
    ]
    assert len({channel for channel, _, _ in acks(after_commit)}) == 2  # one channel a queue
    assert method_ids(after_commit)[2:] == [CONNECTION_CLOSE]  # the two acks, then close
    assert (ready_once_unconsumed(broker, a), ready_once_unconsumed(broker, b)) == (0, 0)


def first_batch_of_eight(
    broker: Broker, runner_reader_of: ReaderFactory
) -> tuple[str, MicroBatchReader, RecordingProxy, dict[str, Any]]:
    """A queue of 8 messages, a runner's reader of it, and the end of its first batch (all
    8), planned."""
    queue = broker.new_queue()
    broker.publish(queue, bodies(8))
    reader, proxy = runner_reader_of(queue=queue, prefetch="100")
    start = reader.initialOffset()
    end = offset_reaching(reader, start, {queue: 8}, rows=100)
    planned_rows(reader, start, end)
    return queue, reader, proxy, end


def test_sigterm_closes_the_connection_cleanly_leaving_an_uncommitted_batch_to_the_broker(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    queue, reader, proxy, end = first_batch_of_eight(broker, runner_reader_of)

    os.kill(os.getpid(), signal.SIGTERM)  # what Spark sends the runner when the query stops

    methods = only_connection(proxy)
    assert method_ids(methods)[-1] == CONNECTION_CLOSE
    assert acks(methods) == []
    assert ready_once_unconsumed(broker, queue) == 8, "requeued by the broker, unacked"


class SigtermInside:
    """Sends SIGTERM to this process the first time a function named ``caller`` calls
    another Python function, so that the handler runs while ``caller`` is still running
    (Python runs it at the callee's start): ``Channel.drain_columns`` holds its channel's
    lock then; ``enqueue`` (a request's bookkeeping, run inside ``Connection.send``) holds
    the send lock and its channel's lock."""

    def __init__(self, caller: str) -> None:
        self.caller = caller
        self.sent = False

    def trace(self, frame: FrameType, event: str, arg: Any) -> None:
        caller = frame.f_back
        if event == "call" and not self.sent and caller and caller.f_code.co_name == self.caller:
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        sys.settrace(self.trace)
        try:
            yield
        finally:
            sys.settrace(None)


def idle_poll(reader: MicroBatchReader, end: dict[str, Any], trap: SigtermInside) -> None:
    """A processing-time trigger's polls with nothing new, and the progress report after
    each (which asks the broker for the queue's depth about once a second), until the
    signal was sent inside one of them."""
    for _ in range(100):
        with trap.armed():
            assert reader.latestOffset(end, ReadMaxRows(100)) == end
            reader.reportLatestOffset()
        if trap.sent:
            return
        time.sleep(0.05)
    raise AssertionError(f"{trap.caller} was never reached")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("caller", ["drain_columns", "enqueue"])
def test_a_sigterm_landing_while_a_call_holds_a_lock_closes_the_connection_after_the_call(
    broker: Broker, runner_reader_of: ReaderFactory, caller: str
) -> None:
    """Spark stops a query while a call of the reader runs (under load they take long
    enough): the run's end must not close the connection inside that call, which may hold
    a lock the close takes (a channel's, the send lock). Before, the close waited for it
    forever: the stopped run kept its consumer (``enqueue``: connection.close was never
    sent and heartbeats stopped), and the queue's next messages went to it, not to the
    restarted query (issue 36)."""
    queue, reader, proxy, end = first_batch_of_eight(broker, runner_reader_of)
    reader.commit(end)

    idle_poll(reader, end, SigtermInside(caller))

    methods = only_connection(proxy)
    assert method_ids(methods)[-1] == CONNECTION_CLOSE
    assert [tag for _, tag, _ in acks(methods)] == [8]
    broker.publish(queue, bodies(5, "after"))
    assert ready_once_unconsumed(broker, queue) == 5, "taken by the stopped run's consumer"
