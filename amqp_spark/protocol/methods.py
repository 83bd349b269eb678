"""Method classes, generated from a ``Spec`` at import time.

For every method of every class a subclass of ``Method`` is built with ``__slots__`` for its
fields and an ``encode``/``decode`` pair compiled from generated source: consecutive
fixed-size fields (and packed bits) become one ``struct`` call, which is what makes the
codec fast. Nothing here is written per method.
"""

from __future__ import annotations

import struct
from typing import Any, ClassVar

from . import values
from .spec import FieldDef, MethodDef, Spec, camel

_STRUCT_CODES = {"octet": "B", "short": "H", "long": "I", "longlong": "Q", "timestamp": "Q"}
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
    "content": "values.Content()",
}


#: Names (in the generated namespace) of the encoder and decoder of each variable-size type.
_CODECS = {
    "shortstr": ("sstr", "dsstr"),
    "longstr": ("lstr", "dlstr"),
    "table": ("table", "dtable"),
    "content": ("content", "dcontent"),
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
        return type(other) is type(self) and self.fields() == other.fields()  # type: ignore[attr-defined]

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
        if f.type in _STRUCT_CODES or f.type == "bit":
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
            items.append((_STRUCT_CODES[f.type], [f]))
    return items


def _compile(spec: Spec, mdef: MethodDef) -> dict[str, Any]:
    """Generate the source of __init__, encode and decode for one method and compile it."""
    names = [f.name for f in mdef.fields]
    namespace: dict[str, Any] = {
        "values": values,
        "struct": struct,
        "HEADER": struct.pack(">HH", mdef.class_id, mdef.method_id),
        "ts": values.timestamp_seconds,
        "sstr": values.encode_shortstr,
        "lstr": values.encode_longstr,
        "table": values.encode_table,
        "dsstr": values.decode_shortstr,
        "dlstr": values.decode_longstr_bytes,
        "dtable": values.decode_table,
        "content": values.encode_content,
        "dcontent": values.decode_content,
    }
    init = [f"def __init__(self, {', '.join(f'{n}={_DEFAULTS[f.type]}' for n, f in zip(names, mdef.fields))}):"]
    for f in mdef.fields:
        if f.type == "table":
            init.append(f"    self.{f.name} = {{}} if {f.name} is None else {f.name}")
        else:
            init.append(f"    self.{f.name} = {f.name}")
    if len(init) == 1:
        init[0] = "def __init__(self):"
        init.append("    pass")

    enc = ["def encode(self):", "    return b''.join((HEADER,"]
    dec = ["def decode(cls, data, offset):", "    self = cls.__new__(cls)"]
    for gi, (kind, run) in enumerate(_groups(mdef.fields)):
        if kind == "fixed":
            layout = _fixed_layout(run)
            fmt = ">" + "".join("B" if code == "bits" else code for code, _ in layout)
            sname = f"S{gi}"
            namespace[sname] = struct.Struct(fmt)
            args, targets, unpack_bits = [], [], []
            for ii, (code, fs) in enumerate(layout):
                if code == "bits":
                    args.append(
                        "(" + " | ".join(f"({1 << b} if self.{f.name} else 0)" for b, f in enumerate(fs)) + ")"
                    )
                    targets.append(f"_b{ii}")
                    unpack_bits += [f"    self.{f.name} = bool(_b{ii} & {1 << b})" for b, f in enumerate(fs)]
                elif fs[0].type == "timestamp":
                    args.append(f"ts(self.{fs[0].name})")
                    targets.append(f"self.{fs[0].name}")
                else:
                    args.append(f"self.{fs[0].name}")
                    targets.append(f"self.{fs[0].name}")
            enc.append(f"        {sname}.pack({', '.join(args)}),")
            dec.append(f"    {', '.join(targets)}, = {sname}.unpack_from(data, offset)")
            dec.append(f"    offset += {namespace[sname].size}")
            dec.extend(unpack_bits)
        else:
            f = run[0]
            encoder, decoder = _CODECS[kind]
            enc.append(f"        {encoder}(self.{f.name}),")
            dec.append(f"    self.{f.name}, offset = {decoder}(data, offset)")
    enc.append("    ))")
    dec.append("    return self, offset")
    source = "\n".join(init + enc + dec)
    exec(compile(source, f"<amqp {spec.label} {mdef.name}>", "exec"), namespace)
    return {"__init__": namespace["__init__"], "encode": namespace["encode"], "_decode": namespace["decode"]}


def _checked_decode(raw_decode: Any) -> Any:
    """Wrap a generated decoder so that truncated input is a 502 syntax error, not a crash."""

    def decode(cls: type[Method], data: bytes, offset: int) -> tuple[Method, int]:
        try:
            return raw_decode(cls, data, offset)  # type: ignore[no-any-return]
        except (struct.error, IndexError):
            raise values.syntax_error(f"{cls.NAME}: arguments truncated") from None

    return classmethod(decode)


def generate_methods(spec: Spec) -> None:
    """Create the method classes of ``spec`` and register them on it."""
    for cdef in spec.classes.values():
        for mdef in cdef.methods:
            code = _compile(spec, mdef)
            attrs: dict[str, Any] = {
                "__slots__": tuple(f.name for f in mdef.fields),
                "__init__": code["__init__"],
                "encode": code["encode"],
                "decode": _checked_decode(code["_decode"]),
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
