"""The stream publisher on the connector's ``StreamClient``, on the bundled broker and on
RabbitMQ 4: batched frames within the window, confirms, deduplication of a retried task's
rows, publishers deleted for the next task of the connection, refusals named. Rows are read
back with rstream."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from amqp_protocol.generated import stream as c
from amqp_protocol.stream.command import Command
from amqp_protocol.stream.values import PublishedMessage
from amqp_spark.client.stream import StreamClient, StreamEndpoint, StreamError
from amqp_spark.client.stream.publisher import StreamPublisher, StreamPublishFailed
from amqp_spark.sink.stream_ids import PublishingIds, producer_name
from tests.protocol.amqp10.stream_client import delete
from tests.spark.stream_dedup_client import stored_messages
from tests.stream_protocol.conftest import Endpoints

NAME = producer_name(str(uuid.UUID(int=9)), 0)
IDS = PublishingIds(NAME, 5)


class CountingClient(StreamClient):
    """The client, counting the messages of each Publish frame it sends."""

    def __init__(self, endpoint: StreamEndpoint) -> None:
        self.publish_frames: list[int] = []
        super().__init__(endpoint)

    def send(self, command: Command) -> None:
        if isinstance(command, c.Publish | c.PublishV2):
            self.publish_frames.append(len(command.messages))
        super().send(command)


@pytest.fixture
def client(endpoints: Endpoints) -> Iterator[CountingClient]:
    opened = CountingClient(StreamEndpoint.parse(endpoints.stream))
    yield opened
    opened.close()


@pytest.fixture
def stream(client: CountingClient, endpoints: Endpoints) -> Iterator[str]:
    name = f"sink-publisher-{uuid.uuid4().hex[:8]}"
    client.request(c.Create(client.next_correlation_id(), name, {}), c.CreateResponse, name)
    yield name
    delete(endpoints.stream, name)


def rows(start: int, count: int, tag: str = "") -> list[PublishedMessage]:
    return [
        PublishedMessage(pid, f"row-{start + i}{tag}".encode())
        for i, pid in enumerate(IDS.for_rows(start, count))
    ]


def test_rows_go_in_batched_frames_within_the_window_and_are_all_confirmed(
    client: CountingClient, stream: str, endpoints: Endpoints
) -> None:
    publisher = StreamPublisher(client, NAME, max_in_flight=300, where="test task")
    assert publisher.declare(stream) == 0
    publisher.publish(stream, rows(0, 3000))
    assert publisher.finish() == 3000
    assert max(client.publish_frames) <= 300  # never more outstanding than the window
    assert len(client.publish_frames) < 3000 / 10  # many messages a frame
    stored = stored_messages(endpoints.stream, stream)
    assert stored == [f"row-{i}".encode() for i in range(3000)]


def test_a_retried_task_on_the_same_connection_adds_only_the_rows_not_stored(
    client: CountingClient, stream: str, endpoints: Endpoints
) -> None:
    first = StreamPublisher(client, NAME, max_in_flight=50, where="attempt 1")
    first.declare(stream)
    first.publish(stream, rows(0, 40, "-a"))
    assert first.finish() == 40
    retry = StreamPublisher(client, NAME, max_in_flight=50, where="attempt 2")
    assert IDS.rows_in_stream(retry.declare(stream)) == 40  # its publisher was deleted
    retry.publish(stream, rows(0, 100, "-b"))
    assert retry.finish() == 100  # the 40 dropped are confirmed too
    stored = stored_messages(endpoints.stream, stream)
    assert stored == [f"row-{i}-a".encode() for i in range(40)] + [
        f"row-{i}-b".encode() for i in range(40, 100)
    ]


def test_filter_values_go_in_publish_version_2(
    client: CountingClient, stream: str, endpoints: Endpoints
) -> None:
    publisher = StreamPublisher(client, NAME, max_in_flight=100, where="test task")
    publisher.declare(stream)
    messages = [
        m._replace(filter_value="red" if i % 2 else None) for i, m in enumerate(rows(0, 10))
    ]
    publisher.publish(stream, messages)
    assert publisher.finish() == 10
    assert len(stored_messages(endpoints.stream, stream)) == 10


def test_a_stream_that_does_not_exist_is_named_with_the_brokers_code(
    client: CountingClient,
) -> None:
    publisher = StreamPublisher(client, NAME, max_in_flight=100, where="test task")
    with pytest.raises(
        StreamError,
        match=r"declaring publisher .* on stream 'no-such-stream' for test task: the broker "
        r"answered STREAM_DOES_NOT_EXIST \(0x02\)",
    ):
        publisher.declare("no-such-stream")


def test_a_message_larger_than_a_frame_is_refused_before_sending(
    client: CountingClient, stream: str
) -> None:
    publisher = StreamPublisher(client, NAME, max_in_flight=100, where="test task")
    publisher.declare(stream)
    huge = PublishedMessage(IDS.first, b"x" * client.frame_max)
    with pytest.raises(StreamPublishFailed, match="does not fit in a frame of 1048576 bytes"):
        publisher.publish(stream, [huge])
    assert client.publish_frames == []
