"""Super streams without a broker: the hash the sink routes by (RabbitMQ stream clients'
MurmurHash3), the options of both ends, and the typed offsets of the source."""

from __future__ import annotations

from dataclasses import replace

import pytest

from amqp_spark.options import OptionError
from amqp_spark.sink.settings import SinkSettings
from amqp_spark.sink.super_stream import hash_partition, murmur3_32
from amqp_spark.source.limits import Limits
from amqp_spark.source.offsets import OffsetError, StreamOffset, SuperStreamOffset, to_json
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.ranges import StreamTails

URI = "amqp://guest:guest@127.0.0.1:5672/%2F"


@pytest.mark.parametrize(
    ("data", "seed", "expected"),
    [
        # MurmurHash3 x86_32's published vectors
        (b"", 0, 0),
        (b"", 1, 0x514E28B7),
        (b"hello", 0, 0x248BFA47),
        (b"The quick brown fox jumps over the lazy dog", 0, 0x2E4FF723),
        # seed 104729, the stream clients' (values of the mmh3 package)
        (b"", 104729, 3329588566),
        (b"0", 104729, 2929165565),
        (b"amer", 104729, 1986258800),
        (b"hello", 104729, 1321743225),
        (b"customer-0", 104729, 1068022192),
    ],
)
def test_murmur3_gives_the_reference_hashes(data: bytes, seed: int, expected: int) -> None:
    assert murmur3_32(data, seed) == expected


def test_hash_routing_masks_the_sign_bit_as_the_java_client_does() -> None:
    """``""`` hashes to 3329588566, above 2^31: the Java client takes ``(h & 0x7FFFFFFF) %
    N`` (1182104918 % 3 = 2); the unsigned ``h % 3`` of the Go client would give 1."""
    assert (hash_partition("", 3), 3329588566 % 3) == (2, 1)
    assert [hash_partition(f"customer-{i}", 3) for i in range(6)] == [1, 2, 0, 1, 1, 2]


def test_the_sink_writes_through_the_super_streams_exchange_and_refuses_another() -> None:
    settings = SinkSettings.parse({"uri": URI, "superStream": "invoices"})
    assert (settings.exchange, settings.super_stream_routing) == ("invoices", "hash")
    with pytest.raises(OptionError, match="option 'exchange': got 'orders'"):
        SinkSettings.parse({"uri": URI, "superStream": "invoices", "exchange": "orders"})
    with pytest.raises(OptionError, match="'superStreamRouting'.*only with 'superStream'"):
        SinkSettings.parse({"uri": URI, "superStreamRouting": "key"})
    with pytest.raises(OptionError, match="got 'round-robin'; accepted: hash or key"):
        SinkSettings.parse({"uri": URI, "superStream": "s", "superStreamRouting": "round-robin"})


def test_super_stream_reads_are_stream_reads_of_one_source() -> None:
    options = SourceOptions.parse({"uri": URI, "superStream": "invoices"})
    assert (options.is_stream, options.queues, options.super_stream) == (True, (), "invoices")
    with pytest.raises(OptionError, match="'queue' is also set|'superStream' is also set"):
        SourceOptions.parse({"uri": URI, "superStream": "invoices", "queue": "q"})
    with pytest.raises(OptionError, match="option 'superStream'.*only with queueType 'stream'"):
        SourceOptions.parse({"uri": URI, "superStream": "invoices", "queueType": "classic"})
    with pytest.raises(OptionError, match="'managementUrl'.*only with 'superStream'"):
        SourceOptions.parse({"uri": URI, "queue": "q", "managementUrl": "http://h:15672"})


def test_super_stream_offsets_name_the_super_stream_and_sort_their_keys() -> None:
    offset = StreamOffset.of({"invoices-1": 4, "invoices-0": 7}, "invoices")
    assert isinstance(offset, SuperStreamOffset)
    assert to_json(offset) == (
        '{"kind": "superStream", "partitions": {"invoices-0": 7, "invoices-1": 4}, '
        '"superStream": "invoices"}'
    )
    assert StreamOffset.from_dict(offset.to_dict()) == offset
    with pytest.raises(OffsetError, match="not a super-stream offset"):
        StreamOffset.from_dict({"kind": "superStream", "partitions": {"a": -1}})


@pytest.mark.parametrize(
    ("held", "reads", "message"),
    [
        (StreamOffset({"q": 1}), {"superStream": "s"}, "offsets of stream queues but this query"),
        (SuperStreamOffset({"s-0": 1}, "s"), {"queue": "q"}, "offsets of 's' but this query"),
        (SuperStreamOffset({"t-0": 1}, "t"), {"superStream": "s"}, "reads super stream 's'"),
        (SuperStreamOffset({"s-0": 1, "s-9": 1}, "s"), {"superStream": "s"}, "now has"),
    ],
)
def test_a_checkpoint_of_another_stream_is_refused_before_reading(
    held: StreamOffset, reads: dict[str, str], message: str
) -> None:
    options = SourceOptions.parse({"uri": URI, "queueType": "stream", **reads})
    if options.super_stream is not None:  # as with_partitions leaves them
        options = replace(options, queues=("s-0",))
    with pytest.raises(OffsetError, match=message):
        StreamTails(options).latest(held, Limits(None, None))
