"""A queue the source cannot read as asked fails the query at start with an error naming the
option, the value and what is accepted, and takes no message: a missing queue (the source
declares none), a classic queue read with ``queueType`` 'stream'."""

from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException

from amqp_spark.options import OptionError
from tests.spark.broker_state import ready_once_unconsumed
from tests.spark.conftest import Broker, Queries, ReaderFactory
from tests.spark.inputs import bodies, classic_options

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_streaming_query_on_a_missing_queue_fails_naming_option_and_queue(
    broker: Broker, queries: Queries
) -> None:
    present = broker.new_queue()
    query = queries.start(
        classic_options(broker, f"{present},no-such-queue"), queries.checkpoint(), print
    )

    with pytest.raises(StreamingQueryException) as failure:
        query.awaitTermination(120)
    assert "amqp option 'queue': got 'no-such-queue'" in str(failure.value)
    assert "queues that exist on the broker" in str(failure.value)


def test_classic_queue_read_as_a_stream_fails_naming_queue_type_and_keeps_its_messages(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(5))
    reader, _ = runner_reader_of(queue=queue, queueType="stream")

    with pytest.raises(OptionError) as failure:
        reader.initialOffset()
    reader.stop()

    assert failure.value.option == "queueType"
    assert f"queue {queue!r} is not a stream queue" in str(failure.value)
    assert ready_once_unconsumed(broker, queue) == 5
