"""Super streams read whole and written by routing key, on the bundled broker and on RabbitMQ
4 (a private node with the management and stream plugins), with a real local Spark session.

The super streams are declared over AMQP 0-9-1 exactly as ``rabbitmq-streams
add_super_stream`` makes them (tests/management/test_streams_ctl.py shows the two layouts
are the same). The broker comes from ``tests.support.super_streams``: a cluster joins the
parameters there.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, Row, SparkSession

from amqp_spark.client import connect
from amqp_spark.options import OptionError
from amqp_spark.sink.super_stream import hash_partition
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.super_stream_micro_batch import with_partitions
from tests.spark.conftest import Queries
from tests.spark.inputs import bodies
from tests.support.super_streams import (
    SUPER_STREAM_BROKERS,
    SuperStreamBroker,
    declare_over_amqp,
    super_stream_broker,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: Messages published to partitions 0, 1 and 2: not the same, so a partition read twice or
#: left out shows in the counts.
PER_PARTITION = (12, 7, 5)


@pytest.fixture(scope="module", params=SUPER_STREAM_BROKERS)
def ss_broker(request: pytest.FixtureRequest) -> Iterator[SuperStreamBroker]:
    with super_stream_broker(request.param) as b:
        yield b


class SuperStream:
    """A super stream of the test on ``broker``, made over AMQP, removed at the end."""

    def __init__(self, broker: SuperStreamBroker, keys: list[str]) -> None:
        self.broker = broker
        self.name = f"ss-{uuid.uuid4().hex[:8]}"
        self.conn = connect(broker.url)
        self.ch = self.conn.channel()
        self.ch.confirm_select()
        self.keys = keys
        self.streams = declare_over_amqp(self.ch, self.name, keys)

    def publish(self, counts: tuple[int, ...], prefix: str = "m") -> list[bytes]:
        """``counts[i]`` messages through the exchange to partition ``i`` (by its binding
        key), confirmed; their bodies name the partition."""
        sent = []
        for index, count in enumerate(counts):
            for body in bodies(count, f"{prefix}{index}-"):
                self.ch.basic_publish(self.name, self.keys[index], body)
                sent.append(body)
        self.ch.wait_for_confirms(timeout=60)
        return sent

    def options(self, management: bool = True, **extra: str) -> dict[str, str]:
        opts = {"uri": self.broker.url, "superStream": self.name, **extra}
        if management:
            opts["managementUrl"] = self.broker.management_url
        return opts

    def close(self) -> None:
        self.conn.close()
        self.broker.delete(self.name)


@pytest.fixture
def super_stream(ss_broker: SuperStreamBroker) -> Iterator[SuperStream]:
    made = SuperStream(ss_broker, ["0", "1", "2"])
    yield made
    made.close()


@pytest.fixture
def keyed_super_stream(ss_broker: SuperStreamBroker) -> Iterator[SuperStream]:
    """A super stream as ``--routing-keys amer,emea,apac`` makes it."""
    made = SuperStream(ss_broker, ["amer", "emea", "apac"])
    yield made
    made.close()


def per_partition(rows: list[Row]) -> dict[str, list[tuple[int, bytes]]]:
    found: dict[str, list[tuple[int, bytes]]] = {}
    for row in sorted(rows, key=lambda r: (r.queue, r.offset)):
        found.setdefault(row.queue, []).append((row.offset, bytes(row.body)))
    return found


def batch_read(spark: SparkSession, options: dict[str, str]) -> list[Row]:
    return spark.read.format("amqp").options(**options).load().collect()


def test_a_batch_read_returns_every_message_of_all_partitions_once(
    amqp_spark: SparkSession, super_stream: SuperStream
) -> None:
    sent = super_stream.publish(PER_PARTITION)

    by_api = batch_read(amqp_spark, super_stream.options())
    by_naming = batch_read(amqp_spark, super_stream.options(management=False))

    for rows in (by_api, by_naming):
        assert sorted(bytes(r.body) for r in rows) == sorted(sent)
        found = per_partition(rows)
        assert list(found) == super_stream.streams
        for index, stream in enumerate(super_stream.streams):
            assert found[stream] == list(enumerate(bodies(PER_PARTITION[index], f"m{index}-"))), (
                stream
            )


def test_starting_offsets_apply_per_partition_or_to_all(
    amqp_spark: SparkSession, super_stream: SuperStream
) -> None:
    super_stream.publish(PER_PARTITION)
    first, second, third = super_stream.streams

    per_key = batch_read(
        amqp_spark,
        super_stream.options(startingOffsets=json.dumps({first: 9, third: "last"})),
    )
    everywhere = batch_read(amqp_spark, super_stream.options(startingOffsets="last"))

    assert {q: [o for o, _ in rows] for q, rows in per_partition(per_key).items()} == {
        first: [9, 10, 11],  # second is left out: it starts at next, so nothing
        third: [4],
    }
    assert {q: [o for o, _ in rows] for q, rows in per_partition(everywhere).items()} == {
        first: [11],
        second: [6],
        third: [4],
    }


def test_filter_values_filter_every_partition_as_one_stream(
    amqp_spark: SparkSession, super_stream: SuperStream
) -> None:
    for index, key in enumerate(super_stream.keys):
        for region in ("eu", "us", "eu"):
            headers = {"x-stream-filter-value": region}
            body = f"{region} in {index}".encode()
            super_stream.ch.basic_publish(
                super_stream.name, key, body, properties={"headers": headers}
            )
    super_stream.ch.wait_for_confirms(timeout=60)

    rows = batch_read(amqp_spark, super_stream.options(filterValues="us"))

    assert sorted((r.queue, bytes(r.body)) for r in rows) == [
        (stream, f"us in {index}".encode()) for index, stream in enumerate(super_stream.streams)
    ]


def test_available_now_reads_every_partition_and_a_restart_replays_exactly(
    queries: Queries, super_stream: SuperStream
) -> None:
    sent = super_stream.publish(PER_PARTITION)
    checkpoint = queries.checkpoint()
    opts = super_stream.options(startingOffsets="first", maxMessagesPerTrigger="8")
    by_batch: dict[int, list[bytes]] = {}  # an idempotent sink: a replayed batch overwrites
    failed: list[int] = []

    def dies_in_second_batch(df: DataFrame, batch_id: int) -> None:
        if batch_id == 1 and not failed:
            failed.append(batch_id)
            raise RuntimeError("killed mid-stream")
        by_batch[batch_id] = [bytes(r.body) for r in df.collect()]

    query = queries.start(opts, checkpoint, dies_in_second_batch)
    with pytest.raises(StreamingQueryException, match="killed mid-stream"):
        query.awaitTermination(180)
    query = queries.start(opts, checkpoint, dies_in_second_batch)
    assert query.awaitTermination(180)

    everything = [body for batch in by_batch.values() for body in batch]
    assert sorted(everything) == sorted(sent)  # every message once: no gap, no duplicate
    assert max(len(batch) for batch in by_batch.values()) <= 8
    offsets = (Path(checkpoint) / "offsets" / "0").read_text().splitlines()[-1]
    assert json.loads(offsets) == {
        "kind": "superStream",
        "superStream": super_stream.name,
        "partitions": {stream: 8 if i == 0 else 0 for i, stream in enumerate(super_stream.streams)},
    }
    parsed = json.loads(offsets)
    assert list(parsed) == sorted(parsed) and list(parsed["partitions"]) == super_stream.streams

    more = super_stream.publish((1, 2, 3), prefix="new")
    later, _ = queries.collect_available_now(opts, checkpoint)
    assert sorted(bytes(r.body) for r in later) == sorted(more)


def test_the_sink_routes_each_row_to_the_partition_rabbitmqs_stream_clients_choose(
    amqp_spark: SparkSession, super_stream: SuperStream
) -> None:
    keys = [f"customer-{i}" for i in range(60)]
    rows = [(key, f"order of {key}") for key in keys]
    df = amqp_spark.createDataFrame(rows, "routing_key string, body string")

    df.write.format("amqp").options(
        uri=super_stream.broker.url, superStream=super_stream.name
    ).mode("append").save()

    read = batch_read(amqp_spark, super_stream.options())
    where = {bytes(r.body).decode(): r.queue for r in read}
    assert len(read) == len(rows)
    assert where == {body: super_stream.streams[hash_partition(key, 3)] for key, body in rows}
    # The Java stream client's choices for these keys (MurmurHash3, seed 104729; the hashes
    # were checked against the mmh3 package): the same on every broker.
    assert [where[f"order of customer-{i}"][-1] for i in range(6)] == list("120112")
    assert set(Counter(where.values())) == set(super_stream.streams)
    # over AMQP 0-9-1 the routing key that chose the partition is its binding key
    assert {r.routing_key for r in read if r.queue == super_stream.streams[1]} == {"1"}


def test_key_routing_sends_each_row_to_the_partition_bound_with_its_key(
    amqp_spark: SparkSession, keyed_super_stream: SuperStream
) -> None:
    rows = [("emea", "a"), ("amer", "b"), ("apac", "c"), ("emea", "d")]
    sink = {
        "uri": keyed_super_stream.broker.url,
        "superStream": keyed_super_stream.name,
        "superStreamRouting": "key",
        "managementUrl": keyed_super_stream.broker.management_url,
    }
    df = amqp_spark.createDataFrame(rows, "routing_key string, body string")
    df.write.format("amqp").options(**sink).mode("append").save()

    read = batch_read(amqp_spark, keyed_super_stream.options())
    assert sorted((r.queue, bytes(r.body).decode()) for r in read) == sorted(
        (f"{keyed_super_stream.name}-{key}", body) for key, body in rows
    )
    unknown = amqp_spark.createDataFrame([("us-east", "x")], "routing_key string, body string")
    with pytest.raises(Exception, match="routing key 'us-east', which is no binding key"):
        unknown.write.format("amqp").options(**sink).mode("append").save()


def test_a_super_stream_made_with_routing_keys_needs_the_management_api_to_be_found(
    keyed_super_stream: SuperStream,
) -> None:
    """Its partitions are not named ``<name>-0``...: naming alone cannot find them, and the
    error says what to set; the management API finds them in partition order."""
    options = SourceOptions.parse(keyed_super_stream.options(management=False))
    with pytest.raises(OptionError, match="set 'managementUrl'"):
        with_partitions(options)
    found = with_partitions(SourceOptions.parse(keyed_super_stream.options()))
    assert found.queues == tuple(keyed_super_stream.streams)


def test_unknown_partitions_in_starting_offsets_are_refused_naming_the_partitions(
    super_stream: SuperStream,
) -> None:
    options = SourceOptions.parse(super_stream.options(startingOffsets='{"elsewhere-0": 1}'))
    with pytest.raises(OptionError, match=r"unknown queues \['elsewhere-0'\]"):
        with_partitions(options)
