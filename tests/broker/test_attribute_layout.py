"""The objects every message passes through keep their attributes where CPython 3.11 reads
them fastest.

CPython 3.11 stores an instance's attributes as inline values, their keys shared by the
class, as long as the class's instances set at most 29 distinct attributes (measured: with a
30th, every instance's attributes become a dict). Inline, an attribute load is specialised to
an indexed read (``LOAD_ATTR_INSTANCE_VALUE``); as a dict, to a hashed lookup
(``LOAD_ATTR_WITH_HINT``; reading ``__dict__`` or ``vars()`` makes the dict too, so the
test looks at the specialised load first). A connection with 32 attributes cost publishing
~2% more CPU instructions per message
(``python -m benchmarks.ab.broker_work --adaptive before off``).
"""

from __future__ import annotations

import dis
import sys
from typing import Any

import pika

from broker import Broker

#: The most attributes whose keys CPython 3.11 shares (see the module docstring).
INLINE_ATTRIBUTES_MAX = 29


def _specialised_load(obj: object, attribute: str) -> str:
    """The form CPython's specialising interpreter gives a load of ``obj.attribute``."""
    namespace: dict[str, Any] = {}
    exec(f"def load(o):\n    return o.{attribute}\n", namespace)  # a fresh code object
    for _ in range(64):
        namespace["load"](obj)
    forms = dis.get_instructions(namespace["load"], adaptive=True)  # type: ignore[call-arg]
    return next(i.opname for i in forms if i.opname.startswith("LOAD_ATTR"))


def test_connections_and_channels_keep_their_attributes_inline() -> None:
    with (
        Broker() as b,
        pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", b.port)) as client,
    ):
        client.channel()
        (conn,) = b.server.connections
        (channel,) = conn.channels.values()
        for obj, attribute in ((conn, "transport"), (channel, "conn")):
            if sys.version_info[:2] == (3, 11):  # before vars(), which makes the dict
                assert _specialised_load(obj, attribute) == "LOAD_ATTR_INSTANCE_VALUE"
            attributes = sorted(vars(obj))
            assert len(attributes) <= INLINE_ATTRIBUTES_MAX, (
                f"{type(obj).__name__} has {len(attributes)} attributes: {attributes}"
            )
