"""A blocking stream-protocol client for the tests and benchmarks, written from
``PROTOCOL.adoc`` alone (it shares no code with the broker): frames as bytes, responses as
their code and the rest, so a test sees exactly what a broker answers. Every read is bounded
by ``TIMEOUT``."""

from __future__ import annotations

import socket
import struct
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

TIMEOUT = 10.0
OK = 1


def string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def strings(values: Iterable[str]) -> bytes:
    items = list(values)
    return struct.pack(">i", len(items)) + b"".join(string(v) for v in items)


def string_map(values: dict[str, str]) -> bytes:
    return struct.pack(">i", len(values)) + b"".join(
        string(k) + string(v) for k, v in values.items()
    )


def blob(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


class Cursor:
    """Reads a frame's fields in order."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str:
        n = self.take(">h")
        value = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return value

    def string_map(self) -> dict[str, str]:
        return {self.string(): self.string() for _ in range(self.take(">i"))}

    def strings(self) -> list[str]:
        return [self.string() for _ in range(self.take(">i"))]

    def rest(self) -> bytes:
        return self.data[self.pos :]


@dataclass(frozen=True)
class Frame:
    key: int
    version: int
    body: Cursor


class RawClient:
    def __init__(self, uri: str) -> None:
        parts = urllib.parse.urlsplit(uri)
        assert parts.hostname is not None and parts.port is not None
        self.host, self.port = parts.hostname, parts.port
        self.username = urllib.parse.unquote(parts.username or "guest")
        self.password = urllib.parse.unquote(parts.password or "guest")
        self.vhost = urllib.parse.unquote(parts.path[1:]) or "/"
        self.sock = socket.create_connection((self.host, self.port), timeout=TIMEOUT)
        self._buffer = b""
        self._correlation = 0
        #: frames read while waiting for another (Deliver, confirms, Tune...)
        self.pending: list[Frame] = []

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- frames -------------------------------------------------------------------------------

    def send(self, key: int, payload: bytes, version: int = 1) -> None:
        body = struct.pack(">HH", key, version) + payload
        self.sock.sendall(struct.pack(">I", len(body)) + body)

    def read_frame(self) -> Frame | None:
        """The next frame, None when the broker closed the socket."""
        while len(self._buffer) < 4 or len(self._buffer) < 4 + self._size():
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self._buffer += chunk
        size = self._size()
        data, self._buffer = self._buffer[4 : 4 + size], self._buffer[4 + size :]
        key, version = struct.unpack_from(">HH", data)
        return Frame(key, version, Cursor(data, 4))

    def _size(self) -> int:
        return int(struct.unpack_from(">I", self._buffer)[0])

    def wait(self, key: int) -> Frame:
        """The next frame with ``key`` (earlier pending ones first); others are kept."""
        for i, frame in enumerate(self.pending):
            if frame.key == key:
                return self.pending.pop(i)
        while True:
            received = self.read_frame()
            if received is None:
                raise ConnectionError(f"closed while waiting for frame 0x{key:04x}")
            if received.key == key:
                return received
            self.pending.append(received)

    def exchange(self, key: int, payload: bytes = b"", version: int = 1) -> Cursor:
        """Send a request with a fresh correlation id; its response after the correlation
        id (Metadata's has no code)."""
        self._correlation += 1
        correlation = self._correlation
        self.send(key, struct.pack(">I", correlation) + payload, version)
        frame = self.wait(key | 0x8000)
        assert frame.body.take(">I") == correlation
        return frame.body

    def request(self, key: int, payload: bytes = b"", version: int = 1) -> tuple[int, Cursor]:
        """Send a request; its response's code and the rest."""
        body = self.exchange(key, payload, version)
        return body.take(">H"), body

    # -- the handshake ------------------------------------------------------------------------

    def handshake(self, password: str | None = None, vhost: str | None = None) -> int:
        """Peer properties, SASL PLAIN, tune, open: the code of the first step that is not
        OK (SaslAuthenticate or Open), else OK."""
        code, _ = self.request(0x11, string_map({"product": "raw test client"}))
        assert code == OK
        code, body = self.request(0x12)
        assert code == OK and "PLAIN" in body.strings()
        secret = self.password if password is None else password
        response = f"\0{self.username}\0{secret}".encode()
        code, _ = self.request(0x13, string("PLAIN") + blob(response))
        if code != OK:
            return code
        tune = self.wait(0x14)
        frame_max, heartbeat = tune.body.take(">I"), tune.body.take(">I")
        self.send(0x14, struct.pack(">II", frame_max, heartbeat))
        code, _ = self.request(0x15, string(self.vhost if vhost is None else vhost))
        return code

    # -- commands -----------------------------------------------------------------------------

    def create(self, stream: str, arguments: dict[str, str] | None = None) -> int:
        return self.request(0x0D, string(stream) + string_map(arguments or {}))[0]

    def delete(self, stream: str) -> int:
        return self.request(0x0E, string(stream))[0]

    def declare_publisher(self, publisher_id: int, reference: str, stream: str) -> int:
        payload = struct.pack(">B", publisher_id) + string(reference) + string(stream)
        return self.request(0x01, payload)[0]

    def publish(
        self, publisher_id: int, messages: list[tuple[int, bytes]], filter_value: str | None = None
    ) -> None:
        """A Publish (version 2 with ``filter_value`` on every message)."""
        payload = struct.pack(">Bi", publisher_id, len(messages))
        for publishing_id, data in messages:
            payload += struct.pack(">Q", publishing_id)
            payload += (b"" if filter_value is None else string(filter_value)) + blob(data)
        self.send(0x02, payload, 1 if filter_value is None else 2)

    def confirmed(self) -> tuple[int, list[int]]:
        """The next PublishConfirm: publisher id and publishing ids."""
        frame = self.wait(0x03)
        publisher_id = frame.body.take(">B")
        return publisher_id, [frame.body.take(">Q") for _ in range(frame.body.take(">i"))]

    def publisher_sequence(self, reference: str, stream: str) -> tuple[int, int]:
        code, body = self.request(0x05, string(reference) + string(stream))
        return code, body.take(">Q")

    def subscribe(
        self,
        subscription_id: int,
        stream: str,
        offset_type: int = 1,
        offset: int = 0,
        credit: int = 10,
        properties: dict[str, str] | None = None,
    ) -> int:
        spec = struct.pack(">H", offset_type)
        if offset_type in (4, 5):
            spec += struct.pack(">q", offset)
        payload = struct.pack(">B", subscription_id) + string(stream) + spec
        payload += struct.pack(">H", credit) + string_map(properties or {})
        return self.request(0x07, payload)[0]

    def delivered(self) -> tuple[int, int, list[bytes]]:
        """The next Deliver (version 1): subscription id, the chunk's first offset and its
        records (simple entries)."""
        frame = self.wait(0x08)
        body = frame.body
        subscription_id = body.take(">B")
        if frame.version >= 2:
            body.take(">Q")
        header = struct.unpack_from(">BBHIqQQIIIB3x", body.data, body.pos)
        entries, first = header[2], header[6]
        body.pos += 48
        records = []
        for _ in range(entries):
            size = body.take(">I")
            records.append(body.data[body.pos : body.pos + size])
            body.pos += size
        return subscription_id, first, records

    def stream_stats(self, stream: str) -> tuple[int, dict[str, int]]:
        code, body = self.request(0x1C, string(stream))
        stats = {}
        for _ in range(body.take(">i")):
            key = body.string()
            stats[key] = body.take(">q")
        return code, stats

    def closed_with(self) -> tuple[int, str]:
        """The Close the broker sent (its code and reason), and that it then closed."""
        frame = self.wait(0x16)
        frame.body.take(">I")
        code, reason = frame.body.take(">H"), frame.body.string()
        return code, reason
