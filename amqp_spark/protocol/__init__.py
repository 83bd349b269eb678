"""The sans-IO AMQP protocol layer shared by the broker and the client.

Method and property classes are generated from the spec XML files in ``spec/`` when this
package is imported; see ``docs/architecture.md`` for the API.
"""

from . import errors, events, frames
from .connection import Connection
from .methods import Method
from .properties import Properties
from .spec import Spec, load_spec

SPEC_0_9_1: Spec = load_spec("amqp0-9-1-rabbitmq-extended.stripped.xml")
SPEC_0_9: Spec = load_spec("amqp0-9.xml")
SPEC_0_8: Spec = load_spec("amqp0-8.stripped.xml")
#: What a server accepts, preferred first.
ALL_SPECS: tuple[Spec, ...] = (SPEC_0_9_1, SPEC_0_9, SPEC_0_8)

__all__ = [
    "ALL_SPECS",
    "SPEC_0_8",
    "SPEC_0_9",
    "SPEC_0_9_1",
    "Connection",
    "Method",
    "Properties",
    "Spec",
    "errors",
    "events",
    "frames",
    "load_spec",
]
