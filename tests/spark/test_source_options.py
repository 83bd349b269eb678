"""Every bad source option fails with a message naming the option, the value and what is
accepted; good ones parse to what the documentation says."""

from __future__ import annotations

import datetime

import pytest

from amqp_spark.options import OptionError
from amqp_spark.source.classic.classic_micro_batch import ClassicMicroBatchReader
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.reader_choice import micro_batch_reader
from amqp_spark.source.stream_queues import starting
from amqp_spark.source.stream_queues.stream_queue_micro_batch import StreamQueueMicroBatchReader

URI = "amqp://guest:secret@127.0.0.1:5672/%2F"


def parse(**options: str) -> SourceOptions:
    return SourceOptions.parse({"uri": URI, **{k.lower(): v for k, v in options.items()}})


@pytest.mark.parametrize(
    ("options", "named", "fragment"),
    [
        ({"queue": "q", "uri": "http://x"}, "uri", "amqp://"),
        ({"queue": "q", "prefetch": "ten"}, "prefetch", "an integer >= 1"),
        ({"queue": "q", "prefetch": "2000000"}, "prefetch", "<= 1048560"),
        ({"queue": "q", "maxMessagesPerTrigger": "0"}, "maxMessagesPerTrigger", ">= 1"),
        ({"queue": "q", "maxBytesPerTrigger": "-5"}, "maxBytesPerTrigger", ">= 1"),
        ({"queue": "q", "queueType": "lifo"}, "queueType", "classic or quorum or stream"),
        ({"exchange": "x", "queueType": "quorum"}, "exchange", "queueType 'classic'"),
        ({"queue": "a,,b"}, "queue", "comma-separated"),
        ({}, "queue", "exactly one of 'queue'"),
        ({"queue": "q", "exchange": "x"}, "queue", "'exchange' is also set"),
        ({"queue": "q", "bindingKeys": "k"}, "bindingKeys", "only with 'exchange'"),
        ({"queue": "q", "maxMessagesPerTriger": "5"}, "maxmessagespertriger", "did you mean"),
        ({"queue": "q", "startingOffsets": "first"}, "startingOffsets", "queueType 'stream'"),
        ({"queue": "q", "filterValues": "eu"}, "filterValues", "queueType 'stream'"),
        (
            {"queue": "s", "queueType": "stream", "matchUnfiltered": "true"},
            "matchUnfiltered",
            "only with 'filterValues'",
        ),
        ({"queue": "s", "queueType": "stream", "filterValues": "eu,"}, "filterValues", "names"),
        ({"queue": "q", "endingOffsets": "next"}, "endingOffsets", "queueType 'stream'"),
        ({"exchange": "x", "queueType": "stream"}, "exchange", "queueType 'classic'"),
        (
            {"queue": "s", "queueType": "stream", "startingOffsets": "earliest"},
            "startingOffsets",
            "'first', 'last', 'next'",
        ),
        (
            {"queue": "s", "queueType": "stream", "startingOffsets": '{"s": -1}'},
            "startingOffsets",
            "JSON object",
        ),
        (
            {"queue": "s", "queueType": "stream", "startingOffsets": '{"other": 1}'},
            "startingOffsets",
            "unknown queues ['other']",
        ),
        (
            {"queue": "s", "queueType": "stream", "endingOffsets": "last"},
            "endingOffsets",
            "'next'",
        ),
        ({"queue": "q", "ackBatchReads": "maybe"}, "ackBatchReads", "true or false"),
        ({"queue": "q", "pollTimeoutMs": "0"}, "pollTimeoutMs", ">= 1"),
        ({"queue": "q", "maxReconnectAttempts": "101"}, "maxReconnectAttempts", "<= 100"),
        ({"queue": "q", "rowsPerPartition": "many"}, "rowsPerPartition", "an integer >= 1"),
        ({"queue": "q", "exchange": ""}, "exchange", "a non-empty string"),
        ({"queue": "q", "uri": "amqp://h/?heartbeat=soon"}, "uri", "'soon' is not an integer"),
        ({"queue": "q", "uri": "amqp://h/?hearbeat=5"}, "uri", "unknown URL query parameter"),
        ({"queue": "q", "uri": "amqp://u:secret@h:99999/"}, "uri", "amqp://"),
        (
            {"queue": "s", "queueType": "stream", "startingOffsets": "2024-13-45"},
            "startingOffsets",
            "ISO-8601 timestamp",
        ),
        (
            {"queue": "s", "queueType": "stream", "endingOffsets": '{"s": "first"}'},
            "endingOffsets",
            "exclusive end offsets",
        ),
        (
            {"queue": "s", "queueType": "stream", "endingOffsets": '{"t": 5}'},
            "endingOffsets",
            "unknown queues ['t']",
        ),
    ],
)
def test_bad_option_names_option_value_and_accepted(
    options: dict[str, str], named: str, fragment: str
) -> None:
    with pytest.raises(OptionError) as caught:
        parse(**options)
    assert caught.value.option == named
    assert fragment in str(caught.value)
    assert "secret" not in str(caught.value)


def test_missing_uri_is_refused() -> None:
    with pytest.raises(OptionError, match="'uri'.*required"):
        SourceOptions.parse({"queue": "q"})


def test_options_are_case_insensitive_and_defaults_apply() -> None:
    opts = SourceOptions.parse({"URI": URI, "Queue": "a, b", "MAXMESSAGESPERTRIGGER": "7"})
    assert opts.queues == ("a", "b")
    assert opts.max_messages_per_trigger == 7
    assert (opts.queue_type, opts.prefetch, opts.ack_batch_reads) == ("classic", 10000, False)


def test_quorum_queues_are_read_as_classic_ones() -> None:
    opts = parse(queue="orders", queueType="Quorum")
    assert (opts.queue_type, opts.is_stream) == ("quorum", False)
    assert isinstance(micro_batch_reader(opts), ClassicMicroBatchReader)


def test_exchange_defaults_to_binding_everything() -> None:
    opts = parse(exchange="events")
    assert (opts.queues, opts.exchange, opts.binding_keys) == ((), "events", ("#",))


def test_starting_offsets_forms() -> None:
    def start(value: str) -> object:
        return parse(queue="s,t", queueType="stream", startingOffsets=value).start_of("s")

    assert start("FIRST") == starting.First()
    assert start(" last ") == starting.Last()
    assert start("2024-05-01T12:00:00Z") == starting.At(
        datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.timezone.utc)
    )
    assert start("2024-05-01T12:00:00") == start("2024-05-01T12:00:00+00:00")  # UTC if naive
    per_queue = parse(queue="s,t", queueType="stream", startingOffsets='{"s": 42}')
    assert (per_queue.start_of("s"), per_queue.start_of("t")) == (
        starting.Exactly(42),
        starting.Next(),
    )


def test_starting_offsets_default_to_next_and_stream_reads_to_their_own_queue_type() -> None:
    assert parse(queue="s", queueType="stream").start_of("s") == starting.Next()
    reader = micro_batch_reader(parse(queue="s", queueType="stream"))
    assert isinstance(reader, StreamQueueMicroBatchReader)


@pytest.mark.parametrize(
    "value",
    [
        starting.First(),
        starting.Last(),
        starting.Next(),
        starting.At(datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc)),
        starting.Offsets(
            {
                "s": starting.Exactly(42),
                "t": starting.First(),
                "u": starting.At(datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)),
            }
        ),
    ],
)
def test_starting_offsets_json_form_parses_back_to_the_same_value(
    value: starting.StartingOffsets,
) -> None:
    text = starting.to_json(value)
    assert parse(queue="s,t,u", queueType="stream", startingOffsets=text).starting_offsets == value


def test_starting_offsets_json_form_of_per_queue_offsets_is_a_sorted_object() -> None:
    value = starting.Offsets({"t": starting.Next(), "s": starting.Exactly(7)})
    assert starting.to_json(value) == '{"s": 7, "t": "next"}'


def test_ending_offsets_per_queue() -> None:
    opts = parse(queue="s", queueType="stream", endingOffsets='{"s": 100}')
    assert opts.ending_offsets == {"s": 100}
