"""The base of the content-property classes (``basic``, ``file``, ``stream``, ``tunnel``).

Each content class of each version has a subclass in a module of ``generated/``
(``generated.spec_0_9_1.BasicProperties``), written by ``python -m amqp_protocol.generate``.
Absent properties are class attributes (None): an instance holds only the properties it was
given, so decoding a content with no properties (the common case) sets nothing at all.

A content header carries class-id, weight, body size, then property-flags words: bit 15 of
the first word is the first property, bit 1 the fifteenth; bit 0 set means another flags
word follows (continuation). Absent properties are ``None``; ``timestamp`` is an int.

``__init__``, ``encode_header`` and ``decode`` are generated per class (see ``codegen``):
each property is one ``if`` on its flag bit, so an encode or decode costs only the
properties present.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from . import values

if TYPE_CHECKING:
    from .spec import FieldDef

_WORD = struct.Struct(">H")


class Properties:
    """Base of the generated property classes."""

    __slots__ = ()
    class_id: ClassVar[int]
    class_name: ClassVar[str]
    property_defs: ClassVar[tuple[FieldDef, ...]]
    field_names: ClassVar[tuple[str, ...]]

    def __init__(self, **props: Any) -> None:  # each generated class has its own
        raise TypeError("instantiate a generated properties class, not Properties")

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.field_names}

    def present(self) -> dict[str, Any]:
        return {k: v for k, v in self.fields().items() if v is not None}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(tuple(map(repr, self.fields().values())))

    def __repr__(self) -> str:
        return f"<{self.class_name} properties {self.present()!r}>"

    def encode_header(self, body_size: int) -> bytes:
        """The payload of a content header frame for a body of ``body_size`` bytes."""
        raise NotImplementedError

    def encode_list(self) -> bytes:
        """The property flags and property list: a content header's payload after its
        class-id, weight and body size (independent of the body, so a publisher may encode
        it once for many messages; see ``Connection.send_encoded_contents``)."""
        raise NotImplementedError

    @classmethod
    def decode(cls, data: bytes, offset: int) -> Properties:
        """Decode the property-flags words and the property list at ``offset``; the list
        must end where ``data`` ends."""
        raise NotImplementedError


def names_given(properties: Iterable[Properties]) -> set[str]:
    """The names of the properties set in any of ``properties``, in one C-level pass: an
    instance holds only the properties it was given (absent ones are the class's None), so
    a column of a property no instance has need not be read from any of them."""
    return set().union(*map(vars, properties))


def read_flag_words(data: bytes, offset: int, masks: tuple[int, ...]) -> tuple[list[int], int]:
    """The flags words at ``offset`` (as many as ``masks``, missing ones 0) and the offset
    after them. ``masks`` holds the bits each word may have set; a flag for a property the
    class does not define is a syntax error (its value could not be skipped)."""
    words: list[int] = []
    while True:
        (word,) = _WORD.unpack_from(data, offset)
        offset += 2
        index = len(words)
        if word & ~(masks[index] if index < len(masks) else 1) & 0xFFFE:
            raise values.syntax_error("property flag set for a property the class lacks")
        words.append(word)
        if not word & 1:
            break
    words += [0] * (len(masks) - len(words))
    return words[: len(masks)], offset
