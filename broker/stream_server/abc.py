"""What a stream-protocol connection uses of its listener, typed structurally
(``StreamListener`` is one), so that the connection imports no listener module back."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..config import BrokerConfig
    from ..model.vhost import VirtualHost
    from ..server.abc import Server
    from ..streams.queue import StreamQueue


class Listener(Protocol):
    @property
    def server(self) -> Server: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def frame_max(self) -> int: ...

    @property
    def connections(self) -> set[Any]: ...

    def advertised(self, transport: asyncio.BaseTransport | None) -> tuple[str, int]:
        """The host and port a client on ``transport`` reaches the listener at."""
        ...

    def peer_common_name(self, transport: asyncio.BaseTransport | None) -> str | None: ...


class Session(Protocol):
    """What a command uses of its open connection: its virtual host and user's rights."""

    @property
    def vhost(self) -> VirtualHost | None: ...

    def allowed(self, kind: str, name: str) -> bool:
        """The user's ``kind`` permission ("configure", "write", "read") on queue ``name``."""
        ...

    def stream(self, name: str) -> StreamQueue | None:
        """The stream queue ``name`` of the virtual host, if there is one."""
        ...
