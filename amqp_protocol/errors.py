"""Typed AMQP errors, one class per reply-code constant of the specs.

The classes are generated from the ``<constant>`` elements of the spec files (0-9 and
0-9-1 with RabbitMQ's extensions together cover every code): ``not-found`` (404) becomes
``NotFound``, ``syntax-error`` (502) becomes ``SyntaxError_`` (so it does not shadow the
builtin). Constants marked ``hard-error`` close the connection; the others close a channel.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from importlib import resources
from typing import Any


class AMQPError(Exception):
    """An AMQP exception as a close method carries it: reply code, text and culprit method."""

    reply_code: int = 0
    name: str = "amqp-error"
    hard: bool = True

    def __init__(
        self,
        reply_text: str = "",
        class_id: int = 0,
        method_id: int = 0,
        *,
        reply_code: int | None = None,
    ) -> None:
        if reply_code is not None:
            self.reply_code = reply_code
        self.reply_text = reply_text or self.name.upper().replace("-", "_")
        self.class_id = class_id
        self.method_id = method_id
        super().__init__(f"{self.reply_code} {self.reply_text}")

    def with_culprit(self, class_id: int, method_id: int) -> AMQPError:
        """Name the method that caused the error (the close carries its ids)."""
        self.class_id, self.method_id = class_id, method_id
        return self


_BY_CODE: dict[int, type[AMQPError]] = {}
_BUILTIN_CLASH = {"SyntaxError", "NotImplemented", "ConnectionError"}


def _class_name(constant: str) -> str:
    name = "".join(part.capitalize() for part in constant.replace(" ", "-").split("-"))
    return name + "_" if name in _BUILTIN_CLASH else name


def _generate() -> None:
    """Create one AMQPError subclass per error constant found in the shipped spec files."""
    for filename in ("amqp0-9-1-rabbitmq-extended.stripped.xml", "amqp0-9.xml"):
        text = resources.files(__package__).joinpath("spec").joinpath(filename).read_bytes()
        for constant in ET.fromstring(text).findall("constant"):
            code = int(constant.get("value", "0"))
            xml_name = constant.get("name", "")
            # Reply codes are 3xx-5xx; the other constants are frame types and sizes.
            if not 300 <= code < 600 or code in _BY_CODE:
                continue
            # 0-9 lists not-delivered/no-route without a class: soft, channel-level errors.
            hard = constant.get("class") == "hard-error"
            cls_name = _class_name(xml_name)
            cls = type(cls_name, (AMQPError,), {"reply_code": code, "name": xml_name, "hard": hard})
            cls.__module__ = __name__
            cls.__doc__ = f"AMQP {code} {xml_name} ({'connection' if hard else 'channel'} error)."
            _BY_CODE[code] = cls
            globals()[cls_name] = cls


_generate()


def error_for_code(code: int) -> type[AMQPError]:
    """The error class of a reply code; unknown codes get a plain hard AMQPError subclass."""
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = type(f"AMQPError{code}", (AMQPError,), {"reply_code": code, "hard": code >= 500})
        _BY_CODE[code] = cls
    return cls


def __getattr__(name: str) -> Any:
    # Only reached for names _generate() did not create: a typo, not a missing constant.
    raise AttributeError(f"module {__name__!r} has no error class {name!r}")


FrameError: type[AMQPError]
SyntaxError_: type[AMQPError]
CommandInvalid: type[AMQPError]
ChannelError: type[AMQPError]
UnexpectedFrame: type[AMQPError]
ResourceError: type[AMQPError]
NotAllowed: type[AMQPError]
NotImplemented_: type[AMQPError]
InternalError: type[AMQPError]
ConnectionForced: type[AMQPError]
InvalidPath: type[AMQPError]
AccessRefused: type[AMQPError]
NotFound: type[AMQPError]
ResourceLocked: type[AMQPError]
PreconditionFailed: type[AMQPError]
ContentTooLarge: type[AMQPError]
NoRoute: type[AMQPError]
NoConsumers: type[AMQPError]
NotDelivered: type[AMQPError]
