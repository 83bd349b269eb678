"""The source of the generated method and content-property classes (see ``modules``).

Each generated ``encode``/``decode`` is straight-line code for its own fields: consecutive
fixed-size fields (and packed bits) become one precompiled ``struct`` call, short and long
strings are decoded inline, only tables and 0-9's message content call out to ``values``.
That is what makes the codec fast. Content properties cost only those present: each is one
``if`` on its flag bit. Nothing here is written per method.

The functions here return lines of Python source; ``Structs`` collects the ``struct``
formats they use, which the module defines once each (``_S_HHB = struct.Struct(">HHB")``).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence

from amqp_protocol.spec import ClassDef, FieldDef, MethodDef

from .definitions import method_definition, properties_definition
from .text import indent, method_class_name, properties_class_name, string_tuple

#: ``struct`` codes of the fixed-size types.
STRUCT_CODES = {"octet": "B", "short": "H", "long": "I", "longlong": "Q", "timestamp": "Q"}
_FIXED_TYPES = frozenset({*STRUCT_CODES, "bit"})

#: Per wire type: the attribute's type, the constructor parameter's type and default.
_PYTHON_TYPES: dict[str, tuple[str, str, str]] = {
    "bit": ("bool", "bool", "False"),
    "octet": ("int", "int", "0"),
    "short": ("int", "int", "0"),
    "long": ("int", "int", "0"),
    "longlong": ("int", "int", "0"),
    "timestamp": ("int", "int", "0"),
    "shortstr": ("str", "str", '""'),
    "longstr": ("bytes", "bytes", 'b""'),
    "table": ("dict[str, Any]", "dict[str, Any] | None", "None"),
    "content": ("Content", "Content", "EMPTY_CONTENT"),
    "uuid": ("UUID", "UUID", "NIL_UUID"),
    "rfc1982-long-set": (
        "list[tuple[int, int]]",
        "list[tuple[int, int]] | None",
        "None",
    ),
}
#: What a constructor stores for a container field given as None (its default): a new,
#: empty container of the instance's own.
_EMPTY = {"table": "{}", "rfc1982-long-set": "[]"}
#: Properties per flags word (bit 0 is the continuation flag).
FLAGS_PER_WORD = 15


class Structs:
    """The ``struct`` formats a module's generated code uses, by the name it refers to."""

    def __init__(self) -> None:
        self.formats: dict[str, str] = {}

    def name(self, fmt: str) -> str:
        name = f"_S_{fmt}"
        self.formats[name] = fmt
        return name

    def definitions(self) -> list[str]:
        return [f'{name} = struct.Struct(">{fmt}")' for name, fmt in sorted(self.formats.items())]


def attribute_type(ftype: str) -> str:
    return _PYTHON_TYPES[ftype][0]


def _builtins_qualifier(names: Sequence[str]) -> Callable[[str], str]:
    """A function qualifying the builtin types in an annotation as ``builtins.<type>`` when
    a field of the class has the type's name (0-9's message.append has a field ``bytes``):
    annotations in a class body would name the field."""
    shadowed = {"bool", "int", "str", "bytes", "dict"} & set(names)
    if not shadowed:
        return lambda annotation: annotation
    pattern = re.compile(rf"\b({'|'.join(sorted(shadowed))})\b")
    return lambda annotation: pattern.sub(r"builtins.\1", annotation)


def _encode_expression(ftype: str, value: str) -> str:
    """Python expression for the wire bytes of a variable-size ``value`` of type ``ftype``."""
    return {
        "shortstr": f"encode_shortstr({value})",
        "longstr": f"encode_longstr({value})",
        "table": f"encode_table({value})",
        "content": f"encode_content({value})",
        "uuid": f"{value}.bytes",
        "rfc1982-long-set": f"encode_long_set({value})",
    }[ftype]


def _decode_statements(ftype: str, target: str) -> list[str]:
    """Statements decoding a variable-size value at ``data[offset]`` into ``target``.

    Strings are sliced without bounds checks; a generated decoder checks once, at its end,
    that ``offset`` did not pass the end of ``data`` (a slice past the end is short, not an
    error, and ``offset`` only grows).
    """
    if ftype == "shortstr":
        return [
            "n = data[offset] + 1",
            f'{target} = data[offset + 1 : offset + n].decode("utf-8", "surrogateescape")',
            "offset += n",
        ]
    if ftype == "longstr":
        return [
            "n = U32.unpack_from(data, offset)[0] + 4",
            f"{target} = bytes(data[offset + 4 : offset + n])",
            "offset += n",
        ]
    if ftype == "uuid":
        return [f"{target} = decode_uuid(data, offset)", "offset += 16"]
    decoder = {"table": "decode_table", "content": "decode_content"}.get(ftype, "decode_long_set")
    return [f"{target}, offset = {decoder}(data, offset)"]


# -- methods ---------------------------------------------------------------------------------


def _groups(fields: tuple[FieldDef, ...]) -> list[tuple[str, list[FieldDef]]]:
    """Split fields into runs: ("fixed", [...]) for struct-packable fields and bit groups,
    or (type, [field]) for variable-length ones. Bits pack into octets, 8 to an octet, and a
    run of bits is broken by any other field."""
    groups: list[tuple[str, list[FieldDef]]] = []
    for f in fields:
        if f.type in _FIXED_TYPES:
            if groups and groups[-1][0] == "fixed":
                groups[-1][1].append(f)
            else:
                groups.append(("fixed", [f]))
        else:
            groups.append((f.type, [f]))
    return groups


def _fixed_layout(run: list[FieldDef]) -> list[tuple[str, list[FieldDef]]]:
    """A fixed run as struct items: (code, [field]) or ("bits", [bits...]) for a bit octet."""
    items: list[tuple[str, list[FieldDef]]] = []
    for f in run:
        if f.type == "bit":
            if items and items[-1][0] == "bits" and len(items[-1][1]) < 8:
                items[-1][1].append(f)
            else:
                items.append(("bits", [f]))
        else:
            items.append((STRUCT_CODES[f.type], [f]))
    return items


def _codec(mdef: MethodDef, structs: Structs) -> tuple[str, list[str]]:
    """The expression ``encode`` returns and the statements ``decode`` runs."""
    # The class and method ids open the first fixed run, or stand alone before a string.
    header = repr(struct.pack(">HH", mdef.class_id, mdef.method_id))
    parts = [] if mdef.fields and mdef.fields[0].type in _FIXED_TYPES else [header]
    dec: list[str] = []
    for gi, (kind, run) in enumerate(_groups(mdef.fields)):
        if kind != "fixed":
            f = run[0]
            parts.append(_encode_expression(kind, f"self.{f.name}"))
            dec += _decode_statements(kind, f"m.{f.name}")
            continue
        layout = _fixed_layout(run)
        fmt = "".join("B" if code == "bits" else code for code, _ in layout)
        args, targets, unpack_bits = [], [], []
        for ii, (code, fs) in enumerate(layout):
            if code == "bits":
                bits = list(enumerate(fs))
                flags = [f"{1 << b} if self.{f.name} else 0" for b, f in bits]
                args.append(flags[0] if len(flags) == 1 else " | ".join(f"({x})" for x in flags))
                targets.append(f"b{ii}")
                unpack_bits += [f"m.{f.name} = b{ii} & {1 << b} != 0" for b, f in bits]
            else:
                value = f"self.{fs[0].name}"
                args.append(f"timestamp_seconds({value})" if fs[0].type == "timestamp" else value)
                targets.append(f"m.{fs[0].name}")
        if gi == 0:
            ids = f"{mdef.class_id}, {mdef.method_id}"
            parts.append(f"{structs.name('HH' + fmt)}.pack({ids}, {', '.join(args)})")
        else:
            parts.append(f"{structs.name(fmt)}.pack({', '.join(args)})")
        dec.append(f"({', '.join(targets)},) = {structs.name(fmt)}.unpack_from(data, offset)")
        dec.append(f"offset += {sum(_SIZES[c] for c in fmt)}")
        dec += unpack_bits
    joined = parts[0] if len(parts) == 1 else f'b"".join(({", ".join(parts)},))'
    return joined, dec


_SIZES = {"B": 1, "H": 2, "I": 4, "Q": 8}


def method_class(mdef: MethodDef, structs: Structs) -> list[str]:
    """The source of one method class."""
    name = method_class_name(mdef)
    names = tuple(f.name for f in mdef.fields)
    q = _builtins_qualifier(names)
    lines = [
        f"class {name}(Method):",
        f'    """{mdef.name}: class {mdef.class_id}, method {mdef.method_id}."""',
        "",
        f"    __slots__ = {string_tuple(names)}",
        f'    NAME: ClassVar[str] = "{mdef.name}"',
        f"    CLASS_ID: ClassVar[int] = {mdef.class_id}",
        f"    METHOD_ID: ClassVar[int] = {mdef.method_id}",
        f"    SYNCHRONOUS: ClassVar[bool] = {mdef.synchronous}",
        f"    HAS_CONTENT: ClassVar[bool] = {mdef.has_content}",
        "    FIELD_NAMES: ClassVar[tuple[str, ...]] = __slots__",
        *indent(method_definition(mdef)),
        "",
    ]
    lines += [f"    {f.name}: {q(attribute_type(f.type))}" for f in mdef.fields]
    if mdef.fields:
        lines.append("")
        lines.append("    def __init__(")
        lines.append("        self,")
        for f in mdef.fields:
            _, param, default = _PYTHON_TYPES[f.type]
            lines.append(f"        {f.name}: {q(param)} = {default},")
        lines.append("    ) -> None:")
        for f in mdef.fields:
            empty = _EMPTY.get(f.type)
            value = f"{empty} if {f.name} is None else {f.name}" if empty else f.name
            lines.append(f"        self.{f.name} = {value}")
    else:
        lines += ["", "    def __init__(self) -> None:", "        pass"]
    joined, dec = _codec(mdef, structs)
    lines += ["", f"    def encode(self) -> {q('bytes')}:"]
    if mdef.fields:
        lines += [
            "        try:",
            f"            return {joined}",
            "        except ENCODE_ERRORS as exc:",
            f'            raise syntax_error(f"{mdef.name}: {{exc}}") from None',
        ]
    else:
        lines.append(f"        return {joined}")
    lines += [
        "",
        "    @classmethod",
        f"    def decode(cls, data: {q('bytes')}, offset: {q('int')})"
        f" -> tuple[{name}, {q('int')}]:",
        "        m = cls.__new__(cls)",
    ]
    if dec:
        truncated = f'syntax_error("{mdef.name}: arguments truncated")'
        lines += [
            "        try:",
            *indent(dec, 3),
            "        except DECODE_ERRORS:",
            f"            raise {truncated} from None",
            "        if offset > len(data):",
            f"            raise {truncated}",
        ]
    lines.append("        return m, offset")
    return lines


# -- content properties ----------------------------------------------------------------------


def _flag(index: int) -> tuple[int, int]:
    """(word, bit value) of the property at ``index``."""
    word, position = divmod(index, FLAGS_PER_WORD)
    return word, 1 << (15 - position)


def _encode_property(pdef: FieldDef, index: int, structs: Structs) -> list[str]:
    word, bit = _flag(index)
    # From the instance dict ``d``: an absent property is not there, and reading it through
    # the instance would fall through to the class attribute, the slow lookup.
    value = f'd["{pdef.name}"]'
    if pdef.type in STRUCT_CODES:
        packed = f"timestamp_seconds({value})" if pdef.type == "timestamp" else value
        expression = f"{structs.name(STRUCT_CODES[pdef.type])}.pack({packed})"
    else:
        expression = _encode_expression(pdef.type, value)
    return [
        f'if "{pdef.name}" in d and {value} is not None:',
        f"    w{word} |= {bit}",
        f"    parts.append({expression})",
    ]


def _decode_property(pdef: FieldDef, index: int, structs: Structs) -> list[str]:
    word, bit = _flag(index)
    target = f"m.{pdef.name}"
    if pdef.type in STRUCT_CODES:
        code = STRUCT_CODES[pdef.type]
        body = [
            f"{target} = {structs.name(code)}.unpack_from(data, offset)[0]",
            f"offset += {_SIZES[code]}",
        ]
    else:
        body = _decode_statements(pdef.type, target)
    return [f"if w{word} & {bit}:", *indent(body)]


def properties_class(cdef: ClassDef, structs: Structs) -> list[str]:
    """The source of the content-properties class of one content class.

    Absent properties are class attributes (None): an instance holds only the properties
    it was given, so decoding a content with no properties (the common case) sets nothing.
    """
    props = cdef.properties
    name = properties_class_name(cdef)
    q = _builtins_qualifier([p.name for p in props])
    word_count = max(1, -(-len(props) // FLAGS_PER_WORD))
    words = [f"w{i}" for i in range(word_count)]
    masks = [0] * word_count
    for index in range(len(props)):
        word, bit = _flag(index)
        masks[word] |= bit
    head, word_struct = structs.name("HHQH"), structs.name("H")

    lines = [
        f"class {name}(Properties):",
        f'    """The content properties of class {cdef.name} ({cdef.class_id})."""',
        "",
        f"    class_id: ClassVar[int] = {cdef.class_id}",
        f'    class_name: ClassVar[str] = "{cdef.name}"',
        f"    field_names: ClassVar[tuple[str, ...]] = {string_tuple([p.name for p in props])}",
        *indent(properties_definition(cdef)),
        "",
    ]
    lines += [f"    {p.name}: {q(attribute_type(p.type))} | None = None" for p in props]
    lines += ["", "    def __init__(", "        self,", "        *,"]
    lines += [f"        {p.name}: {q(attribute_type(p.type))} | None = None," for p in props]
    lines.append("    ) -> None:")
    for p in props:
        lines += [f"        if {p.name} is not None:", f"            self.{p.name} = {p.name}"]

    # The statements shared by encode_header and encode_list: flags words w0.. and parts.
    flags_and_parts = [f"{' = '.join(words)} = 0", "parts: list[bytes] = []", "try:"]
    for index, pdef in enumerate(props):
        flags_and_parts += indent(_encode_property(pdef, index, structs))
    flags_and_parts += [
        "except ENCODE_ERRORS as exc:",
        f'    raise syntax_error(f"{cdef.name} properties: {{exc}}") from None',
    ]
    # Continuation: a word is followed by the next when any later word has a flag set.
    for i in range(word_count - 2, -1, -1):
        flags_and_parts += [f"if w{i + 1}:", f"    w{i} |= 1"]
    more_words = []
    for i in range(1, word_count):
        more_words.append(f"{'    ' * (i - 1)}if w{i - 1} & 1:")
        more_words.append(f"{'    ' * i}head += {word_struct}.pack(w{i})")
    tail = 'return head + b"".join(parts) if parts else head'
    lines += [
        "",
        f"    def encode_header(self, body_size: {q('int')}) -> {q('bytes')}:",
        "        d = self.__dict__",
        "        if not d:  # no property set: the common case of a consumer's deliveries",
        f"            return {head}.pack({cdef.class_id}, 0, body_size, 0)",
        *indent(flags_and_parts, 2),
        f"        head = {head}.pack({cdef.class_id}, 0, body_size, w0)",
        *indent(more_words, 2),
        f"        {tail}",
        "",
        f"    def encode_list(self) -> {q('bytes')}:",
        "        d = self.__dict__",
        *indent(flags_and_parts, 2),
        f"        head = {word_struct}.pack(w0)",
        *indent(more_words, 2),
        f"        {tail}",
        "",
        "    @classmethod",
        f"    def decode(cls, data: {q('bytes')}, offset: {q('int')}) -> {name}:",
        "        m = cls.__new__(cls)",
        "        try:",
    ]
    if word_count == 1:
        lines += [
            f"            w0 = {word_struct}.unpack_from(data, offset)[0]",
            # Bits of the first word that mean "look closer": continuation or undefined flags.
            f"            if w0 & {~masks[0] & 0xFFFF:#06x}:",
            f"                (w0,), offset = read_flag_words(data, offset, {tuple(masks)!r})",
            "            else:",
            "                offset += 2",
        ]
    else:
        lines.append(
            f"            ({', '.join(words)},), offset = "
            f"read_flag_words(data, offset, {tuple(masks)!r})"
        )
    # Each word's properties are looked at only when the word has a flag set: a content
    # with no properties (the common case) costs one test per word.
    for word in range(word_count):
        in_word = [(i, p) for i, p in enumerate(props) if _flag(i)[0] == word]
        lines.append(f"            if w{word}:")
        for index, pdef in in_word:
            lines += indent(_decode_property(pdef, index, structs), 4)
        if not in_word:
            lines.append("                pass")
    truncated = f'syntax_error("{cdef.name} properties: content header truncated")'
    lines += [
        "        except DECODE_ERRORS:",
        f"            raise {truncated} from None",
        "        if offset != len(data):",
        "            if offset > len(data):",
        f"                raise {truncated}",
        f'            raise syntax_error("{cdef.name} properties: stray bytes after the last")',
        "        return m",
    ]
    return lines
