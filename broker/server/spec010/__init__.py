"""The transitional AMQP 0-10 draft (``SPEC_0_10``, header ``AMQP 1 1 0 10``) on the server:
the dialect ``Spec010Dialect``.

Its channels use the same virtual hosts, exchanges, queues and messages as 0-9-1's and 0-9's.
The handlers are the core's where the draft's method is 0-9-1's (channel.close/flow,
queue.purge/delete, basic.ack/reject), and this package's where the draft differs
(``declarations``, ``basic``). A method with no handler is answered 540 not-implemented,
naming it (``ServerChannel.handle``); docs/conformance-0-10.md lists what is implemented.
"""

from __future__ import annotations

from amqp_protocol import SPEC_0_10

from ..channel import CORE_HANDLERS
from ..dialect import ChannelHandler, Dialect
from . import basic, declarations

#: The core's handlers that answer the draft's method as the draft asks.
_FROM_CORE = (
    "channel.close",
    "channel.close-ok",
    "channel.flow",
    "channel.flow-ok",
    "queue.purge",
    "queue.delete",
    "basic.ack",
    "basic.reject",
)


def _channel_handlers() -> dict[str, ChannelHandler]:
    table = {name: CORE_HANDLERS[name] for name in _FROM_CORE}
    table.update(declarations.HANDLERS)
    table.update(basic.HANDLERS)
    return table


class Spec010Dialect(Dialect):
    """The transitional 0-10 draft."""

    def __init__(self) -> None:
        super().__init__(SPEC_0_10, _channel_handlers(), {"basic.publish": basic.basic_publish})

    def channel_state(self) -> basic.Prefetch:
        return basic.Prefetch()
