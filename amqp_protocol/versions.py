"""The AMQP versions this package speaks, loaded once, and which protocol headers name them."""

from __future__ import annotations

from collections.abc import Iterable

from .generated import spec_0_8, spec_0_9, spec_0_9_1, spec_0_10
from .spec import Spec, load_spec

#: 0-9-1 with RabbitMQ's extensions (see ``generate.VERSIONS``).
SPEC_0_9_1: Spec = load_spec(spec_0_9_1.SOURCES, spec_0_9_1.METHODS, spec_0_9_1.PROPERTIES)
SPEC_0_9: Spec = load_spec(spec_0_9.SOURCES, spec_0_9.METHODS, spec_0_9.PROPERTIES)
SPEC_0_8: Spec = load_spec(spec_0_8.SOURCES, spec_0_8.METHODS, spec_0_8.PROPERTIES)
#: The transitional 0-10 working draft: protocol header ``AMQP 1 1 0 10``.
SPEC_0_10: Spec = load_spec(spec_0_10.SOURCES, spec_0_10.METHODS, spec_0_10.PROPERTIES)
#: What a server accepts, preferred first: the versions the broker has a dialect for.
ALL_SPECS: tuple[Spec, ...] = (SPEC_0_9_1, SPEC_0_9, SPEC_0_8)
#: Every version this package generates, the 0-10 draft included: a server that is given
#: these as ``supported`` negotiates the draft too.
KNOWN_SPECS: tuple[Spec, ...] = (*ALL_SPECS, SPEC_0_10)


def spec_for_header(header: bytes, specs: Iterable[Spec] = KNOWN_SPECS) -> Spec | None:
    """The version among ``specs`` that a client's protocol header asks for: by the header
    its spec states or by one of its ``header_aliases`` (py-amqplib's ``AMQP 1 1 9 1`` is
    0-8). None if the header names none of them."""
    return next(
        (s for s in specs if header == s.protocol_header or header in s.header_aliases), None
    )
