"""The message class's references, as 0-9 and the transitional 0-10 draft share them: content
staged on a channel under a name (message.open, message.append, message.close), held by
each dialect's channel state as ``references``."""

from __future__ import annotations

from amqp_protocol import errors


def reference_name(value: bytes | str) -> str:
    """A reference name (a longstr on the wire)."""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def open_reference(references: dict[str, bytearray], name: str, data: bytes) -> None:
    """Open reference ``name`` holding ``data`` (a resumed checkpoint, or nothing)."""
    if name in references:
        raise errors.PreconditionFailed(f"PRECONDITION_FAILED - reference '{name}' is open")
    references[name] = bytearray(data)


def open_data(references: dict[str, bytearray], name: str) -> bytearray:
    """The content of open reference ``name``."""
    data = references.get(name)
    if data is None:
        raise errors.NotFound(f"NOT_FOUND - reference '{name}' is not open")
    return data
