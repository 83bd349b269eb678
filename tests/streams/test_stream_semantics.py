"""Stream queues over AMQP 0-9-1: the same test code against the bundled broker and RabbitMQ.

What RabbitMQ does was established by running these tests against it (3.10.8, then 4.0.5:
where 4.0 differs the test pins 4.0 and says so); the bundled broker must do the same.
"""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker

from amqp_protocol import SPEC_0_9_1, events
from testbed.raw_client import M, call, open_raw

STREAM = {"x-queue-type": "stream"}
WAIT = 5.0  # seconds a test waits for deliveries it expects


@pytest.fixture
def stream(connection: pika.BlockingConnection) -> Iterator[str]:
    """A new, empty stream queue's name."""
    name = f"stream-{uuid.uuid4().hex[:12]}"
    ch = connection.channel()
    ch.queue_declare(name, durable=True, arguments=STREAM)
    ch.close()
    yield name
    if connection.is_open:
        connection.channel().queue_delete(name)


def publish(connection: pika.BlockingConnection, queue: str, bodies: list[bytes]) -> None:
    """Publish with confirms, waiting for each: every message is a chunk of its own."""
    ch = connection.channel()
    ch.confirm_delivery()
    for body in bodies:
        ch.basic_publish("", queue, body)
    ch.close()


class Consumer:
    """A consumer on its own channel, recording (delivery tag, offset header, body)."""

    def __init__(
        self,
        connection: pika.BlockingConnection,
        queue: str,
        offset: Any = None,
        prefetch: int = 100,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        self.connection = connection
        self.channel: BlockingChannel = connection.channel()
        self.channel.basic_qos(prefetch_count=prefetch)
        self.received: list[tuple[int, Any, bytes]] = []
        self.redelivered: list[bool] = []
        self.headers: list[dict[str, Any]] = []
        args = dict(arguments or {})
        if offset is not None:
            args["x-stream-offset"] = offset
        self.channel.basic_consume(queue, self._on_message, arguments=args or None)

    def _on_message(self, ch: Any, method: Any, properties: Any, body: bytes) -> None:
        headers = properties.headers or {}
        self.headers.append(headers)
        self.redelivered.append(method.redelivered)
        self.received.append((method.delivery_tag, headers.get("x-stream-offset"), body))

    def wait(self, count: int, timeout: float = WAIT) -> list[int]:
        """Offsets received, once ``count`` arrived or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            self.connection.process_data_events(time_limit=0.05)
        return self.offsets

    def settle(self, seconds: float) -> list[int]:
        """Offsets received after letting ``seconds`` pass (to see nothing more comes)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.connection.process_data_events(time_limit=0.05)
        return self.offsets

    @property
    def offsets(self) -> list[int]:
        return [offset for _, offset, _ in self.received]


def declare_error(broker_url: str, **kwargs: Any) -> tuple[int, str]:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    try:
        conn.channel().queue_declare(**kwargs)
    except (ChannelClosedByBroker, ConnectionClosedByBroker) as e:
        return e.reply_code, e.reply_text
    finally:
        if conn.is_open:
            conn.close()
    raise AssertionError(f"queue.declare({kwargs}) was accepted")


def name() -> str:
    return f"stream-{uuid.uuid4().hex[:12]}"


# -- declaring --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("properties", "refused"),
    [
        ({"exclusive": True}, "exclusive-owner"),
        ({"auto_delete": True}, "auto-delete"),
        ({"durable": False}, "non-durable"),
    ],
)
def test_declare_refuses_what_a_stream_cannot_be(
    broker_url: str, properties: dict[str, bool], refused: str
) -> None:
    q = name()
    kwargs: dict[str, Any] = {"queue": q, "durable": True, "arguments": STREAM, **properties}
    assert declare_error(broker_url, **kwargs) == (
        406,
        f"PRECONDITION_FAILED - invalid property '{refused}' for queue '{q}' in vhost '/'",
    )


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("x-max-priority", 10),
        ("x-dead-letter-exchange", "dlx"),
        ("x-dead-letter-routing-key", "k"),
        ("x-message-ttl", 1000),
        ("x-expires", 1000),
        ("x-max-length", 10),
        ("x-overflow", "reject-publish"),
        ("x-single-active-consumer", True),
    ],
)
def test_declare_refuses_classic_queue_arguments(
    broker_url: str, argument: str, value: Any
) -> None:
    q = name()
    args = {**STREAM, argument: value}
    assert declare_error(broker_url, queue=q, durable=True, arguments=args) == (
        406,
        f"PRECONDITION_FAILED - invalid arg '{argument}' for queue '{q}' in vhost '/' "
        "of queue type rabbit_stream_queue",
    )


def test_declare_accepts_retention_and_segment_size(
    connection: pika.BlockingConnection,
) -> None:
    q = name()
    args = {
        **STREAM,
        "x-max-length-bytes": 10_000_000,
        "x-max-age": "7D",
        "x-stream-max-segment-size-bytes": 1_000_000,
    }
    ch = connection.channel()
    ok = ch.queue_declare(q, durable=True, arguments=args).method
    assert (ok.queue, ok.message_count, ok.consumer_count) == (q, 0, 0)
    assert ch.queue_declare(q, durable=True, arguments=args).method.queue == q
    ch.queue_delete(q)


@pytest.mark.parametrize(
    ("argument", "value", "detail"),
    [
        ("x-max-age", "1x", "invalid_max_age"),
        ("x-max-age", "0s", "invalid_max_age"),
        ("x-max-age", 100, "{unacceptable_type,signedint}"),
        ("x-max-length-bytes", -1, "{value_negative,-1}"),
        ("x-max-length-bytes", "big", '"expected integer, got longstr"'),
        ("x-stream-max-segment-size-bytes", -5, "{value_negative,-5}"),
    ],
)
def test_declare_refuses_invalid_retention_values(
    broker_url: str, argument: str, value: Any, detail: str
) -> None:
    q = name()
    args = {**STREAM, argument: value}
    assert declare_error(broker_url, queue=q, durable=True, arguments=args) == (
        406,
        f"PRECONDITION_FAILED - invalid arg '{argument}' for queue '{q}' in vhost '/': {detail}",
    )


def test_declare_refuses_a_segment_size_over_3_gb(broker_url: str) -> None:
    args = {**STREAM, "x-stream-max-segment-size-bytes": 3_000_000_001}
    assert declare_error(broker_url, queue=name(), durable=True, arguments=args) == (
        406,
        "PRECONDITION_FAILED - Exceeded max value for x-stream-max-segment-size-bytes",
    )


def test_declare_refuses_a_server_named_stream(broker_url: str) -> None:
    assert declare_error(broker_url, queue="", durable=True, arguments=STREAM) == (
        406,
        "PRECONDITION_FAILED - Cannot declare a server-named queue for type rabbit_stream_queue",
    )


# -- what makes no sense on a stream ----------------------------------------------------------


def consume_error(connection: pika.BlockingConnection, queue: str, **kwargs: Any) -> Exception:
    ch = connection.channel()
    qos = kwargs.pop("qos", {"prefetch_count": 10})
    try:
        for settings in qos if isinstance(qos, list) else [qos]:
            ch.basic_qos(**settings)
        ch.basic_consume(queue, lambda *a: None, **kwargs)
    except (ChannelClosedByBroker, ConnectionClosedByBroker) as e:
        return e
    raise AssertionError("basic.consume was accepted")


def test_consume_without_prefetch_is_refused(
    connection: pika.BlockingConnection, stream: str
) -> None:
    """RabbitMQ 4.0's text (3.10: "... is not set for 'queue 'q' in vhost '/''")."""
    e = consume_error(connection, stream, qos={"prefetch_count": 0})
    assert isinstance(e, ChannelClosedByBroker)
    assert (e.reply_code, e.reply_text) == (
        406,
        f"PRECONDITION_FAILED - consumer prefetch count is not set for stream queue '{stream}' "
        "in vhost '/'",
    )


def test_consume_with_only_a_global_prefetch_is_refused_as_unset(
    connection: pika.BlockingConnection, stream: str
) -> None:
    e = consume_error(connection, stream, qos={"prefetch_count": 10, "global_qos": True})
    assert isinstance(e, ChannelClosedByBroker) and e.reply_code == 406


def test_consume_with_a_global_prefetch_closes_the_connection(broker_url: str, stream: str) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    e = consume_error(
        conn, stream, qos=[{"prefetch_count": 10}, {"prefetch_count": 10, "global_qos": True}]
    )
    assert isinstance(e, ConnectionClosedByBroker)
    assert (e.reply_code, e.reply_text) == (
        540,
        f"NOT_IMPLEMENTED - queue '{stream}' in vhost '/' does not support global qos",
    )


def test_no_ack_consume_closes_the_connection(broker_url: str, stream: str) -> None:
    """RabbitMQ 4.0's text (3.10: "... not supported by stream queues queue 'q' ...")."""
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    e = consume_error(conn, stream, auto_ack=True)
    assert isinstance(e, ConnectionClosedByBroker)
    assert (e.reply_code, e.reply_text) == (
        540,
        f"NOT_IMPLEMENTED - automatic acknowledgement not supported by stream queue '{stream}' "
        "in vhost '/'",
    )


def test_consumer_priority_is_refused(connection: pika.BlockingConnection, stream: str) -> None:
    e = consume_error(connection, stream, arguments={"x-priority": 5})
    assert isinstance(e, ChannelClosedByBroker)
    assert (e.reply_code, e.reply_text) == (
        406,
        f"PRECONDITION_FAILED - invalid arg 'x-priority' for queue '{stream}' in vhost '/' "
        "of queue type rabbit_stream_queue",
    )


@pytest.mark.parametrize("no_ack", [False, True])
def test_basic_get_closes_the_connection(broker_url: str, stream: str, no_ack: bool) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    with pytest.raises(ConnectionClosedByBroker) as e:
        conn.channel().basic_get(stream, auto_ack=no_ack)
    assert (e.value.reply_code, e.value.reply_text) == (
        540,
        f"NOT_IMPLEMENTED - basic.get not supported by stream queues queue '{stream}' in vhost '/'",
    )


def test_purge_closes_the_connection(broker_url: str, stream: str) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    with pytest.raises(ConnectionClosedByBroker) as e:
        conn.channel().queue_purge(stream)
    assert e.value.reply_code == 540
    assert "queue.purge not supported by stream queues" in e.value.reply_text


@pytest.mark.parametrize("settle", ["nack", "reject", "nack-no-requeue", "reject-no-requeue"])
def test_nack_and_reject_settle_as_an_ack_does(
    connection: pika.BlockingConnection, stream: str, settle: str
) -> None:
    """RabbitMQ 4.0: a nack or reject, requeue or not, returns the consumer's credit and
    nothing is delivered again; the tag is settled, so an ack of it then is an unknown
    delivery tag (3.10 closed the connection, 540)."""
    publish(connection, stream, [b"a", b"b", b"c"])
    consumer = Consumer(connection, stream, "first", prefetch=1)
    ch = consumer.channel
    for count in (1, 2, 3):
        assert consumer.wait(count) == list(range(count))
        tag = consumer.received[-1][0]
        if settle.startswith("reject"):
            ch.basic_reject(tag, requeue="no-requeue" not in settle)
        else:
            ch.basic_nack(tag, requeue="no-requeue" not in settle)
    assert consumer.settle(0.5) == [0, 1, 2]
    assert consumer.redelivered == [False] * 3
    ch.basic_ack(consumer.received[0][0])
    consumer.settle(0.5)
    assert ch.is_closed  # 406 PRECONDITION_FAILED - unknown delivery tag


def test_ack_of_an_unknown_delivery_tag_closes_the_channel(
    connection: pika.BlockingConnection, stream: str
) -> None:
    publish(connection, stream, [b"m"])
    consumer = Consumer(connection, stream, "first")
    consumer.wait(1)
    consumer.channel.basic_ack(99)
    consumer.settle(1.0)
    assert consumer.channel.is_closed  # 406 PRECONDITION_FAILED - unknown delivery tag 99


# -- offsets ----------------------------------------------------------------------------------


def test_offsets_are_dense_increasing_and_in_a_long_header(
    connection: pika.BlockingConnection, stream: str
) -> None:
    publish(connection, stream, [b"m%d" % i for i in range(20)])
    consumer = Consumer(connection, stream, "first")
    assert consumer.wait(20) == list(range(20))
    assert [body for _, _, body in consumer.received] == [b"m%d" % i for i in range(20)]
    # RabbitMQ sends the offset as a signed 64-bit field ("l"), which pika decodes to `long`.
    assert type(consumer.headers[0]["x-stream-offset"]).__name__ == "long"


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        ("first", [0, 1, 2, 3, 4]),
        (0, [0, 1, 2, 3, 4]),
        (3, [3, 4]),
        (-1, [0, 1, 2, 3, 4]),
        ("last", [4]),  # the start of the last chunk; each message here is a chunk
        ("next", []),
        (None, []),  # "next" is the default
        ("1h", [0, 1, 2, 3, 4]),
        ("1D", [0, 1, 2, 3, 4]),
        ("1Y", [0, 1, 2, 3, 4]),
    ],
)
def test_x_stream_offset_forms(
    connection: pika.BlockingConnection, stream: str, offset: Any, expected: list[int]
) -> None:
    publish(connection, stream, [b"m%d" % i for i in range(5)])
    consumer = Consumer(connection, stream, offset)
    assert consumer.wait(len(expected) + 1, timeout=1.5) == expected
    publish(connection, stream, [b"later"])
    assert consumer.wait(len(expected) + 1) == [*expected, 5]


def test_x_stream_offset_timestamp_attaches_at_the_first_chunk_after_it(
    connection: pika.BlockingConnection, stream: str
) -> None:
    publish(connection, stream, [b"old"])
    time.sleep(2.1)  # AMQP timestamps have whole seconds
    middle = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)
    publish(connection, stream, [b"new"])
    assert Consumer(connection, stream, middle).wait(1) == [1]
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    assert Consumer(connection, stream, past).wait(2) == [0, 1]
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    assert Consumer(connection, stream, future).settle(0.5) == []


def test_x_stream_offset_interval_shorter_than_the_age_skips_older_messages(
    connection: pika.BlockingConnection, stream: str
) -> None:
    publish(connection, stream, [b"old"])
    time.sleep(2.5)
    publish(connection, stream, [b"new"])
    assert Consumer(connection, stream, "2s").wait(1) == [1]


def test_x_stream_offset_past_the_end_waits_for_that_offset(
    connection: pika.BlockingConnection, stream: str
) -> None:
    publish(connection, stream, [b"m0", b"m1"])
    consumer = Consumer(connection, stream, 4)
    publish(connection, stream, [b"m2", b"m3", b"m4", b"m5"])
    assert consumer.wait(2) == [4, 5]


def test_last_on_an_empty_stream_gets_the_first_message_published(
    connection: pika.BlockingConnection, stream: str
) -> None:
    consumer = Consumer(connection, stream, "last")
    publish(connection, stream, [b"a", b"b"])
    assert consumer.wait(2) == [0, 1]


@pytest.mark.parametrize(
    ("offset", "detail"),
    [
        ("1x", '{invalid_stream_offset_arg,{longstr,<<"1x">>}}'),
        ("0s", '{invalid_stream_offset_arg,{longstr,<<"0s">>}}'),
        ("1.5h", '{invalid_stream_offset_arg,{longstr,<<"1.5h">>}}'),
    ],
)
def test_invalid_x_stream_offset_closes_the_channel(
    connection: pika.BlockingConnection, stream: str, offset: str, detail: str
) -> None:
    e = consume_error(connection, stream, arguments={"x-stream-offset": offset})
    assert isinstance(e, ChannelClosedByBroker)
    assert (e.reply_code, e.reply_text) == (
        406,
        f"PRECONDITION_FAILED - invalid arg 'x-stream-offset' for queue '{stream}' "
        f"in vhost '/': {detail}",
    )


@pytest.mark.parametrize("offset", ["bogus", "h", True])
def test_x_stream_offset_rabbitmq_fails_on_internally(
    broker_url: str, stream: str, offset: Any
) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    e = consume_error(conn, stream, arguments={"x-stream-offset": offset})
    assert isinstance(e, ConnectionClosedByBroker)
    assert (e.reply_code, e.reply_text) == (541, "INTERNAL_ERROR")


# -- consumers --------------------------------------------------------------------------------


def test_acks_are_credit_and_do_not_remove_messages(
    connection: pika.BlockingConnection, stream: str
) -> None:
    publish(connection, stream, [b"m%d" % i for i in range(5)])
    consumer = Consumer(connection, stream, "first", prefetch=2)
    assert consumer.settle(1.0) == [0, 1]
    consumer.channel.basic_ack(consumer.received[0][0])
    assert consumer.wait(3) == [0, 1, 2]
    consumer.channel.basic_ack(consumer.received[2][0], multiple=True)
    assert consumer.wait(5) == [0, 1, 2, 3, 4]
    assert Consumer(connection, stream, "first").wait(5) == [0, 1, 2, 3, 4]


def test_two_consumers_read_independently_at_their_own_offsets(
    connection: pika.BlockingConnection, stream: str
) -> None:
    publish(connection, stream, [b"m%d" % i for i in range(10)])
    early = Consumer(connection, stream, "first", prefetch=3)
    late = Consumer(connection, stream, 7)
    assert late.wait(3) == [7, 8, 9]
    assert early.settle(0.5) == [0, 1, 2]  # no ack, no more credit
    publish(connection, stream, [b"m10"])
    assert late.wait(4) == [7, 8, 9, 10]
    assert early.offsets == [0, 1, 2]


def test_redeclaring_with_another_max_age_is_refused(
    connection: pika.BlockingConnection, broker_url: str
) -> None:
    q = name()
    connection.channel().queue_declare(q, durable=True, arguments={**STREAM, "x-max-age": "1h"})
    try:
        assert declare_error(
            broker_url, queue=q, durable=True, arguments={**STREAM, "x-max-age": "2h"}
        ) == (
            406,
            f"PRECONDITION_FAILED - inequivalent arg 'x-max-age' for queue '{q}' in vhost '/': "
            "received '2h' but current is '1h'",
        )
    finally:
        connection.channel().queue_delete(q)


def publish_confirmed_in_batches(
    broker_url: str, queue: str, count: int, batch: int
) -> list[float]:
    """Publish ``count`` identical 16-byte messages to ``queue`` over a raw socket with
    confirms: ``batch`` pre-encoded publishes in one write, then wait until the broker has
    confirmed the batch's last (a batch's confirms must fit the socket buffers: the broker
    stops reading while we do not read them). pika's Python framing would be the
    bottleneck (a million publishes through it timed out once on RabbitMQ 4 under load).
    Returns the seconds each batch took, write to last confirm."""
    port = urlsplit(broker_url).port
    assert port is not None
    sock, conn = open_raw(port, timeout=60)
    seconds: list[float] = []
    with sock:
        assert call(sock, conn, 1, M("channel.open")()).NAME == "channel.open-ok"
        assert call(sock, conn, 1, M("confirm.select")()).NAME == "confirm.select-ok"
        publish = conn.send_content(
            1,
            M("basic.publish")(exchange="", routing_key=queue),
            SPEC_0_9_1.properties("basic")(),
            b"x" * 16,
        )
        confirmed = 0
        for sent in range(batch, count + 1, batch):
            began = time.monotonic()
            sock.sendall(publish * batch)
            while confirmed < sent:
                data = sock.recv(65536)
                assert data, "the broker closed the socket"
                for event in conn.receive_data(data):
                    assert isinstance(event, events.MethodReceived), event
                    reply: Any = event.method
                    assert reply.NAME == "basic.ack", reply
                    confirmed = max(confirmed, reply.delivery_tag)
            seconds.append(time.monotonic() - began)
    return seconds


@pytest.mark.slow
def test_consumer_at_offset_n_of_a_million_message_stream_starts_quickly(
    connection: pika.BlockingConnection, stream: str, broker_url: str
) -> None:
    """The consumer's first delivery at offset 765,432 comes without the broker reading the
    stream up to there. The bound scales with the machine's load: 2 s, or the time the
    slowest tenth of the stream took to publish and confirm if that is longer (reading 76%
    of the stream would take longer than reading its tenth on a loaded machine too)."""
    batches = publish_confirmed_in_batches(broker_url, stream, 1_000_000, batch=1000)
    bound = max(2.0, sum(sorted(batches)[-len(batches) // 10 :]))
    began = time.monotonic()
    # Prefetch 1: nothing arrives after the one delivery waited for. A delivery received but
    # not yet dispatched when the fixture closes the connection would be rejected by pika's
    # cancel, and RabbitMQ closes the connection for a reject on a stream queue (540).
    consumer = Consumer(connection, stream, 765_432, prefetch=1)
    assert consumer.wait(1, timeout=max(10.0, bound))[:1] == [765_432]
    assert time.monotonic() - began < bound
