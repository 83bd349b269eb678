"""The stream log on disk is Osiris's: segments of chunks that ``amqp_protocol.stream.chunk``
parses (header, bloom filter, data, CRC), an index of 29-byte entries, records that are the
AMQP 1.0 messages RabbitMQ 4 stores; a log of the broker's old format is migrated when its
stream opens, offsets and timestamps kept."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from amqp_protocol.amqp10 import from_amqp091
from amqp_protocol.stream.chunk import ChunkType, parse_chunk, parse_chunk_header
from broker.model.message import Message
from broker.model.vhost import VirtualHost
from broker.store.message_codec import encode_message
from broker.streams.chunk_filter import chunk_filter
from broker.streams.legacy_log import COMPLETE_MARKER, WORK_DIRECTORY
from broker.streams.log import EPOCH, SegmentedLog

from .test_stream_queue import Properties, consume, declare, loop, vhost

__all__ = ["loop", "vhost"]


def _stored_chunks(segment: Path) -> list[tuple[int, bytes]]:
    """(file position, bytes) of each chunk of a segment, walked by the chunk headers."""
    raw = segment.read_bytes()
    assert raw[:8] == b"OSIL" + (1).to_bytes(4, "big")
    chunks, pos = [], 8
    while pos < len(raw):
        size = parse_chunk_header(raw, pos).stored_size
        chunks.append((pos, raw[pos : pos + size]))
        pos += size
    return chunks


def test_the_segment_holds_osiris_chunks_that_parse_with_their_crc(tmp_path: Path) -> None:
    bloom = chunk_filter(["eu", ""])
    with SegmentedLog(tmp_path) as log:
        log.append([b"a", b"bb"], 1_000)
        log.append([b"c" * 300], 2_000, filter_bytes=bloom)
    chunks = _stored_chunks(tmp_path / f"{0:020d}.segment")
    parsed = [parse_chunk(raw, stored=True, check_crc=True) for _, raw in chunks]
    assert [[bytes(r) for r in p.records()] for p in parsed] == [[b"a", b"bb"], [b"c" * 300]]
    first, second = (p.header for p in parsed)
    assert (first.first_offset, first.num_records, first.timestamp) == (0, 2, 1_000)
    assert (second.first_offset, second.num_records, second.timestamp) == (2, 1, 2_000)
    assert {first.chunk_type, second.chunk_type} == {ChunkType.USER}
    assert {first.epoch, second.epoch} == {EPOCH}
    assert (first.bloom_size, second.bloom_size) == (0, len(bloom))
    assert chunks[1][1][48 : 48 + len(bloom)] == bloom


def test_the_index_holds_an_osiris_entry_per_chunk(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path) as log:
        for t in range(3):
            log.append([b"x"] * 4, 5_000 + t)
    index = (tmp_path / f"{0:020d}.index").read_bytes()
    assert index[:8] == b"OSII" + (1).to_bytes(4, "big")
    entries = list(struct.iter_unpack(">QqQIB", index[8:]))
    positions = [pos for pos, _ in _stored_chunks(tmp_path / f"{0:020d}.segment")]
    assert entries == [(4 * t, 5_000 + t, EPOCH, positions[t], ChunkType.USER) for t in range(3)]


def test_a_091_publish_is_stored_as_the_amqp_10_message_rabbitmq_4_stores(
    vhost: VirtualHost, tmp_path: Path
) -> None:
    q = declare(vhost)
    properties = Properties(content_type="text/plain", headers={"k": "v"}, message_id="m")
    q.publish(Message("ex", "rk", properties, b"body"))
    q.append_record(b"\x00Su\xa0\x02as", "eu")  # as a stream client published it
    q.flush()
    q.close()
    [(_, raw)] = _stored_chunks(tmp_path / "s" / f"{0:020d}.segment")
    records = [bytes(r) for r in parse_chunk(raw, stored=True, check_crc=True).records()]
    assert records == [
        from_amqp091(properties.present(), b"body", "ex", "rk"),
        b"\x00Su\xa0\x02as",
    ]


def test_a_reopened_stream_reads_its_log_over_091(vhost: VirtualHost) -> None:
    q = declare(vhost)
    q.publish(Message("", "s", Properties(headers={"n": 1}), b"one"))
    q.append_record(from_amqp091({"headers": {"n": 2}}, b"two"))
    q.flush()
    q.close()
    again = declare(vhost)
    _, sink = consume(again, "first")
    assert [e.message.body for e in sink.delivered] == [b"one", b"two"]
    assert [e.message.headers["n"] for e in sink.delivered] == [1, 2]
    assert sink.offsets == [0, 1]


def _old_segment(path: Path, first: int, chunks: list[tuple[int, list[bytes], bytes]]) -> None:
    """A segment of the broker's old format (version 2): what ``legacy_log`` reads."""
    out = struct.pack(">8sI4x", b"AMQPSTRM", 2)
    for timestamp, records, filter_bytes in chunks:
        data = bytes((len(filter_bytes),)) + filter_bytes
        data += b"".join(struct.pack(">I", len(r)) + r for r in records)
        head = struct.pack(">QqII", first, timestamp, len(records), len(data))
        out += head + struct.pack(">I", zlib.crc32(data, zlib.crc32(head))) + data
        first += len(records)
    path.write_bytes(out)


def _old_091_record(body: bytes, **headers: object) -> bytes:
    return encode_message(Message("ex", "rk", Properties(headers=headers), body))


def _old_raw_record(data: bytes) -> bytes:
    raw = Properties(headers={"x-stream-raw-record": True})
    return encode_message(Message("", "s", raw, data))


def test_an_old_format_log_is_migrated_when_its_stream_opens(
    vhost: VirtualHost, tmp_path: Path
) -> None:
    directory = tmp_path / "s"
    directory.mkdir()
    published = from_amqp091({"content_type": "a/b"}, b"as published")
    eu = chunk_filter(["eu"])
    _old_segment(
        directory / f"{100:020d}.segment",
        100,
        [
            (1_000, [_old_091_record(b"m0", k="v"), _old_091_record(b"m1")], b""),
            (2_000, [_old_raw_record(published)], eu),
        ],
    )
    (directory / f"{100:020d}.index").write_bytes(b"AMQPSIDX old index")
    q = declare(vhost)
    assert (q.log.first_offset, q.log.next_offset) == (100, 103)
    assert not (directory / WORK_DIRECTORY).exists()
    chunks = [raw for _, raw in _stored_chunks(directory / f"{100:020d}.segment")]
    parsed = [parse_chunk(raw, stored=True, check_crc=True) for raw in chunks]
    assert [(p.header.first_offset, p.header.timestamp) for p in parsed] == [
        (100, 1_000),
        (102, 2_000),
    ]
    assert [bytes(r) for r in parsed[1].records()] == [published]
    assert q.log.chunk_filter(102) == (eu, 103)
    _, sink = consume(q, "first")
    assert [e.message.body for e in sink.delivered] == [b"m0", b"m1", b"as published"]
    assert sink.delivered[0].message.headers["k"] == "v"
    assert sink.delivered[2].message.properties.content_type == "a/b"
    assert sink.offsets == [100, 101, 102]


def test_an_interrupted_migration_starts_again_from_the_old_files(
    vhost: VirtualHost, tmp_path: Path
) -> None:
    directory = tmp_path / "s"
    (directory / WORK_DIRECTORY).mkdir(parents=True)
    (directory / WORK_DIRECTORY / f"{0:020d}.segment").write_bytes(b"OSIL half written")
    _old_segment(directory / f"{0:020d}.segment", 0, [(5, [_old_091_record(b"m")], b"")])
    q = declare(vhost)
    assert [r.offset for r in q.log.read(0)] == [0]
    assert not (directory / WORK_DIRECTORY).exists()


def test_a_completed_migration_is_finished_when_the_broker_died_replacing_the_files(
    vhost: VirtualHost, tmp_path: Path
) -> None:
    directory = tmp_path / "s"
    work = directory / WORK_DIRECTORY
    with SegmentedLog(work, first_offset=7) as new:
        new.append([from_amqp091({}, b"migrated")], 42)
    (work / COMPLETE_MARKER).touch()
    _old_segment(directory / f"{7:020d}.segment", 7, [(42, [_old_091_record(b"old")], b"")])
    q = declare(vhost)
    _, sink = consume(q, "first")
    assert [e.message.body for e in sink.delivered] == [b"migrated"]
    assert not work.exists()


def test_a_torn_tail_of_an_old_format_log_is_dropped_by_the_migration(
    vhost: VirtualHost, tmp_path: Path
) -> None:
    directory = tmp_path / "s"
    directory.mkdir()
    segment = directory / f"{0:020d}.segment"
    _old_segment(segment, 0, [(5, [_old_091_record(b"kept")], b"")])
    segment.write_bytes(segment.read_bytes() + b"\x00\x00\x00\x00\x00\x00\x00\x01torn")
    q = declare(vhost)
    assert [r.offset for r in q.log.read(0)] == [0]
    assert q.log.next_offset == 1
