"""A loopback TCP forwarder that counts the bytes a client sends to the server behind it:
how a test sees, without touching the client, whether a call went to the broker."""

from __future__ import annotations

import socket
import threading
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit


class CountingProxy:
    """Forwards every connection made to ``url`` (its ``amqp://`` URL) to ``target``."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5672)
        self._listener = socket.create_server(("127.0.0.1", 0))
        port = self._listener.getsockname()[1]
        netloc = parts.netloc.rsplit("@", 1)[0] + f"@127.0.0.1:{port}"
        self.url = urlunsplit(parts._replace(netloc=netloc))
        self.sent_to_server = 0  #: bytes forwarded from clients to the server
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(self._target, timeout=10)
            server.settimeout(None)
            self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, counted: bool) -> None:
        try:
            while data := src.recv(65536):
                if counted:
                    with self._lock:
                        self.sent_to_server += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                sock.close()

    def close(self) -> None:
        self._listener.close()
        for sock in self._sockets:
            sock.close()

    def __enter__(self) -> CountingProxy:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
