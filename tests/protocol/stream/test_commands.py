"""The generated stream-protocol commands: byte for byte what RabbitMQ 4.0.5 and rstream
exchange, round trips of every command, and malformed frames refused with their code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp_protocol.generated import stream as commands
from amqp_protocol.generated.stream import (
    BY_KEY_VERSION,
    COMMANDS,
    Broker,
    CommandVersion,
    Deliver,
    DeliverV2,
    PublishingError,
    StreamMetadata,
)
from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_protocol.stream.chunk import (
    Compression,
    SubBatch,
    SubBatchEntry,
    build_chunk,
    delivered_parts,
    encode_sub_batch,
    parse_chunk,
)
from amqp_protocol.stream.command import Command
from amqp_protocol.stream.errors import MalformedFrame
from amqp_protocol.stream.frames import decode_frame, deliver_prefix
from amqp_protocol.stream.values import OffsetSpecification, OffsetType, PublishedMessage

CAPTURED = json.loads((Path(__file__).parent / "rabbitmq_4_frames.json").read_text())
FRAMES = [(f["from"], bytes.fromhex(f["hex"])) for f in CAPTURED["frames"]]


def test_captured_frames_come_from_rabbitmq_4() -> None:
    assert CAPTURED["server_version"].startswith("4.0.")
    names = {decode_frame(memoryview(frame)[4:]).NAME for _, frame in FRAMES}
    assert {"Deliver", "PublishV2", "MetadataUpdate", "Tune", "OpenResponse"} <= names


@pytest.mark.parametrize(("sender", "frame"), FRAMES, ids=lambda v: v if isinstance(v, str) else "")
def test_captured_frame_decodes_and_encodes_back_byte_for_byte(sender: str, frame: bytes) -> None:
    command = decode_frame(memoryview(frame)[4:])
    assert command.FROM in (sender, "both")
    assert command.encode() == frame


def test_captured_deliver_chunks_hold_what_rstream_published() -> None:
    records = []
    for _, frame in FRAMES:
        command = decode_frame(memoryview(frame)[4:])
        if isinstance(command, Deliver):
            chunk = parse_chunk(command.chunk, check_crc=True)
            records += [bytes(r) for r in chunk.records()]
    assert records[0] == b"first"
    assert b"sub-a" in records and b"sub-b" in records and b"filtered" in records
    # rstream's AMQP 1.0 messages end with their data section: the gzip sub-batch's too.
    assert [r for r in records if r.endswith((b"gz-1", b"gz-2"))] != []


def test_deliver_prefix_and_a_stored_chunks_parts_make_a_deliver_frame() -> None:
    stored = build_chunk([b"a", b"bc"], first_offset=5, timestamp=1, bloom=b"\0" * 16)
    header, data = delivered_parts(stored)
    for committed, cls in ((None, Deliver), (9, DeliverV2)):
        frame = deliver_prefix(3, len(header) + len(data), committed) + header + data
        command = decode_frame(memoryview(frame)[4:])
        assert isinstance(command, cls) and command.subscription_id == 3
        assert [bytes(r) for r in parse_chunk(command.chunk).records()] == [b"a", b"bc"]
    assert decode_frame(memoryview(frame)[4:]).committed_chunk_id == 9  # type: ignore[attr-defined]


SAMPLES: dict[str, dict[str, Any]] = {
    "DeclarePublisher": dict(correlation_id=1, publisher_id=2, publisher_reference="p", stream="s"),
    "Publish": dict(
        publisher_id=1,
        messages=[
            PublishedMessage(1, b"one"),
            PublishedMessage(
                2, SubBatchEntry(0, 2, 8, encode_sub_batch(SubBatch([b"ab", b"cd"]))[11:])
            ),
        ],
    ),
    "PublishV2": dict(publisher_id=1, messages=[PublishedMessage(7, b"m", "red")]),
    "PublishConfirm": dict(publisher_id=1, publishing_ids=[1, 2, 2**64 - 1]),
    "PublishError": dict(publisher_id=1, errors=[PublishingError(3, 18)]),
    "QueryPublisherSequenceResponse": dict(correlation_id=1, response_code=1, sequence=42),
    "Subscribe": dict(
        correlation_id=1,
        subscription_id=0,
        stream="s",
        offset_specification=OffsetSpecification(OffsetType.TIMESTAMP, -5),
        credit=10,
        properties={"filter.0": "red"},
    ),
    "Deliver": dict(subscription_id=1, chunk=build_chunk([b"x"], first_offset=0, timestamp=0)),
    "DeliverV2": dict(subscription_id=1, committed_chunk_id=8, chunk=b""),
    "MetadataResponse": dict(
        correlation_id=1,
        brokers=[Broker(0, "127.0.0.1", 5552)],
        streams_metadata=[StreamMetadata("s", 1, 0, [0, 1]), StreamMetadata("t", 2, 0xFFFF, [])],
    ),
    "SaslAuthenticateResponse": dict(correlation_id=1, response_code=10, challenge=b"more"),
    "ConsumerUpdate": dict(correlation_id=3, subscription_id=1, active=True),
    "ConsumerUpdateResponse": dict(
        correlation_id=3, response_code=1, offset_specification=OffsetSpecification(4, 77)
    ),
    "ExchangeCommandVersions": dict(correlation_id=1, commands=[CommandVersion(2, 1, 2)]),
    "StreamStats": dict(correlation_id=1, stream="s"),
    "StreamStatsResponse": dict(
        correlation_id=1, response_code=1, stats={"first_chunk_id": 0, "committed_chunk_id": -1}
    ),
    "CreateSuperStream": dict(
        correlation_id=1, name="s", partitions=["s-0"], binding_keys=["0"], arguments={"a": "b"}
    ),
    "Close": dict(correlation_id=1, closing_code=1, closing_reason="bye"),
}


@pytest.mark.parametrize("cls", COMMANDS, ids=lambda c: f"{c.NAME}-v{c.VERSION}")
def test_every_command_round_trips(cls: type[Command]) -> None:
    command = cls(**SAMPLES.get(cls.NAME, {}))
    frame = command.encode()
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert frame[4:8] == cls.KEY.to_bytes(2, "big") + cls.VERSION.to_bytes(2, "big")
    assert decode_frame(memoryview(frame)[4:]) == command
    assert BY_KEY_VERSION[cls.KEY, cls.VERSION] is cls


def test_a_response_has_the_response_bit_of_its_request() -> None:
    for cls in COMMANDS:
        if cls.NAME.endswith("Response") and cls.NAME != "TuneResponse":
            request = getattr(commands, cls.NAME.removesuffix("Response"))
            assert cls.KEY == request.KEY | 0x8000


@given(
    st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=5), st.integers(0, 2**32 - 1)
)
def test_peer_properties_round_trip(properties: dict[str, str], correlation_id: int) -> None:
    command = commands.PeerProperties(correlation_id, properties)
    assert decode_frame(memoryview(command.encode())[4:]) == command


def test_omitted_when_empty_fields_are_left_out_and_read_back_empty() -> None:
    frame = commands.OpenResponse(4, ResponseCode.OK).encode()
    assert frame == bytes.fromhex("0000000a8015000100000004" + "0001")
    assert decode_frame(memoryview(frame)[4:]) == commands.OpenResponse(4, 1, {})


def test_subscribe_without_properties_is_read_as_rabbitmq_reads_it() -> None:
    full = commands.Subscribe(1, 0, "s", OffsetSpecification(OffsetType.FIRST), 5).encode()
    without = full[:-4]  # no properties count
    body = memoryview((len(without) - 4).to_bytes(4, "big") + without[4:])[4:]
    assert decode_frame(body) == commands.Subscribe(1, 0, "s", OffsetSpecification(1), 5, {})


def test_published_records_are_slices_of_the_frame() -> None:
    frame = memoryview(commands.Publish(1, [PublishedMessage(1, b"payload")]).encode())
    command = decode_frame(frame[4:])
    assert isinstance(command, commands.Publish)
    message = command.messages[0].message
    assert isinstance(message, memoryview) and message.obj is frame.obj


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"\x00", "no key and version"),
        (b"\x7f\x00\x00\x01", "unknown command key 0x7f00"),
        (b"\x00\x08\x00\x03\x01", "command key 0x0008 has no version 3"),
        (b"\x00\x11\x00\x01\x00\x00", "PeerProperties: "),
        (b"\x00\x17\x00\x01\x00", "Heartbeat: 1 bytes after its last field"),
        (b"\x00\x0e\x00\x01\x00\x00\x00\x01\x00\x09ab", "string of 9 bytes at byte 10"),
        (b"\x00\x0f\x00\x01\x00\x00\x00\x01\x7f\xff\xff\xff", "array of 2147483647"),
        (b"\x00\x07\x00\x01\x00\x00\x00\x01\x00\x00\x01s\x00\x09\x00\x01", "offset type 9"),
    ],
)
def test_malformed_frames_raise_unknown_frame_naming_the_problem(body: bytes, match: str) -> None:
    with pytest.raises(MalformedFrame, match=match) as caught:
        decode_frame(memoryview(body))
    assert caught.value.code is ResponseCode.UNKNOWN_FRAME
    assert int(caught.value.code) == 0x0D


def test_unencodable_values_name_the_command() -> None:
    with pytest.raises(ValueError, match="Credit: cannot encode"):
        commands.Credit(subscription_id=256).encode()


def test_response_codes_are_the_protocol_table() -> None:
    codes = {code.name: int(code) for code in ResponseCode}
    assert codes["OK"] == 1 and codes["NO_OFFSET"] == 0x13
    assert codes["UNKNOWN_FRAME"] == 0x0D and codes["FRAME_TOO_LARGE"] == 0x0E
    assert sorted(codes.values()) == list(range(1, 22))


def test_gzip_sub_batch_publish_entry_gives_its_records() -> None:
    entry = encode_sub_batch(SubBatch([b"x", b"yz"], Compression.GZIP))
    frame = memoryview(
        commands.Publish(1, [PublishedMessage(5, SubBatchEntry(1, 2, 11, entry[11:]))]).encode()
    )
    command = decode_frame(frame[4:])
    assert isinstance(command, commands.Publish)
    sub = command.messages[0].message
    assert isinstance(sub, SubBatchEntry)
    assert [bytes(r) for r in sub.records()] == [b"x", b"yz"]
