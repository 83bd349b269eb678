"""AMQP 0-9-1 with RabbitMQ's extensions, the dialect of every 0-9-1 client: the core's
handlers (which refuse basic.publish's immediate flag, as RabbitMQ does), with the refusals
RabbitMQ answers where older versions' rules differ."""

from __future__ import annotations

from amqp_protocol import SPEC_0_9_1, errors
from amqp_protocol.generated.any_version import ExchangeDeclare

from ..model.exchanges import EXCHANGE_TYPES
from .abc import Channel
from .core_handlers import CORE_CONTENT_HANDLERS, CORE_HANDLERS
from .dialect import Dialect


def _exchange_declare(ch: Channel, m: ExchangeDeclare) -> None:
    """exchange.declare answers of RabbitMQ 4 (measured on 4.0.5) where 0-9's spec rules,
    kept for 0-9 and 0-8 in the model, say otherwise: the default exchange is refused even
    to a passive declare (403), an unknown type closes the channel (406; RabbitMQ 3.10 and
    0-9's rule exchange.declare.type:support close the connection with 503)."""
    if m.exchange == "":
        raise errors.AccessRefused(
            "ACCESS_REFUSED - operation not permitted on the default exchange"
        )
    if not m.passive and m.type not in EXCHANGE_TYPES:
        raise errors.PreconditionFailed(f"PRECONDITION_FAILED - unknown exchange type '{m.type}'")
    ch.declare_exchange(m, durable=m.durable, auto_delete=m.auto_delete)


class RabbitMQDialect(Dialect):
    """0-9-1 as RabbitMQ speaks it."""

    unbind_missing_is_ok = True
    refuses_unlimited_channels = True  # RabbitMQ 4 (measured on 4.0.5)
    refuses_classic_delivery_limit = True  # RabbitMQ 3.10 and 4
    syntax_errors_are_frame_errors = True

    def __init__(self) -> None:
        super().__init__(
            SPEC_0_9_1,
            {**CORE_HANDLERS, "exchange.declare": _exchange_declare},
            CORE_CONTENT_HANDLERS,
        )
