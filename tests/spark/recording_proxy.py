"""A loopback TCP forwarder that records what clients send to the server behind it: how a
test sees, without touching the client, whether and which calls went to the broker; that
can cut the connections, as a network failure would; and that can hold back what the
server sends, as a slow broker or network would."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

from testbed.ports import free_port

#: The protocol header a client opens with, before any frame.
_HEADER_SIZE = 8
#: Frame type of method frames; a frame is type, channel, size, payload, frame-end.
_METHOD_FRAME = 1
#: (class id, method id) of the methods tests look for.
BASIC_ACK = (60, 80)
BASIC_CANCEL = (60, 30)
CONNECTION_CLOSE = (10, 50)
QUEUE_DECLARE = (50, 10)


@dataclass(frozen=True)
class SentMethod:
    """One method frame a client sent: its channel, ``class.method`` ids and arguments."""

    channel: int
    class_id: int
    method_id: int
    arguments: bytes


class RecordingProxy:
    """Forwards every connection made to ``url`` (its ``amqp://`` URL) to ``target``."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5672)
        self._listener = socket.create_server(("127.0.0.1", free_port()))
        port = self._listener.getsockname()[1]
        netloc = parts.netloc.rsplit("@", 1)[0] + f"@127.0.0.1:{port}"
        self.url = urlunsplit(parts._replace(netloc=netloc))
        self._lock = threading.Lock()
        self._sent: list[bytearray] = []  #: per connection, the bytes its client sent
        self._sockets: list[socket.socket] = []
        #: seconds each read from the server waits before it is passed on (0: none)
        self.delay_to_client = 0.0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def sent_to_server(self) -> int:
        """Bytes forwarded from clients to the server, all connections together."""
        with self._lock:
            return sum(len(sent) for sent in self._sent)

    def methods_sent(self) -> list[list[SentMethod]]:
        """Per connection, in order, the method frames its client sent."""
        with self._lock:
            return [_methods(bytes(sent)) for sent in self._sent]

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(self._target, timeout=10)
            server.settimeout(None)
            sent = bytearray()
            with self._lock:
                self._sockets += [client, server]
                self._sent.append(sent)
            threading.Thread(target=self._pump, args=(client, server, sent), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, None), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bytearray | None) -> None:
        try:
            while data := src.recv(65536):
                if record is not None:
                    with self._lock:
                        record += data
                elif self.delay_to_client:
                    time.sleep(self.delay_to_client)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                _end(sock)

    def cut(self) -> None:
        """Drop every connection made so far, as a network failure or a broker that dies
        would; new connections are still forwarded."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _end(sock)

    def close(self) -> None:
        self._listener.close()
        self.cut()

    def __enter__(self) -> RecordingProxy:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _end(sock: socket.socket) -> None:
    """Shut ``sock`` down, then close it. Closing alone leaves the socket open (no FIN sent)
    while another thread is still blocked reading it: the broker would keep the connection,
    and its unacked messages, for ever."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _methods(data: bytes) -> list[SentMethod]:
    """The method frames in a client's byte stream (content and heartbeat frames skipped)."""
    methods, at = [], _HEADER_SIZE
    while at + 7 <= len(data):
        kind, channel, size = struct.unpack_from(">BHI", data, at)
        if at + 7 + size + 1 > len(data):
            break  # the rest of this frame is still on its way
        if kind == _METHOD_FRAME:
            class_id, method_id = struct.unpack_from(">HH", data, at + 7)
            methods.append(SentMethod(channel, class_id, method_id, data[at + 11 : at + 7 + size]))
        at += 7 + size + 1
    return methods
