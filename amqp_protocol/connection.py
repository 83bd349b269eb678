"""A sans-IO AMQP connection: bytes in, events out; methods and messages in, bytes out.

The same class serves both sides. It knows the framing rules, the protocol-header
negotiation, content assembly and the channel life cycle, and enforces them with the spec's
reply codes; what a method *means* (authentication, queues, ...) is the application's job.
The order of the connection class's methods (start ... open-ok, close) is ``handshake.py``'s.

``Connection`` is made of one part per concern, each in its module:

- ``frame_reader.FrameReader``: bytes in, frames out (negotiation, the receive buffer);
- ``content_assembly.ContentAssembly``: a method's header and body frames into one event;
- ``frame_writer.FrameWriter``: methods and contents out, as the bytes of their frames;
- ``life_cycle.ChannelLifeCycle``: which channels are open or closing, and what that allows.

The parts are base classes of one object rather than objects of their own: the frame loop
asks the life cycle and content assembly about every frame, and as methods of one instance
these calls cost what they cost when the parts were one class (the broker's work per
message is measured with ``benchmarks.broker_work``). Each part declares the state it reads;
``Connection.__init__`` sets it all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from . import versions
from .frame_reader import FrameReader
from .frame_writer import FrameWriter
from .spec import Spec

#: frame-max used until tuning, large enough for any client's start-ok.
DEFAULT_FRAME_MAX = 131072


class Connection(FrameReader, FrameWriter):
    """Protocol state of one AMQP connection, for either side."""

    def __init__(
        self,
        role: Literal["client", "server"],
        spec: Spec | None = None,
        *,
        supported: Iterable[Spec] = (),
        frame_max: int = DEFAULT_FRAME_MAX,
        max_body_size: int | None = None,
    ) -> None:
        """``spec`` is required for a client. A server negotiates among ``supported`` (the
        first is its preferred version, offered to a peer whose header it does not know);
        by default ``(spec,)`` when a spec is given, else every version of ``ALL_SPECS``."""
        if role == "client" and spec is None:
            raise ValueError("a client connection needs a spec")
        self.role = role
        self.spec = spec
        self._offered = tuple(supported) or ((spec,) if spec is not None else versions.ALL_SPECS)
        self.frame_max = frame_max
        self.channel_max = 65535
        self.max_body_size = max_body_size
        self.open_channels = set()
        self._closing_channels = set()
        self._partials = {}
        self.columnar = set()
        self._buffer = bytearray()
        self._wanted = 0
        self._awaiting_header = role == "server"
        self._may_get_header = role == "client"
        self.closing = False
        self.closed = False
