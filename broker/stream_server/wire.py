"""The stream protocol's frames as the server reads and writes them (``PROTOCOL.adoc`` of
``rabbitmq_stream``): primitive readers and writers, command keys and response codes.

A local adapter until ``amqp_protocol.stream`` offers its generated command classes and
sans-IO connection: it holds only what the server needs, and only the wire layout.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from enum import IntEnum


class Key(IntEnum):
    """Command keys; a response's key has the high bit set (``RESPONSE``)."""

    DECLARE_PUBLISHER = 0x01
    PUBLISH = 0x02
    PUBLISH_CONFIRM = 0x03
    PUBLISH_ERROR = 0x04
    QUERY_PUBLISHER_SEQUENCE = 0x05
    DELETE_PUBLISHER = 0x06
    SUBSCRIBE = 0x07
    DELIVER = 0x08
    CREDIT = 0x09
    STORE_OFFSET = 0x0A
    QUERY_OFFSET = 0x0B
    UNSUBSCRIBE = 0x0C
    CREATE = 0x0D
    DELETE = 0x0E
    METADATA = 0x0F
    METADATA_UPDATE = 0x10
    PEER_PROPERTIES = 0x11
    SASL_HANDSHAKE = 0x12
    SASL_AUTHENTICATE = 0x13
    TUNE = 0x14
    OPEN = 0x15
    CLOSE = 0x16
    HEARTBEAT = 0x17
    ROUTE = 0x18
    PARTITIONS = 0x19
    CONSUMER_UPDATE = 0x1A
    EXCHANGE_COMMAND_VERSIONS = 0x1B
    STREAM_STATS = 0x1C
    CREATE_SUPER_STREAM = 0x1D
    DELETE_SUPER_STREAM = 0x1E


RESPONSE = 0x8000


class Code(IntEnum):
    """Response codes (``PROTOCOL.adoc``, "Response Codes")."""

    OK = 0x01
    STREAM_DOES_NOT_EXIST = 0x02
    SUBSCRIPTION_ID_ALREADY_EXISTS = 0x03
    SUBSCRIPTION_ID_DOES_NOT_EXIST = 0x04
    STREAM_ALREADY_EXISTS = 0x05
    STREAM_NOT_AVAILABLE = 0x06
    SASL_MECHANISM_NOT_SUPPORTED = 0x07
    AUTHENTICATION_FAILURE = 0x08
    SASL_ERROR = 0x09
    SASL_CHALLENGE = 0x0A
    SASL_AUTHENTICATION_FAILURE_LOOPBACK = 0x0B
    VIRTUAL_HOST_ACCESS_FAILURE = 0x0C
    UNKNOWN_FRAME = 0x0D
    FRAME_TOO_LARGE = 0x0E
    INTERNAL_ERROR = 0x0F
    ACCESS_REFUSED = 0x10
    PRECONDITION_FAILED = 0x11
    PUBLISHER_DOES_NOT_EXIST = 0x12
    NO_OFFSET = 0x13


class FrameError(ValueError):
    """A frame that does not parse: the connection is closed with ``code``."""

    def __init__(self, message: str, code: Code = Code.UNKNOWN_FRAME) -> None:
        super().__init__(message)
        self.code = code


_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_U64 = struct.Struct(">Q")
_I64 = struct.Struct(">q")
_I16 = struct.Struct(">h")
FRAME_SIZE = _U32
#: key, version
COMMAND_HEAD = struct.Struct(">HH")


class Reader:
    """Reads a command's fields in order; running past the end is a :class:`FrameError`
    naming the command."""

    __slots__ = ("_data", "_pos", "_what")

    def __init__(self, data: memoryview, pos: int, what: str) -> None:
        self._data = data
        self._pos = pos
        self._what = what

    def _unpack(self, s: struct.Struct) -> int:
        if self._pos + s.size > len(self._data):
            raise FrameError(f"{self._what}: the frame ends inside a field")
        (value,) = s.unpack_from(self._data, self._pos)
        self._pos += s.size
        return int(value)

    def u8(self) -> int:
        return self._unpack(_U8)

    def u16(self) -> int:
        return self._unpack(_U16)

    def u32(self) -> int:
        return self._unpack(_U32)

    def i32(self) -> int:
        return self._unpack(_I32)

    def u64(self) -> int:
        return self._unpack(_U64)

    def i64(self) -> int:
        return self._unpack(_I64)

    def _take(self, n: int) -> memoryview:
        end = self._pos + n
        if n < 0 or end > len(self._data):
            raise FrameError(f"{self._what}: a length of {n} runs past the frame's end")
        view = self._data[self._pos : end]
        self._pos = end
        return view

    def string(self) -> str:
        n = self._unpack(_I16)
        if n == -1:
            return ""
        try:
            return str(self._take(n), "utf-8")
        except UnicodeDecodeError:
            raise FrameError(f"{self._what}: a string is not UTF-8") from None

    def blob(self) -> memoryview:
        n = self._unpack(_I32)
        return self._take(0 if n == -1 else n)

    def count(self) -> int:
        """An array's length (i32), refused when negative."""
        n = self._unpack(_I32)
        if n < 0:
            raise FrameError(f"{self._what}: an array of {n} items")
        return n

    def strings(self) -> list[str]:
        return [self.string() for _ in range(self.count())]

    def string_map(self) -> dict[str, str]:
        return {self.string(): self.string() for _ in range(self.count())}

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def end(self) -> None:
        if self._pos != len(self._data):
            raise FrameError(f"{self._what}: {len(self._data) - self._pos} bytes after its fields")


class Writer:
    """Builds one frame: ``frame()`` prefixes the size."""

    __slots__ = ("_parts",)

    def __init__(self, key: int, version: int = 1) -> None:
        self._parts: list[bytes] = [COMMAND_HEAD.pack(key, version)]

    def u8(self, value: int) -> Writer:
        self._parts.append(_U8.pack(value))
        return self

    def u16(self, value: int) -> Writer:
        self._parts.append(_U16.pack(value))
        return self

    def u32(self, value: int) -> Writer:
        self._parts.append(_U32.pack(value))
        return self

    def u64(self, value: int) -> Writer:
        self._parts.append(_U64.pack(value))
        return self

    def i64(self, value: int) -> Writer:
        self._parts.append(_I64.pack(value))
        return self

    def string(self, value: str) -> Writer:
        raw = value.encode("utf-8")
        self._parts.append(_I16.pack(len(raw)) + raw)
        return self

    def blob(self, value: bytes) -> Writer:
        self._parts.append(_I32.pack(len(value)) + value)
        return self

    def count(self, n: int) -> Writer:
        self._parts.append(_I32.pack(n))
        return self

    def strings(self, values: Iterable[str]) -> Writer:
        items = list(values)
        self.count(len(items))
        for value in items:
            self.string(value)
        return self

    def string_map(self, values: dict[str, str]) -> Writer:
        self.count(len(values))
        for key, value in values.items():
            self.string(key).string(value)
        return self

    def raw(self, data: bytes | memoryview) -> Writer:
        self._parts.append(bytes(data))
        return self

    def frame(self) -> bytes:
        body = b"".join(self._parts)
        return FRAME_SIZE.pack(len(body)) + body


def response(key: Key, correlation_id: int, code: Code) -> Writer:
    """A response's head: its key, version 1, the correlation id and the code."""
    return Writer(key | RESPONSE).u32(correlation_id).u16(code)
