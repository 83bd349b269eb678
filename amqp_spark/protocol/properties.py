"""Content-property classes (``basic``, ``file``, ``stream``, ``tunnel``), generated from a Spec.

A content header carries class-id, weight, body size, then property-flags words: bit 15 of
the first word is the first property, bit 1 the fifteenth; bit 0 set means another flags
word follows (continuation). Absent properties are ``None``; ``timestamp`` is an int.
"""

from __future__ import annotations

import struct
from typing import Any, ClassVar

from . import values
from .spec import ClassDef, FieldDef, Spec, camel

_HEADER = struct.Struct(">HHQ")
_WORD = struct.Struct(">H")
_FIXED = {"octet": struct.Struct(">B"), "short": struct.Struct(">H"), "long": struct.Struct(">I"),
          "longlong": struct.Struct(">Q"), "timestamp": struct.Struct(">Q")}


class Properties:
    """Base of the generated property classes."""

    __slots__ = ()
    class_id: ClassVar[int]
    class_name: ClassVar[str]
    property_defs: ClassVar[tuple[FieldDef, ...]]
    field_names: ClassVar[tuple[str, ...]]

    def __init__(self, **props: Any) -> None:
        unknown = set(props) - set(self.field_names)
        if unknown:
            raise TypeError(f"unknown {self.class_name} properties: {sorted(unknown)}")
        for name in self.field_names:
            setattr(self, name, props.get(name))

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.field_names}

    def present(self) -> dict[str, Any]:
        return {k: v for k, v in self.fields().items() if v is not None}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.fields() == other.fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(tuple(map(repr, self.fields().values())))

    def __repr__(self) -> str:
        return f"<{self.class_name} properties {self.present()!r}>"

    def encode_header(self, body_size: int) -> bytes:
        """The payload of a content header frame for a body of ``body_size`` bytes."""
        present: list[bool] = []
        parts: list[bytes] = []
        for pdef in self.property_defs:
            value = getattr(self, pdef.name)
            present.append(value is not None)
            if value is not None:
                parts.append(_encode_property(pdef, value))
        return _HEADER.pack(self.class_id, 0, body_size) + _flag_words(present) + b"".join(parts)

    @classmethod
    def decode(cls, data: bytes, offset: int) -> Properties:
        """Decode the property-flags words and the property list at ``offset``."""
        try:
            present: list[bool] = []
            while True:
                (word,) = _WORD.unpack_from(data, offset)
                offset += 2
                present.extend(bool(word & (1 << bit)) for bit in range(15, 0, -1))
                if not word & 1:
                    break
            self = cls.__new__(cls)
            for index, pdef in enumerate(cls.property_defs):
                if index < len(present) and present[index]:
                    value, offset = _decode_property(pdef, data, offset)
                    setattr(self, pdef.name, value)
                else:
                    setattr(self, pdef.name, None)
            if any(present[len(cls.property_defs):]):
                raise values.syntax_error(f"{cls.class_name}: property flag set for an undefined property")
        except (struct.error, IndexError):
            raise values.syntax_error(f"{cls.class_name}: content header truncated") from None
        if offset != len(data):
            raise values.syntax_error(f"{cls.class_name}: content header has {len(data) - offset} stray bytes")
        return self


def _flag_words(present: list[bool]) -> bytes:
    """Property flags: 15 properties a word, first property in bit 15, bit 0 = another word."""
    last = max((i for i, p in enumerate(present) if p), default=-1)
    words = []
    for start in range(0, max(last + 1, 1), 15):
        word = sum(1 << (15 - i) for i, p in enumerate(present[start : start + 15]) if p)
        if last >= start + 15:
            word |= 1
        words.append(_WORD.pack(word))
    return b"".join(words)


def _encode_property(pdef: FieldDef, value: Any) -> bytes:
    if pdef.type == "shortstr":
        return values.encode_shortstr(value)
    if pdef.type == "longstr":
        return values.encode_longstr(value)
    if pdef.type == "table":
        return values.encode_table(value)
    if pdef.type == "timestamp":
        return _FIXED["timestamp"].pack(values.timestamp_seconds(value))
    if pdef.type == "bit":
        return b"\x01" if value else b"\x00"
    return _FIXED[pdef.type].pack(value)


def _decode_property(pdef: FieldDef, data: bytes, offset: int) -> tuple[Any, int]:
    if pdef.type == "shortstr":
        return values.decode_shortstr(data, offset)
    if pdef.type == "longstr":
        return values.decode_longstr_bytes(data, offset)
    if pdef.type == "table":
        return values.decode_table(data, offset)
    if pdef.type == "bit":
        return data[offset] != 0, offset + 1
    fixed = _FIXED[pdef.type]
    return fixed.unpack_from(data, offset)[0], offset + fixed.size


def generate_properties(spec: Spec) -> None:
    """Create a properties class for every class of ``spec`` that defines properties."""
    for cdef in spec.classes.values():
        if cdef.properties:
            spec._properties[cdef.name] = _properties_class(cdef)
            spec._properties_by_id[cdef.class_id] = spec._properties[cdef.name]


def _properties_class(cdef: ClassDef) -> type[Properties]:
    names = tuple(p.name for p in cdef.properties)
    attrs: dict[str, Any] = {
        "__slots__": names,
        "class_id": cdef.class_id,
        "class_name": cdef.name,
        "property_defs": cdef.properties,
        "field_names": names,
        "__module__": __name__,
    }
    return type(f"{camel(cdef.name)}Properties", (Properties,), attrs)
