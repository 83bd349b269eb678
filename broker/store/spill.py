"""Queues larger than memory: a FIFO of byte strings kept in files instead of in memory.

A queue keeps its head in memory and pushes what is beyond its memory threshold here (the
encoded message plus whatever it needs to restore it, e.g. the journal message id); consumers
pop from the head, so reads and writes are both sequential and the memory used is a few
buffers, whatever the length. Files are chunked and each chunk is deleted once read. Nothing
here is fsync'd: spilled data is a cache, durability is the journal's job.
"""

from __future__ import annotations

import shutil
import struct
import tempfile
from collections import deque
from pathlib import Path
from typing import BinaryIO

from .errors import from_os_error

_LENGTH = struct.Struct("<I")
DEFAULT_CHUNK_SIZE = 64 * 1024 * 1024


class SpillFifo:
    def __init__(self, directory: Path | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        """Files go in a new directory under ``directory`` (default: the system temp dir)."""
        try:
            self._dir = Path(tempfile.mkdtemp(prefix="spill-", dir=directory))
        except OSError as e:
            where = directory or tempfile.gettempdir()
            raise from_os_error(where, "cannot spill to disk", e) from e
        self._chunk_size = chunk_size
        #: [chunk number, records written to it]; the first is being read, the last written
        self._chunks: deque[list[int]] = deque()
        self._writer: BinaryIO | None = None
        self._written = 0
        self._dirty = False
        self._reader: BinaryIO | None = None
        self._read_in_chunk = 0
        self._length = 0
        self._next_chunk = 0

    def __len__(self) -> int:
        return self._length

    def push(self, data: bytes) -> None:
        try:
            if self._writer is None or self._written >= self._chunk_size:
                self._start_chunk()
            assert self._writer is not None
            self._writer.write(_LENGTH.pack(len(data)))
            self._writer.write(data)
        except OSError as e:
            raise from_os_error(self._dir, "cannot spill to disk", e) from e
        self._written += 4 + len(data)
        self._chunks[-1][1] += 1
        self._dirty = True
        self._length += 1

    def pop(self) -> bytes:
        """The oldest item; IndexError when empty."""
        if not self._length:
            raise IndexError("pop from an empty SpillFifo")
        number, count = self._chunks[0]
        if self._read_in_chunk == count:  # finished with the head chunk (not the last one)
            self._drop_head_chunk()
            number, count = self._chunks[0]
        if self._dirty and len(self._chunks) == 1:
            assert self._writer is not None
            self._writer.flush()
            self._dirty = False
        if self._reader is None:
            self._reader = open(self._path(number), "rb")  # noqa: SIM115
        (length,) = _LENGTH.unpack(self._reader.read(4))
        data = self._reader.read(length)
        self._read_in_chunk += 1
        self._length -= 1
        return data

    def close(self) -> None:
        """Delete the files."""
        for f in (self._reader, self._writer):
            if f is not None:
                f.close()
        self._reader = self._writer = None
        self._chunks.clear()
        self._length = 0
        shutil.rmtree(self._dir, ignore_errors=True)

    def _path(self, number: int) -> Path:
        return self._dir / f"{number}.spill"

    def _start_chunk(self) -> None:
        if self._writer is not None:
            self._writer.close()
        number = self._next_chunk
        self._next_chunk += 1
        self._writer = open(self._path(number), "wb")  # noqa: SIM115
        self._written = 0
        self._dirty = False
        self._chunks.append([number, 0])

    def _drop_head_chunk(self) -> None:
        number, _ = self._chunks.popleft()
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._path(number).unlink(missing_ok=True)
        self._read_in_chunk = 0
