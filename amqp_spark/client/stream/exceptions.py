"""The stream client's errors: each names the broker's address (never a password) and, for
a refusal, the protocol's response code by name."""

from __future__ import annotations

from collections.abc import Sequence

from amqp_protocol.generated.stream_codes import ResponseCode

from ..exceptions import ClientError


class StreamError(ClientError):
    """The broker refused a request, or the connection ended. ``code`` is the response code
    the broker answered or closed with (None when none was exchanged: the socket died, a
    wait ran out); ``address`` is ``host:port``."""

    def __init__(self, address: str, message: str, code: int | None = None) -> None:
        self.address = address
        self.code = _known(code)
        named = f" ({self.code.name})" if isinstance(self.code, ResponseCode) else ""
        unnamed = f" (response code {code:#06x})" if code is not None and not named else ""
        super().__init__(f"{address}: {message}{named}{unnamed}")


class StreamConnectionError(StreamError):
    """The connection could not be opened, or it ended: refused, timed out, authentication,
    virtual host access, a protocol error, the broker closed it."""


class StreamNoNodeAnswered(StreamConnectionError):
    """None of several addresses could be connected to; ``failures`` holds each address
    tried and its error, in the order tried."""

    def __init__(self, failures: Sequence[tuple[str, BaseException]]) -> None:
        self.failures = list(failures)
        why = "; ".join(str(error) for _, error in self.failures)
        addresses = ", ".join(address for address, _ in self.failures)
        super().__init__(addresses, f"no node answered ({len(self.failures)} tried): {why}")


class StreamTimeout(StreamError, TimeoutError):
    """A bounded wait ran out: a response, a chunk."""


def _known(code: int | None) -> ResponseCode | int | None:
    if code is None:
        return None
    try:
        return ResponseCode(code)
    except ValueError:
        return code
