"""Content-property classes (``basic``, ``file``, ``stream``, ``tunnel``), generated from a Spec.

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
from typing import Any, ClassVar

from . import codegen, values
from .spec import ClassDef, FieldDef, Spec, camel

_WORD = struct.Struct(">H")
#: Properties per flags word (bit 0 is the continuation flag).
FLAGS_PER_WORD = 15


class Properties:
    """Base of the generated property classes."""

    __slots__ = ()
    class_id: ClassVar[int]
    class_name: ClassVar[str]
    property_defs: ClassVar[tuple[FieldDef, ...]]
    field_names: ClassVar[tuple[str, ...]]

    def __init__(self, **props: Any) -> None:  # replaced by the generated __init__
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


def _flag(index: int) -> tuple[int, int]:
    """(word, bit value) of the property at ``index``."""
    word, position = divmod(index, FLAGS_PER_WORD)
    return word, 1 << (15 - position)


def _encode_statements(pdef: FieldDef, index: int) -> list[str]:
    word, bit = _flag(index)
    # From the instance dict ``d``: an absent property is not there, and reading it through
    # the instance would fall through to the class attribute, the slow lookup.
    value = f"d[{pdef.name!r}]"
    if pdef.type in codegen.STRUCT_CODES:
        code = codegen.STRUCT_CODES[pdef.type]
        expression = f"{code}.pack({f'ts({value})' if pdef.type == 'timestamp' else value})"
    else:
        expression = codegen.encode_expression(pdef.type, value)
    return [
        f"if {pdef.name!r} in d and {value} is not None:",
        f"    w{word} |= {bit}",
        f"    parts.append({expression})",
    ]


def _decode_statements(pdef: FieldDef, index: int) -> list[str]:
    word, bit = _flag(index)
    target = f"self.{pdef.name}"
    if pdef.type in codegen.STRUCT_CODES:
        code = codegen.STRUCT_CODES[pdef.type]
        body = [f"{target} = {code}.unpack_from(data, offset)[0]", f"offset += {code}.size"]
    else:
        body = codegen.decode_statements(pdef.type, target)
    return [f"if w{word} & {bit}:", *codegen.indent(body)]


def _compile(cdef: ClassDef) -> dict[str, Any]:
    props = cdef.properties
    names = [p.name for p in props]
    word_count = max(1, -(-len(props) // FLAGS_PER_WORD))
    words = [f"w{i}" for i in range(word_count)]
    masks = [0] * word_count
    for index in range(len(props)):
        word, bit = _flag(index)
        masks[word] |= bit

    init = [f"def __init__(self, *, {', '.join(f'{n}=None' for n in names)}):"]
    for n in names:
        init += [f"    if {n} is not None:", f"        self.{n} = {n}"]

    # The statements shared by encode_header and encode_list: flags words w0.. and parts.
    flags_and_parts = [f"    {' = '.join(words)} = 0", "    parts = []", "    try:"]
    for index, pdef in enumerate(props):
        flags_and_parts += codegen.indent(_encode_statements(pdef, index), 2)
    flags_and_parts += [
        "    except ENCODE_ERRORS as exc:",
        f"        raise syntax_error(f'{cdef.name} properties: {{exc}}') from None",
    ]
    # Continuation: a word is followed by the next when any later word has a flag set.
    for i in range(word_count - 2, -1, -1):
        flags_and_parts.append(f"    if w{i + 1}:")
        flags_and_parts.append(f"        w{i} |= 1")
    more_words = []
    for i in range(1, word_count):
        more_words.append(f"    {'    ' * (i - 1)}if w{i - 1} & 1:")
        more_words.append(f"    {'    ' * i}head += WORD.pack(w{i})")
    tail = "    return head + b''.join(parts) if parts else head"
    encode = [
        "def encode_header(self, body_size):",
        "    d = self.__dict__",
        "    if not d:  # no property set: the common case of a consumer's deliveries",
        "        return HEAD.pack(CLASS_ID, 0, body_size, 0)",
        *flags_and_parts,
        "    head = HEAD.pack(CLASS_ID, 0, body_size, w0)",
        *more_words,
        tail,
        "def encode_list(self):",
        "    d = self.__dict__",
        *flags_and_parts,
        "    head = WORD.pack(w0)",
        *more_words,
        tail,
    ]

    decode = ["def decode(cls, data, offset):", "    self = cls.__new__(cls)", "    try:"]
    if word_count == 1:
        decode += [
            "        w0 = WORD.unpack_from(data, offset)[0]",
            "        if w0 & UNDEFINED:",
            "            (w0,), offset = read_flag_words(data, offset, MASKS)",
            "        else:",
            "            offset += 2",
        ]
    else:
        decode.append(
            f"        ({', '.join(words)},), offset = read_flag_words(data, offset, MASKS)"
        )
    # Each word's properties are looked at only when the word has a flag set: a content
    # with no properties (the common case) costs one test per word.
    for word in range(word_count):
        decode.append(f"        if w{word}:")
        for index, pdef in enumerate(props):
            if _flag(index)[0] == word:
                decode += codegen.indent(_decode_statements(pdef, index), 3)
    truncated = f"syntax_error('{cdef.name} properties: content header truncated')"
    decode += [
        "    except DECODE_ERRORS:",
        f"        raise {truncated} from None",
        "    if offset != len(data):",
        "        if offset > len(data):",
        f"            raise {truncated}",
        f"        raise syntax_error('{cdef.name} properties: stray bytes after the last')",
        "    return self",
    ]
    scope = codegen.compile_functions(
        "\n".join(init + encode + decode),
        f"<amqp {cdef.name} properties>",
        {
            "CLASS_ID": cdef.class_id,
            "HEAD": struct.Struct(">HHQH"),
            "WORD": _WORD,
            "MASKS": tuple(masks),
            # Bits of the first word that mean "look closer": continuation or undefined flags.
            "UNDEFINED": (~masks[0] & 0xFFFF),
            "read_flag_words": read_flag_words,
            **{code: struct.Struct(">" + code) for code in set(codegen.STRUCT_CODES.values())},
        },
    )
    return {
        "__init__": scope["__init__"],
        "encode_header": scope["encode_header"],
        "encode_list": scope["encode_list"],
        "decode": classmethod(scope["decode"]),
    }


def generate_properties(spec: Spec) -> None:
    """Create a properties class for every class of ``spec`` that defines properties."""
    for cdef in spec.classes.values():
        if cdef.properties:
            spec._properties[cdef.name] = properties_class(cdef)
            spec._properties_by_id[cdef.class_id] = spec._properties[cdef.name]


def properties_class(cdef: ClassDef) -> type[Properties]:
    """The generated properties class of one content class."""
    names = tuple(p.name for p in cdef.properties)
    attrs: dict[str, Any] = {
        **dict.fromkeys(names),
        "class_id": cdef.class_id,
        "class_name": cdef.name,
        "property_defs": cdef.properties,
        "field_names": names,
        "__module__": __name__,
        **_compile(cdef),
    }
    return type(f"{camel(cdef.name)}Properties", (Properties,), attrs)
