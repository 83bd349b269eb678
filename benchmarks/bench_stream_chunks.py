"""Stream-chunk parsing: records per second out of a stream of ``Deliver`` frames, by
``amqp_protocol.stream`` and by rstream 1.x (the reference client's own decoder), beside a
plain ``bytes.split`` of the same payloads (the floor of any Python record splitter).

The stream: 1,000,000 records of 100 B in chunks of 1,000 simple entries, as RabbitMQ
delivers them (Deliver v1 frames). "ours, list" is what a reader gets record by record
(``StreamConnection.receive_data`` over all the bytes, then ``parse_chunk`` and
``records()``: a memoryview per record); "ours, bounds" is the Arrow path
(``entry_bounds``: one int64 offsets array per chunk, no object per record).
``python -m benchmarks.bench_stream_chunks`` prints the three rates for the 1,000,000
records; the runner (``--only stream_chunks``) times 10,000 records a call.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rstream import encoding as rstream_encoding

from amqp_protocol.generated.stream import Deliver
from amqp_protocol.stream.chunk import build_chunk, delivered_parts, entry_bounds, parse_chunk
from amqp_protocol.stream.connection import Role, State, StreamConnection
from amqp_protocol.stream.frames import deliver_prefix
from benchmarks.common import Row, compare, min_seconds, row

RECORD = bytes(range(100))
PER_CHUNK = 1_000


def deliver_frames(records: int) -> bytes:
    """``records`` records as Deliver frames of ``PER_CHUNK`` records each, back to back."""
    frames: list[bytes | memoryview] = []
    for first in range(0, records, PER_CHUNK):
        stored = build_chunk([RECORD] * PER_CHUNK, first_offset=first, timestamp=0)
        header, data = delivered_parts(stored)
        frames += (deliver_prefix(0, len(header) + len(data)), header, data)
    return b"".join(frames)


def _open_client() -> StreamConnection:
    """A client connection past its handshake (the benchmark measures delivery only)."""
    conn = StreamConnection(Role.CLIENT, frame_max=0)
    conn.state = State.OPEN
    return conn


def ours_records(stream: bytes) -> int:
    count = 0
    for command in _open_client().receive_data(stream):
        assert isinstance(command, Deliver)
        count += len(parse_chunk(command.chunk).records())
    return count


def ours_bounds(stream: bytes) -> int:
    count = 0
    for command in _open_client().receive_data(stream):
        assert isinstance(command, Deliver)
        chunk = parse_chunk(command.chunk)
        bounds = entry_bounds(chunk.data, chunk.header.num_entries)
        assert bounds is not None
        count += len(bounds) - 1
    return count


def rstream_records(stream: bytes) -> int:
    count = 0
    view = memoryview(stream)
    pos = 0
    while pos < len(view):
        size = int.from_bytes(view[pos : pos + 4], "big")
        frame = rstream_encoding.decode_frame(bytes(view[pos + 4 : pos + 4 + size]))
        count += len(frame.get_messages())  # type: ignore[attr-defined]
        pos += 4 + size
    return count


def split_records(joined: bytes) -> int:
    return len(joined.split(b"\n"))


def _records_per_second(parse: Callable[[bytes], int], data: bytes, records: int) -> float:
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        assert parse(data) == records
        best = max(best, records / (time.perf_counter() - start))
    return best


def run(quick: bool) -> list[Row]:
    records = 10_000
    stream = deliver_frames(records)
    joined = b"\n".join([RECORD.replace(b"\n", b" ")] * records)
    seconds = min_seconds(quick)
    rows = []
    pairs = [
        (name, parse, ref_name, ref, ref_data)
        for name, parse in (("list", ours_records), ("bounds", ours_bounds))
        for ref_name, ref, ref_data in (
            ("rstream 1.x", rstream_records, stream),
            ("bytes.split", split_records, joined),
        )
    ]
    for name, parse, ref_name, ref, ref_data in pairs:
        ours_rate, ref_rate = compare(
            lambda p=parse: p(stream),  # type: ignore[misc]
            lambda r=ref, d=ref_data: r(d),  # type: ignore[misc]
            seconds,
        )
        figure = f"stream chunk records parsed, ours ({name}), 100 B records"
        rows.append(row(figure, "records/s", ours_rate * records, ref_rate * records, ref_name))
    return rows


def main() -> None:
    records = 1_000_000
    stream = deliver_frames(records)
    joined = b"\n".join([RECORD.replace(b"\n", b" ")] * records)
    rates = {
        "ours: receive_data + parse_chunk + records()": _records_per_second(
            ours_records, stream, records
        ),
        "ours: receive_data + parse_chunk + entry_bounds": _records_per_second(
            ours_bounds, stream, records
        ),
        "rstream 1.x: decode_frame + get_messages": _records_per_second(
            rstream_records, stream, records
        ),
        "bytes.split of the same payloads": _records_per_second(split_records, joined, records),
    }
    baseline = rates["bytes.split of the same payloads"]
    print(f"{records:,} records of {len(RECORD)} B, {PER_CHUNK:,} per chunk, best of 3")
    for name, value in rates.items():
        print(f"{name:50s} {value:>14,.0f} records/s  {value / baseline:6.2f}x bytes.split")


if __name__ == "__main__":
    main()
