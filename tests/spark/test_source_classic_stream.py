"""``spark.readStream.format("amqp")`` over classic queues: at-least-once, acks only after
Spark committed, bounded batches; run against the bundled broker and RabbitMQ alike."""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, Row, SparkSession

from amqp_spark.schema import spark_schema
from testbed.waiting import wait_until
from tests.spark.broker_state import ready_once_unconsumed
from tests.spark.conftest import Broker, Queries, RestartableBroker
from tests.spark.inputs import bodies
from tests.spark.inputs import classic_options as options
from tests.spark.killed_driver import run_until_killed
from tests.spark.progress import as_dict
from tests.spark.recording_proxy import CONNECTION_CLOSE, RecordingProxy

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_published_messages_read_back_as_exactly_those_rows_with_every_column(
    broker: Broker, queries: Queries, amqp_spark: SparkSession
) -> None:
    queue = broker.new_queue()
    props = {
        "content_type": "application/json",
        "content_encoding": "utf-8",
        "delivery_mode": 2,
        "priority": 3,
        "correlation_id": "corr",
        "reply_to": "replies",
        "expiration": "600000",
        "type": "order",
        "user_id": "guest",
        "app_id": "tests",
        "timestamp": 1_700_000_000,
    }
    n = 25
    for i, body in enumerate(bodies(n)):
        headers = {"i": i, "flag": True, "who": "x"}
        broker.publish(
            queue, [body], properties={**props, "message_id": str(i), "headers": headers}
        )

    rows, _ = queries.collect_available_now(options(broker, queue))

    moment = datetime.datetime.fromtimestamp(1_700_000_000, datetime.timezone.utc)
    expected = [
        Row(
            body=body,
            routing_key=queue,
            exchange="",
            queue=queue,
            delivery_tag=i + 1,
            redelivered=False,
            offset=None,
            timestamp=moment,
            content_type="application/json",
            content_encoding="utf-8",
            delivery_mode=2,
            priority=3,
            correlation_id="corr",
            reply_to="replies",
            expiration="600000",
            message_id=str(i),
            type="order",
            user_id="guest",
            app_id="tests",
            headers={"i": str(i), "flag": "true", "who": "x"},
        )
        for i, body in enumerate(bodies(n))
    ]
    schema = spark_schema()
    actual_df = amqp_spark.createDataFrame(rows, schema).orderBy("delivery_tag")
    expected_df = amqp_spark.createDataFrame(expected, schema).orderBy("delivery_tag")
    assert_df_equality(actual_df, expected_df)


def test_available_now_bounds_batches_empties_the_queue_and_next_run_reads_nothing(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(30))
    checkpoint = queries.checkpoint()
    opts = options(broker, queue, maxMessagesPerTrigger="7")

    rows, sizes = queries.collect_available_now(opts, checkpoint)

    assert sorted(r.body for r in rows) == bodies(30)
    assert sizes and max(sizes) <= 7
    assert broker.wait_ready(queue, 0, timeout=3) == 0
    again, _ = queries.collect_available_now(opts, checkpoint)
    assert again == []
    assert broker.ready(queue) == 0, "the last batch was not acked"


def test_without_limits_a_batch_takes_at_most_half_the_prefetch(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(30))

    rows, sizes = queries.collect_available_now(options(broker, queue, prefetch="10"))

    assert sorted(r.body for r in rows) == bodies(30)
    assert sizes and max(sizes) <= 5


def test_connections_close_with_connection_close_when_the_query_stops(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(5))
    with RecordingProxy(broker.url) as proxy:
        query = queries.start(
            {"uri": proxy.url, "queue": queue},
            queries.checkpoint(),
            lambda df, _: None,
            trigger={"processingTime": "500 milliseconds"},
        )
        wait_until(lambda: query.lastProgress is not None, 90, "the query to start")
        query.stop()
        ready_once_unconsumed(broker, queue)  # its connection is closed by then
        endings = [methods[-1] for methods in proxy.methods_sent() if methods]

    assert endings, "the query opened no connection through the proxy"
    assert {(m.class_id, m.method_id) for m in endings} == {CONNECTION_CLOSE}


def test_max_bytes_per_trigger_bounds_every_batch(broker: Broker, queries: Queries) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(20))  # 6 bytes each

    rows, sizes = queries.collect_available_now(options(broker, queue, maxBytesPerTrigger="30"))

    assert len(rows) == 20
    assert max(sizes) <= 5


def test_messages_stay_unacked_until_spark_commits_the_batch(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(12))
    checkpoint = queries.checkpoint()
    seen_ready: list[int] = []

    def failing_sink(df: DataFrame, batch_id: int) -> None:
        seen_ready.append(broker.ready(queue))  # mid-batch: held by the source, unacked
        raise RuntimeError("sink fails before the batch is committed")

    query = queries.start(options(broker, queue), checkpoint, failing_sink)
    with pytest.raises(StreamingQueryException, match="sink fails"):
        query.awaitTermination(120)

    assert seen_ready == [0]
    assert broker.wait_ready(queue, 12) == 12, "a failed batch must leave its messages queued"
    rows, _ = queries.collect_available_now(options(broker, queue), checkpoint)
    assert sorted(r.body for r in rows) == bodies(12)
    assert all(r.redelivered for r in rows)
    assert broker.wait_ready(queue, 0, timeout=3) == 0


def test_acks_go_out_when_no_new_message_arrives(broker: Broker, queries: Queries) -> None:
    queue = broker.new_queue()
    got: list[Row] = []
    query = queries.start(
        options(broker, queue),
        queries.checkpoint(),
        lambda df, _: got.extend(df.collect()),
        trigger={"processingTime": "500 milliseconds"},
    )
    broker.publish(queue, bodies(10))
    wait_until(lambda: len(got) == 10, 90, "10 rows")
    time.sleep(2)  # a few idle triggers, no new message

    query.stop()  # closes the connection: anything unacked would be requeued now

    assert broker.wait_ready(queue, 10, timeout=3) == 0


def test_query_killed_mid_stream_restarts_from_checkpoint_without_loss(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(40))
    checkpoint = queries.checkpoint()
    opts = options(broker, queue, maxMessagesPerTrigger="10")
    delivered: list[bytes] = []

    def dies_in_third_batch(df: DataFrame, batch_id: int) -> None:
        if batch_id == 2:
            raise RuntimeError("killed mid-stream")
        delivered.extend(r.body for r in df.collect())

    query = queries.start(opts, checkpoint, dies_in_third_batch)
    with pytest.raises(StreamingQueryException, match="killed mid-stream"):
        query.awaitTermination(120)
    rows, _ = queries.collect_available_now(opts, checkpoint)

    delivered.extend(r.body for r in rows)
    assert set(delivered) == set(bodies(40))
    assert broker.wait_ready(queue, 0, timeout=3) == 0


def test_several_queues_in_one_query(broker: Broker, queries: Queries) -> None:
    a, b = broker.new_queue(), broker.new_queue()
    broker.publish(a, bodies(5, "a"))
    broker.publish(b, bodies(7, "b"))

    rows, _ = queries.collect_available_now(options(broker, f"{a},{b}"))

    assert sorted((r.queue, r.body) for r in rows) == sorted(
        [(a, x) for x in bodies(5, "a")] + [(b, x) for x in bodies(7, "b")]
    )


def test_exchange_with_binding_keys_reads_through_a_server_named_queue(
    broker: Broker, queries: Queries
) -> None:
    exchange = f"ex-{broker.new_queue()}"
    broker.ch.exchange_declare(exchange, "topic", auto_delete=False)
    got: list[Row] = []
    query = queries.start(
        {"uri": broker.url, "exchange": exchange, "bindingKeys": "orders.*,refunds.eu"},
        queries.checkpoint(),
        lambda df, _: got.extend(df.collect()),
        trigger={"processingTime": "500 milliseconds"},
    )
    try:
        wait_until(lambda: query.lastProgress is not None, 90, "the query to start")
        for key in ("orders.eu", "refunds.eu", "refunds.us", "orders.us"):
            broker.publish(key, [key.encode()], exchange=exchange)
        wait_until(lambda: len(got) >= 3, 60, "3 rows")
        time.sleep(1)
    finally:
        query.stop()
        broker.ch.exchange_delete(exchange)

    assert sorted(r.routing_key for r in got) == ["orders.eu", "orders.us", "refunds.eu"]
    assert {r.exchange for r in got} == {exchange}


def test_last_progress_shows_latest_offset_and_messages_waiting(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(9))
    # A window of all 9 from the start (the default one starts at one message and grows,
    # so the depth asked when consuming starts would find the others still ready).
    query = queries.start(
        options(broker, queue, prefetch="100"), queries.checkpoint(), lambda df, _: None
    )
    assert query.awaitTermination(120)

    progress = query.lastProgress
    assert progress is not None
    source = progress["sources"][0]
    assert as_dict(source["endOffset"])["deliveryTags"] == {queue: 9}
    waiting = as_dict(source["latestOffset"])["messagesWaiting"][queue]
    assert waiting["unacked"] == 9  # as planned: all in the batch, unacked
    # Asked when consuming started, answered behind the deliveries: 0, or not in yet.
    assert waiting["ready"] in (0, None)


def test_messages_waiting_shows_the_backlog_still_ready_on_the_broker(
    broker: Broker, queries: Queries
) -> None:
    """``ready`` is the broker's count as of its last answer (asked once a second, never
    waited for): with a window of 10 over a backlog of 60, it shows the backlog shrink."""
    queue = broker.new_queue()
    broker.publish(queue, bodies(60))
    reports: list[dict[str, int | None]] = []

    def waiting() -> dict[str, int | None] | None:
        progress = query.lastProgress
        if progress is None:
            return None
        report = as_dict(progress["sources"][0]["latestOffset"])["messagesWaiting"][queue]
        reports.append(report)
        return report

    query = queries.start(
        {**options(broker, queue), "prefetch": "10", "maxMessagesPerTrigger": "5"},
        queries.checkpoint(),
        lambda df, _: time.sleep(0.3),
        trigger={"processingTime": "200 milliseconds"},
    )
    try:
        wait_until(lambda: waiting() == {"ready": 0, "unacked": 0}, 120, "the backlog drained")
    finally:
        query.stop()

    backlog = [r["ready"] for r in reports if r["ready"]]
    assert backlog, f"no report showed messages ready on the broker: {reports}"
    assert max(backlog) <= 50  # the window of 10 was out from the start
    assert backlog == sorted(backlog, reverse=True)  # nothing published meanwhile


def test_unreachable_broker_fails_the_query_with_a_clear_error(queries: Queries) -> None:
    from testbed.ports import free_port

    uri = f"amqp://guest:secret@127.0.0.1:{free_port()}/%2F"
    query = queries.start(
        {"uri": uri, "queue": "q", "maxReconnectAttempts": "1"}, queries.checkpoint(), print
    )
    with pytest.raises(StreamingQueryException, match="cannot connect to amqp://guest:\\*\\*\\*@"):
        query.awaitTermination(120)


def test_bad_option_fails_at_load_naming_option_and_value(amqp_spark: SparkSession) -> None:
    reader = amqp_spark.readStream.format("amqp").options(
        uri="amqp://127.0.0.1", queue="q", maxMessagesPerTrigger="zero"
    )
    with pytest.raises(Exception, match="maxMessagesPerTrigger.*'zero'.*an integer >= 1"):
        reader.load()


def test_driver_process_killed_mid_stream_loses_nothing_after_restart(
    broker: Broker, queries: Queries, tmp_path: Path
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(60))
    checkpoint = queries.checkpoint()

    written = run_until_killed(
        options(broker, queue, maxMessagesPerTrigger="10"), checkpoint, tmp_path / "out"
    )
    # The killed connection's unacked messages are back once its consumers are gone (read
    # earlier, the AvailableNow run below would take too few: it reads the depth at start).
    ready_once_unconsumed(broker, queue)
    rows, _ = queries.collect_available_now(options(broker, queue), checkpoint)

    before = {body for batch in written.values() for body in batch}
    assert before | {r.body for r in rows} == set(bodies(60))
    assert ready_once_unconsumed(broker, queue) == 0


def test_broker_restart_mid_query_is_survived_without_loss(
    queries: Queries, restartable_broker: RestartableBroker
) -> None:
    broker = restartable_broker.broker
    queue = broker.new_queue(durable=True)
    persistent = {"delivery_mode": 2}
    broker.publish(queue, bodies(20, "before"), properties=persistent)
    got: list[bytes] = []
    query = queries.start(
        options(broker, queue, maxMessagesPerTrigger="5"),
        queries.checkpoint(),
        lambda df, _: got.extend(r.body for r in df.collect()),
        trigger={"processingTime": "500 milliseconds"},
    )
    wait_until(lambda: len(got) >= 5, 90, "the first batch")

    restartable_broker.restart()
    broker.publish(queue, bodies(20, "after"), properties=persistent)
    everything = set(bodies(20, "before")) | set(bodies(20, "after"))
    wait_until(lambda: everything <= set(got), 90, "every message after the restart")
    assert query.isActive
    time.sleep(2)  # idle triggers: the last batch is committed, then acked
    query.stop()

    assert broker.wait_ready(queue, 0, timeout=3) == 0


def test_prefetch_above_one_consumers_limit_is_shared_by_consumers_of_one_channel(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(50))
    consumers: list[int] = []
    rows: list[Row] = []

    def sink(df: DataFrame, batch_id: int) -> None:
        consumers.append(broker.ch.queue_declare(queue, passive=True).consumer_count)
        rows.extend(df.collect())

    query = queries.start(options(broker, queue, prefetch="70000"), queries.checkpoint(), sink)
    assert query.awaitTermination(120)

    assert consumers == [2]  # 70000 > 65535: two consumers of 35000 each
    assert sorted(r.body for r in rows) == bodies(50)
    assert [r.delivery_tag for r in sorted(rows, key=lambda r: r.delivery_tag)] == list(
        range(1, 51)
    )  # one channel: one sequence of tags, acked as one
    assert broker.wait_ready(queue, 0, timeout=3) == 0
