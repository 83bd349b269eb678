"""The client's exceptions. Everything it raises on purpose derives from ``ClientError``."""

from __future__ import annotations

from collections.abc import Sequence

from amqp_protocol import errors

from .delivery import ReturnedMessage


class ClientError(Exception):
    """Base of the client's errors."""


class ClientTimeout(ClientError, TimeoutError):
    """A bounded wait ran out (a reply, a confirm, room to publish, an unblock)."""


class _Closed(ClientError):
    """The server (or the network) ended a channel or connection; the close's reply fields.

    ``error`` is the protocol layer's typed error for the reply code (``errors.NotFound`` for
    404, ...), or None when no close method was exchanged (the socket died: code 0).
    """

    def __init__(
        self, reply_code: int = 0, reply_text: str = "", class_id: int = 0, method_id: int = 0
    ) -> None:
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.class_id = class_id
        self.method_id = method_id
        self.error: errors.AMQPError | None = (
            errors.error_for_code(reply_code)(reply_text, class_id, method_id)
            if reply_code
            else None
        )
        culprit = f" (caused by method {class_id}.{method_id})" if class_id else ""
        code = f"{reply_code} " if reply_code else ""
        super().__init__(f"{code}{reply_text}{culprit}")


class ConnectionClosed(_Closed):
    """The connection is closed: by the server, by us, or because the network failed."""


class AMQPConnectionError(ConnectionClosed):
    """The connection could not be established: refused, timed out, TLS, authentication."""


class NoNodeAnswered(AMQPConnectionError):
    """None of several addresses could be connected to; ``failures`` holds each address
    (``host:port``) tried and its error, in the order tried."""

    def __init__(self, failures: Sequence[tuple[str, BaseException]]) -> None:
        self.failures = list(failures)
        why = "; ".join(f"{address}: {error}" for address, error in self.failures)
        super().__init__(0, f"no node answered ({len(self.failures)} tried): {why}")


class ChannelClosed(_Closed):
    """The server closed the channel (a soft error such as 404 NOT_FOUND), or we did."""


class ConsumerCancelled(ClientError):
    """The server cancelled consumers of the channel (basic.cancel: their queue went away)."""

    def __init__(self, consumer_tags: Sequence[str]) -> None:
        self.consumer_tags = list(consumer_tags)
        super().__init__(f"the server cancelled consumer(s) {', '.join(self.consumer_tags)}")


class PublishNacked(ClientError):
    """The broker refused messages published in confirm mode (basic.nack)."""

    def __init__(self, sequence_numbers: Sequence[int], returned: int = 0) -> None:
        self.sequence_numbers = list(sequence_numbers)
        self.count = len(self.sequence_numbers)
        self.returned = returned
        shown = ", ".join(map(str, self.sequence_numbers[:10]))
        more = ", ..." if self.count > 10 else ""
        also = f"; {returned} more were returned unroutable" if returned else ""
        super().__init__(f"{self.count} message(s) nacked, sequence numbers {shown}{more}{also}")


class PublishReturned(ClientError):
    """Mandatory messages came back unroutable (basic.return); ``returns`` holds them."""

    def __init__(self, returns: Sequence[ReturnedMessage]) -> None:
        self.returns = list(returns)
        self.count = len(self.returns)
        first = self.returns[0]
        self.reply_code = first.reply_code
        self.reply_text = first.reply_text
        super().__init__(
            f"{self.count} message(s) returned; first: {first.reply_code} {first.reply_text} "
            f"(exchange {first.exchange!r}, routing key {first.routing_key!r})"
        )
