"""Quorum queues' delivery limit (RabbitMQ 4: 20 by default): the source says at start that
a quorum queue it reads drops or dead-letters messages returned too often, and counts the
returns (redelivered deliveries) in its progress report. Runner-side, in this process."""

from __future__ import annotations

import logging

import pytest

from amqp_spark.source.classic.delivery_limit import delivery_limit_warning
from tests.spark.conftest import Broker, ReaderFactory
from tests.spark.inputs import bodies
from tests.spark.test_source_classic_runner import offset_reaching


def test_a_failed_run_returns_its_batch_and_the_next_run_reports_the_returns(
    broker: Broker, runner_reader_of: ReaderFactory, caplog: pytest.LogCaptureFixture
) -> None:
    queue = broker.new_queue(arguments={"x-queue-type": "quorum"}, durable=True)
    broker.publish(queue, bodies(3))
    with caplog.at_level(logging.WARNING, logger="amqp_spark.source"):
        failed, _ = runner_reader_of(queue=queue, queueType="quorum", prefetch="100")
        start = failed.initialOffset()
        offset_reaching(failed, start, {queue: 3}, rows=100)
    first_report = failed.reportLatestOffset()
    failed.stop()  # the run dies before Spark committed: the broker gets the batch back

    again, _ = runner_reader_of(queue=queue, queueType="quorum", prefetch="100")
    offset_reaching(again, again.initialOffset(), {queue: 3}, rows=100)

    assert first_report is not None and first_report["redelivered"] == {queue: 0}
    report = again.reportLatestOffset()
    assert report is not None and report["redelivered"] == {queue: 3}
    warnings = [r.getMessage() for r in caplog.records if "quorum queue" in r.getMessage()]
    assert len(warnings) == 2, "once per run"
    assert f"quorum queue(s) '{queue}'" in warnings[0]
    assert "delivery limit" in warnings[0] and "dead-letter exchange" in warnings[0]


def test_a_classic_queue_gets_no_delivery_limit_warning(
    broker: Broker, runner_reader_of: ReaderFactory, caplog: pytest.LogCaptureFixture
) -> None:
    queue = broker.new_queue()
    with caplog.at_level(logging.WARNING, logger="amqp_spark.source"):
        reader, _ = runner_reader_of(queue=queue)
        reader.initialOffset()

    assert not [r for r in caplog.records if "delivery limit" in r.getMessage()]


@pytest.mark.parametrize(
    ("product", "version", "says"),
    [
        ("RabbitMQ", "4.0.5", "gives a quorum queue a delivery limit of 20 unless"),
        ("amqp-spark broker", "0.1.0", "gives a quorum queue a delivery limit of 20 unless"),
        ("RabbitMQ", "3.10.8", "applies a delivery limit only where x-delivery-limit"),
    ],
)
def test_the_warning_says_whether_the_broker_limits_by_default(
    product: str, version: str, says: str
) -> None:
    text = delivery_limit_warning(["orders"], {"product": product, "version": version.encode()})

    assert f"quorum queue(s) 'orders': {product} {version} {says}" in text
    assert "delivery-limit of -1" in text
