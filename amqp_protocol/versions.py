"""The AMQP versions this package speaks, loaded once, and which protocol headers name them."""

from __future__ import annotations

from collections.abc import Iterable

from .spec import Spec, load_spec

#: 0-9-1 with RabbitMQ's extensions: the stripped XML plus what it lacks (connection.blocked,
#: update-secret; see spec/rabbitmq-0-9-1-extensions.xml).
SPEC_0_9_1: Spec = load_spec(
    "amqp0-9-1-rabbitmq-extended.stripped.xml", "rabbitmq-0-9-1-extensions.xml"
)
SPEC_0_9: Spec = load_spec("amqp0-9.xml")
SPEC_0_8: Spec = load_spec("amqp0-8.stripped.xml")
#: What a server accepts, preferred first.
ALL_SPECS: tuple[Spec, ...] = (SPEC_0_9_1, SPEC_0_9, SPEC_0_8)


def spec_for_header(header: bytes, specs: Iterable[Spec] = ALL_SPECS) -> Spec | None:
    """The version among ``specs`` that a client's protocol header asks for: by the header
    its spec states or by one of its ``header_aliases`` (py-amqplib's ``AMQP 1 1 9 1`` is
    0-8). None if the header names none of them."""
    return next(
        (s for s in specs if header == s.protocol_header or header in s.header_aliases), None
    )
