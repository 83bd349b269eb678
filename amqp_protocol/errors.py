"""Typed AMQP errors, one class per reply-code constant of the specs.

The classes are generated from the ``<constant>`` elements of the spec files (0-9 and
0-9-1 with RabbitMQ's extensions together cover every code) into ``generated/reply_codes.py``
and re-exported here: ``not-found`` (404) is ``NotFound``, ``syntax-error`` (502)
``SyntaxError_`` (so that it does not shadow the builtin). Constants marked ``hard-error``
close the connection; the others close a channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .amqp_error import AMQPError
from .generated.reply_codes import *  # noqa: F403
from .generated.reply_codes import BY_CODE

if TYPE_CHECKING:
    from .methods import Method

_BY_CODE: dict[int, type[AMQPError]] = dict(BY_CODE)


def error_for_code(code: int) -> type[AMQPError]:
    """The error class of a reply code; unknown codes get a plain hard AMQPError subclass."""
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = type(f"AMQPError{code}", (AMQPError,), {"reply_code": code, "hard": code >= 500})
        _BY_CODE[code] = cls
    return cls


def protocol_error(code: int, text: str, method: Method | None = None) -> AMQPError:
    """An error of reply code ``code``, naming ``method`` (when given) as its culprit."""
    err = error_for_code(code)(text)
    if method is not None:
        err.with_culprit(method.CLASS_ID, method.METHOD_ID)
    return err
