"""The AMQP versions this package speaks, each loaded once (the ``SPEC`` of its generated
module), and which protocol headers name them.

0-9-1 (what clients speak) is loaded with this module; 0-9, 0-8 and the 0-10 draft only when
first named (``SPEC_0_9``, ``ALL_SPECS``, ...): the client, and so every Python process Spark
starts for the connector, speaks 0-9-1 alone, and importing the other three generated
modules cost each of them ~0.27 s of CPU (``python -X importtime``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .generated import spec_0_9_1
from .spec import Spec

#: 0-9-1 with RabbitMQ's extensions (see ``codegen.modules.VERSIONS``).
SPEC_0_9_1: Spec = spec_0_9_1.SPEC

if TYPE_CHECKING:  # loaded by ``__getattr__`` on first use
    SPEC_0_9: Spec
    SPEC_0_8: Spec
    #: The transitional 0-10 working draft: protocol header ``AMQP 1 1 0 10``.
    SPEC_0_10: Spec
    #: What a server accepts, preferred first: the versions the broker has a dialect for.
    ALL_SPECS: tuple[Spec, ...]
    #: Every version this package generates, the 0-10 draft included: a server that is
    #: given these as ``supported`` negotiates the draft too.
    KNOWN_SPECS: tuple[Spec, ...]

#: The versions loaded on first use, by the name of their generated module.
_LATER = {"SPEC_0_9": "spec_0_9", "SPEC_0_8": "spec_0_8", "SPEC_0_10": "spec_0_10"}


@functools.cache
def _load(module: str) -> Spec:
    spec: Spec = importlib.import_module(f"{__package__}.generated.{module}").SPEC
    return spec


@functools.cache
def _all_specs() -> tuple[Spec, ...]:
    return (SPEC_0_9_1, _load("spec_0_9"), _load("spec_0_8"))


@functools.cache
def _known_specs() -> tuple[Spec, ...]:
    return (*_all_specs(), _load("spec_0_10"))


def __getattr__(name: str) -> object:
    if name in _LATER:
        return _load(_LATER[name])
    if name == "ALL_SPECS":
        return _all_specs()
    if name == "KNOWN_SPECS":
        return _known_specs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def spec_for_header(header: bytes, specs: Iterable[Spec] | None = None) -> Spec | None:
    """The version among ``specs`` (every version by default) that a client's protocol header
    asks for: by the header its spec states or by one of its ``header_aliases``
    (py-amqplib's ``AMQP 1 1 9 1`` is 0-8). None if the header names none of them."""
    return next(
        (
            s
            for s in (_known_specs() if specs is None else specs)
            if header == s.protocol_header or header in s.header_aliases
        ),
        None,
    )
