"""The sans-IO AMQP protocol layer shared by the broker and the client.

Method, content-property and error classes, and each version's ``Spec`` (constants,
domains, definitions), are generated from the spec XML files in ``spec/`` into the
checked-in modules of ``generated/`` (``python -m amqp_protocol.generate``): importing the
package reads no XML. See ``docs/architecture.md`` for the API.
"""

from typing import TYPE_CHECKING

from . import errors, events, frames, values, versions
from .connection import Connection
from .methods import Method
from .properties import Properties
from .spec import Spec
from .versions import SPEC_0_9_1

if TYPE_CHECKING:
    from .versions import ALL_SPECS, KNOWN_SPECS, SPEC_0_8, SPEC_0_9, SPEC_0_10


def __getattr__(name: str) -> object:
    """The versions other than 0-9-1, loaded on first use (see ``versions``)."""
    return getattr(versions, name)


__all__ = [
    "ALL_SPECS",
    "KNOWN_SPECS",
    "SPEC_0_8",
    "SPEC_0_9",
    "SPEC_0_9_1",
    "SPEC_0_10",
    "Connection",
    "Method",
    "Properties",
    "Spec",
    "errors",
    "events",
    "frames",
    "values",
]
