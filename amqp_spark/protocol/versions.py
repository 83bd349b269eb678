"""The AMQP versions this package speaks, loaded once."""

from __future__ import annotations

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
