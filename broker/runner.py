"""``Broker``: the broker on a background thread of the calling process (tests, notebooks)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from .config import BrokerConfig
from .server.app import BrokerServer

_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0

T = TypeVar("T")


def load_config(config: BrokerConfig | Mapping[str, Any] | str | Path | None) -> BrokerConfig:
    if config is None:
        return BrokerConfig()
    if isinstance(config, BrokerConfig):
        return config
    if isinstance(config, (str, Path)):
        return BrokerConfig.from_toml(config)
    return BrokerConfig.from_dict(dict(config))


class Broker:
    """An in-process broker::

    with Broker() as b:          # port=0: an ephemeral port
        connect(b.url)
        requests.get(b.management_url + "api/overview", auth=("guest", "guest"))

    The management listener (HTTP API, console, /metrics) runs on an ephemeral port too
    (``management_port``), unless the config's ``management.enabled`` is false.

    With a ``[tls]`` section in the config, an amqps listener runs too (``tls_port``,
    ``tls_url``); its port 0 also means an ephemeral port.

    RabbitMQ's stream protocol is served on ``stream_port`` (0, the default: an ephemeral
    port; None: no listener), on the same streams: ``stream_url``.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        config: BrokerConfig | Mapping[str, Any] | str | Path | None = None,
        data_dir: str | None = None,
        management_port: int = 0,
        stream_port: int | None = 0,
    ) -> None:
        self.config = load_config(config)
        self.config.host, self.config.port = host, port
        self.config.stream_port = stream_port
        self.config.management.port = management_port
        if data_dir is not None:
            self.config.data_dir = data_dir
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: BrokerServer | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the broker is not running")
        return self._server.port

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@{self.config.host}:{self.port}/%2F"

    @property
    def tls_port(self) -> int:
        if self._server is None or not self._server.tls_port:
            raise RuntimeError("the broker has no amqps listener running")
        return self._server.tls_port

    @property
    def tls_url(self) -> str:
        return f"amqps://guest:guest@{self.config.host}:{self.tls_port}/%2F"

    @property
    def stream_port(self) -> int:
        """The stream protocol listener's bound port."""
        if self._server is None or not self._server.streams.port:
            raise RuntimeError("the broker has no stream protocol listener running")
        return self._server.streams.port

    @property
    def stream_tls_port(self) -> int:
        """The stream protocol's TLS listener's bound port (``[tls]`` ``stream_port``)."""
        if self._server is None or not self._server.streams.tls_port:
            raise RuntimeError("the broker has no stream protocol TLS listener running")
        return self._server.streams.tls_port

    @property
    def stream_url(self) -> str:
        """``rabbitmq-stream://guest:guest@host:port/%2F``, the URI stream clients take."""
        return f"rabbitmq-stream://guest:guest@{self.config.host}:{self.stream_port}/%2F"

    @property
    def management_url(self) -> str:
        """The management listener's base URL (``http://127.0.0.1:PORT/``)."""
        if self._server is None or self._server.management is None:
            raise RuntimeError("the broker has no management listener running")
        return self._server.management.url

    @property
    def server(self) -> BrokerServer:
        """The running server, for tests and tools that look inside it (its ``vhosts``, the
        model; ``config``; ``connections``; ``management``). Its state belongs to the
        broker's event loop: change it only in a coroutine given to ``run_on_loop``."""
        if self._server is None:
            raise RuntimeError("the broker is not running")
        return self._server

    def run_on_loop(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        """Run ``coro`` on the broker's event loop and return its result (or raise its
        error, or ``TimeoutError`` after ``timeout`` seconds)."""
        if self._loop is None or self._server is None:
            coro.close()
            raise RuntimeError("the broker is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self) -> Broker:
        if self._thread is not None:
            raise RuntimeError("the broker is already running")
        self._started.clear()
        self._thread = threading.Thread(target=self._run, name="amqp-broker", daemon=True)
        self._thread.start()
        if not self._started.wait(_START_TIMEOUT):
            raise RuntimeError(f"the broker did not start within {_START_TIMEOUT}s")
        if self._error is not None:
            self._thread.join(_STOP_TIMEOUT)
            self._thread = None
            raise self._error
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            server = self._server = BrokerServer(self.config, loop)
            loop.run_until_complete(server.start())
        except BaseException as e:  # reported to start()'s caller
            self._error = e
            if self._server is not None:  # it opened the store: release it
                loop.run_until_complete(self._server.shutdown())
            self._started.set()
            loop.close()
            return
        self._started.set()
        try:
            loop.run_forever()
            loop.run_until_complete(server.shutdown())
        finally:
            loop.close()

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_STOP_TIMEOUT)
        self._thread = None
        self._server = None

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
