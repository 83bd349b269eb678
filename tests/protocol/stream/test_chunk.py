"""The chunk format: built chunks parse back, in both forms, and bad chunks are named."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp_protocol.stream.chunk import (
    HEADER,
    ChunkError,
    ChunkHeader,
    ChunkType,
    Compression,
    SubBatch,
    UnsupportedCompression,
    build_chunk,
    delivered_parts,
    parse_chunk,
    parse_chunk_header,
)

records_strategy = st.lists(st.binary(max_size=64), max_size=20)


def delivered(stored: bytes) -> bytes:
    return b"".join(delivered_parts(stored))


@given(records_strategy, st.integers(0, 2**63), st.integers(-(2**63), 2**63 - 1))
def test_built_chunk_parses_back_in_both_forms(
    records: list[bytes], first_offset: int, timestamp: int
) -> None:
    stored = build_chunk(records, first_offset=first_offset, timestamp=timestamp, epoch=3)
    for chunk in (parse_chunk(stored, stored=True), parse_chunk(delivered(stored))):
        assert chunk.header.num_entries == chunk.header.num_records == len(records)
        assert chunk.header.first_offset == first_offset
        assert chunk.header.next_offset == first_offset + len(records)
        assert chunk.header.timestamp == timestamp
        assert chunk.header.epoch == 3
        assert [bytes(r) for r in chunk.records()] == records
        chunk.check_crc()


def test_header_layout_is_osiris_make_chunk() -> None:
    stored = build_chunk(
        [b"ab", b"c"],
        first_offset=7,
        timestamp=1000,
        epoch=2,
        bloom=b"\x01" * 16,
        trailer=b"T" * 5,
    )
    data = b"\x00\x00\x00\x02ab\x00\x00\x00\x01c"
    assert stored[: HEADER.size] == (
        b"\x50\x00\x00\x02\x00\x00\x00\x02"
        + (1000).to_bytes(8, "big")
        + (2).to_bytes(8, "big")
        + (7).to_bytes(8, "big")
        + zlib.crc32(data).to_bytes(4, "big")
        + len(data).to_bytes(4, "big")
        + (5).to_bytes(4, "big")
        + b"\x10\x00\x00\x00"
    )
    assert stored[HEADER.size :] == b"\x01" * 16 + data + b"T" * 5
    assert delivered(stored) == stored[: HEADER.size] + data


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_sub_batches_give_their_records_in_order(compression: Compression) -> None:
    batch = SubBatch([b"one", b"two", b""], compression)
    stored = build_chunk([b"zero", batch, b"three"], first_offset=0, timestamp=0)
    chunk = parse_chunk(stored, stored=True, check_crc=True)
    assert (chunk.header.num_entries, chunk.header.num_records) == (3, 5)
    assert [bytes(r) for r in chunk.records()] == [b"zero", b"one", b"two", b"", b"three"]


def test_unsupported_compression_names_the_type() -> None:
    stored = bytearray(build_chunk([SubBatch([b"x"])], first_offset=0, timestamp=0))
    stored[HEADER.size] |= Compression.ZSTD << 4
    with pytest.raises(UnsupportedCompression, match=r"zstd \(4\) is not supported"):
        parse_chunk(bytes(stored), stored=True).records()
    with pytest.raises(UnsupportedCompression, match=r"snappy \(2\)"):
        build_chunk([SubBatch([b"x"], Compression.SNAPPY)], first_offset=0, timestamp=0)


def test_wrong_crc_is_refused_when_checked() -> None:
    stored = bytearray(build_chunk([b"abc"], first_offset=0, timestamp=0))
    stored[-1] ^= 0xFF
    with pytest.raises(ChunkError, match="CRC-32"):
        parse_chunk(bytes(stored), stored=True, check_crc=True)


def test_wrong_magic_is_named() -> None:
    stored = b"\x51" + build_chunk([b"abc"], first_offset=0, timestamp=0)[1:]
    with pytest.raises(ChunkError, match="0x51"):
        parse_chunk_header(stored)


def test_short_header_is_refused() -> None:
    with pytest.raises(ChunkError, match="needs 48 bytes, got 10"):
        parse_chunk_header(b"\x50" * 10)


def test_size_mismatch_with_header_is_refused() -> None:
    stored = build_chunk([b"abc"], first_offset=0, timestamp=0)
    with pytest.raises(ChunkError, match="header says"):
        parse_chunk(stored + b"x", stored=True)


def test_entry_overrunning_the_data_is_refused() -> None:
    stored = bytearray(build_chunk([b"abc"], first_offset=0, timestamp=0))
    stored[HEADER.size + 3] = 200
    with pytest.raises(ChunkError, match="200 bytes: only 3 are left"):
        parse_chunk(bytes(stored), stored=True).records()


def test_chunk_header_sizes() -> None:
    header = ChunkHeader(ChunkType.USER, 1, 1, 0, 1, 10, 0, 7, 3, 16)
    assert header.stored_size == 48 + 16 + 7 + 3
    assert header.delivered_size == 48 + 7
