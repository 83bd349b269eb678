"""Batch reads (``spark.read``) of stream queues over RabbitMQ's stream protocol, on the
bundled broker and RabbitMQ 4, without Spark: the batch reader plans stream-protocol ranges
from ``startingOffsets`` (``first``) to ``endingOffsets`` and its ``read`` gives the rows the
AMQP 0-9-1 ranges give."""

from __future__ import annotations

import json
from typing import Any

from amqp_spark.source.batch import AMQPBatchReader
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import StreamProtocolRangePartition, StreamRangePartition
from tests.stream_source.streams import stream_of

MESSAGES = 50
END = 35


def batch_read(
    stream_urls: tuple[str, str], queue: str, protocol: str
) -> tuple[list[type], list[dict[str, Any]]]:
    """The partitions' kinds and the rows (but the delivery tag), in offset order."""
    url, stream_uri = stream_urls
    given = {
        "uri": url,
        "streamUri": stream_uri,
        "streamProtocol": protocol,
        "queue": queue,
        "queueType": "stream",
        "endingOffsets": json.dumps({queue: END}),
        "rowsPerPartition": "10",
        "pollTimeoutMs": "300",
    }
    reader = AMQPBatchReader(SourceOptions.parse(given))
    parts = reader.partitions()
    rows = [row for part in parts for batch in reader.read(part) for row in batch.to_pylist()]
    for row in rows:
        del row["delivery_tag"]
    return [type(part) for part in parts], sorted(rows, key=lambda row: row["offset"])


def test_a_batch_read_over_the_stream_protocol_gives_the_rows_of_amqp_0_9_1(
    stream_urls: tuple[str, str],
) -> None:
    messages = [
        (f"body-{i}".encode(), {"delivery_mode": 2, "message_id": f"m{i}", "headers": {"i": i}})
        for i in range(MESSAGES)
    ]
    with stream_of(stream_urls[0], messages) as queue:
        kinds, over_protocol = batch_read(stream_urls, queue, "stream")
        amqp_kinds, over_amqp = batch_read(stream_urls, queue, "amqp")

    assert kinds == [StreamProtocolRangePartition] * 4
    assert set(amqp_kinds) == {StreamRangePartition}
    first = over_protocol[0]["offset"]  # 0 on the brokers tested; newer RabbitMQ may differ
    assert [row["offset"] for row in over_protocol] == list(range(first, END))
    bodies = [f"body-{i}".encode() for i in range(END - first)]
    assert [row["body"] for row in over_protocol] == bodies
    assert over_protocol == over_amqp
