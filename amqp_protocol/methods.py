"""Method classes, generated from a ``Spec`` at import time.

For every method of every class a subclass of ``Method`` is built with ``__slots__`` for its
fields and an ``encode``/``decode`` pair compiled from generated source: consecutive
fixed-size fields (and packed bits) become one ``struct`` call, which is what makes the
codec fast. Nothing here is written per method.
"""

from __future__ import annotations

import struct
from typing import Any, ClassVar

from . import codegen
from .spec import FieldDef, MethodDef, Spec, camel

_FIXED_TYPES = frozenset({*codegen.STRUCT_CODES, "bit"})
_DEFAULTS: dict[str, str] = {
    "bit": "False",
    "octet": "0",
    "short": "0",
    "long": "0",
    "longlong": "0",
    "timestamp": "0",
    "shortstr": "''",
    "longstr": "b''",
    "table": "None",
    "content": "EMPTY_CONTENT",
}


class Method:
    """Base of the generated method classes. Fields are plain attributes."""

    __slots__ = ()
    NAME: ClassVar[str]
    CLASS_ID: ClassVar[int]
    METHOD_ID: ClassVar[int]
    SYNCHRONOUS: ClassVar[bool]
    HAS_CONTENT: ClassVar[bool]
    DEFINITION: ClassVar[MethodDef]
    FIELD_NAMES: ClassVar[tuple[str, ...]]
    SPEC: ClassVar[Spec]

    def __init__(self, **fields: Any) -> None:  # replaced by the generated __init__
        raise TypeError("instantiate a generated method class, not Method")

    def encode(self) -> bytes:
        """The payload of a method frame: class-id, method-id and the arguments."""
        raise NotImplementedError

    @classmethod
    def decode(cls, data: bytes, offset: int) -> tuple[Method, int]:
        """Decode the arguments at ``offset``; returns the method and the offset after it."""
        raise NotImplementedError

    @classmethod
    def responses(cls) -> tuple[str, ...]:
        return cls.DEFINITION.responses

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.FIELD_NAMES}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash((self.NAME, tuple(map(repr, self.fields().values()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.fields().items())
        return f"<{self.NAME} {args}>"


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
    """A fixed run as struct items: (code, [field]) or ("B", [bits...]) for a bit octet."""
    items: list[tuple[str, list[FieldDef]]] = []
    for f in run:
        if f.type == "bit":
            if items and items[-1][0] == "bits" and len(items[-1][1]) < 8:
                items[-1][1].append(f)
            else:
                items.append(("bits", [f]))
        else:
            items.append((codegen.STRUCT_CODES[f.type], [f]))
    return items


def _compile(spec: Spec, mdef: MethodDef) -> dict[str, Any]:
    """Generate the source of __init__, encode and decode for one method and compile it."""
    params = ", ".join(f"{f.name}={_DEFAULTS[f.type]}" for f in mdef.fields)
    init = [f"def __init__(self, {params}):" if params else "def __init__(self):"]
    for f in mdef.fields:
        value = f"{{}} if {f.name} is None else {f.name}" if f.type == "table" else f.name
        init.append(f"    self.{f.name} = {value}")
    if not mdef.fields:
        init.append("    pass")

    structs: dict[str, struct.Struct] = {}
    # The class and method ids open the first fixed run, or stand alone before a string.
    head = f"{mdef.class_id}, {mdef.method_id}"
    parts = [] if mdef.fields and mdef.fields[0].type in _FIXED_TYPES else ["HEADER"]
    dec: list[str] = []
    for gi, (kind, run) in enumerate(_groups(mdef.fields)):
        if kind != "fixed":
            f = run[0]
            parts.append(codegen.encode_expression(kind, f"self.{f.name}"))
            dec += codegen.decode_statements(kind, f"self.{f.name}")
            continue
        layout = _fixed_layout(run)
        fmt = "".join("B" if code == "bits" else code for code, _ in layout)
        args, targets, unpack_bits = [], [], []
        for ii, (code, fs) in enumerate(layout):
            if code == "bits":
                bits = list(enumerate(fs))
                args.append(" | ".join(f"({1 << b} if self.{f.name} else 0)" for b, f in bits))
                targets.append(f"_b{ii}")
                unpack_bits += [f"self.{f.name} = _b{ii} & {1 << b} != 0" for b, f in bits]
            else:
                value = f"self.{fs[0].name}"
                args.append(f"ts({value})" if fs[0].type == "timestamp" else value)
                targets.append(value)
        sname = f"S{gi}"
        structs[sname] = struct.Struct(">" + fmt)
        if gi == 0:
            structs["S_ENCODE"] = struct.Struct(">HH" + fmt)
            parts.append(f"S_ENCODE.pack({head}, {', '.join(args)})")
        else:
            parts.append(f"{sname}.pack({', '.join(args)})")
        dec.append(f"{', '.join(targets)}, = {sname}.unpack_from(data, offset)")
        dec.append(f"offset += {structs[sname].size}")
        dec += unpack_bits
    joined = parts[0] if len(parts) == 1 else f"b''.join(({', '.join(parts)},))"
    decode = ["def decode(cls, data, offset):", "    self = cls.__new__(cls)"]
    if dec:
        truncated = f"syntax_error('{mdef.name}: arguments truncated')"
        decode += [
            "    try:",
            *codegen.indent(dec, 2),
            "    except DECODE_ERRORS:",
            f"        raise {truncated} from None",
            "    if offset > len(data):",
            f"        raise {truncated}",
        ]
    source = [
        *init,
        "def encode(self):",
        "    try:",
        f"        return {joined}",
        "    except ENCODE_ERRORS as exc:",
        f"        raise syntax_error(f'{mdef.name}: {{exc}}') from None",
        *decode,
        "    return self, offset",
    ]
    scope = codegen.compile_functions(
        "\n".join(source),
        f"<amqp {spec.label} {mdef.name}>",
        {"HEADER": struct.pack(">HH", mdef.class_id, mdef.method_id), **structs},
    )
    return {"__init__": scope["__init__"], "encode": scope["encode"], "decode": scope["decode"]}


def generate_methods(spec: Spec) -> None:
    """Create the method classes of ``spec`` and register them on it."""
    for cdef in spec.classes.values():
        for mdef in cdef.methods:
            code = _compile(spec, mdef)
            attrs: dict[str, Any] = {
                "__slots__": tuple(f.name for f in mdef.fields),
                "__init__": code["__init__"],
                "encode": code["encode"],
                "decode": classmethod(code["decode"]),
                "NAME": mdef.name,
                "CLASS_ID": mdef.class_id,
                "METHOD_ID": mdef.method_id,
                "SYNCHRONOUS": mdef.synchronous,
                "HAS_CONTENT": mdef.has_content,
                "DEFINITION": mdef,
                "FIELD_NAMES": tuple(f.name for f in mdef.fields),
                "SPEC": spec,
                "__module__": __name__,
                "__qualname__": f"{camel(cdef.name)}{camel(mdef.name.split('.', 1)[1])}",
            }
            cls = type(attrs["__qualname__"], (Method,), attrs)
            spec._methods[mdef.name] = cls
            spec._methods_by_id[(mdef.class_id, mdef.method_id)] = cls
