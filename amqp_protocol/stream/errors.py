"""The stream protocol's errors: each carries the response code a server answers with.

A server that catches a :class:`StreamProtocolError` from its connection sends a ``Close``
with the error's ``code`` and closes that connection alone.
"""

from __future__ import annotations

from amqp_protocol.generated.stream_codes import ResponseCode

__all__ = ["FrameTooLarge", "MalformedFrame", "StreamProtocolError", "UnexpectedCommand"]


class StreamProtocolError(Exception):
    """A violation of the stream protocol; ``code`` is its response code."""

    code: ResponseCode = ResponseCode.INTERNAL_ERROR

    def __init__(self, message: str, code: ResponseCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class MalformedFrame(StreamProtocolError):
    """A frame that does not decode: unknown key or version, truncated, or bytes left over."""

    code = ResponseCode.UNKNOWN_FRAME


class FrameTooLarge(StreamProtocolError):
    """A frame over the negotiated maximum frame size."""

    code = ResponseCode.FRAME_TOO_LARGE


class UnexpectedCommand(StreamProtocolError):
    """A command the connection's state does not allow (e.g. Subscribe before Open)."""

    code = ResponseCode.PRECONDITION_FAILED
