"""The source of the definitions a generated module holds beside its classes (see
``modules``): each method class's ``DEFINITION`` (fields, responses, chassis), each
properties class's ``property_defs``, and the version's ``SPEC`` (protocol header,
constants, domains, class definitions), so that the protocol package reads no XML to run.

The functions here return lines of Python source: literals of the dataclasses of
``amqp_protocol.spec``, written in the XML's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from amqp_protocol.spec import ClassDef, FieldDef, MethodDef, Spec

from .text import indent, method_class_name, properties_class_name, string_tuple


def _string(text: str) -> str:
    """A string literal in double quotes (the XML's names hold no quote or backslash)."""
    if '"' in text or "\\" in text:
        raise ValueError(
            f"spec name {text!r} has a quote or backslash: names are written as plain string"
            " literals, so only names without either are accepted"
        )
    return f'"{text}"'


def _optional_string(text: str | None) -> str:
    return "None" if text is None else _string(text)


def _field_defs(fields: Sequence[FieldDef]) -> list[str]:
    """A tuple display of ``fields``, one ``FieldDef`` a line."""
    if not fields:
        return ["()"]
    items = [
        f"FieldDef({_string(f.name)}, {_string(f.xml_name)}, {_string(f.type)})," for f in fields
    ]
    return ["(", *indent(items), ")"]


def _keyword(name: str, value: list[str]) -> list[str]:
    """The lines of a keyword argument ``name=value,`` (``value``: an expression's lines)."""
    lines = [f"{name}={value[0]}", *value[1:]]
    lines[-1] += ","
    return lines


def method_definition(mdef: MethodDef) -> list[str]:
    """The class-body lines of a method class's ``DEFINITION``."""
    chassis = ", ".join(_string(c) for c in sorted(mdef.chassis))
    return [
        "DEFINITION: ClassVar[MethodDef] = MethodDef(",
        f"    name={_string(mdef.name)},",
        f"    class_name={_string(mdef.class_name)},",
        f"    class_id={mdef.class_id},",
        f"    method_id={mdef.method_id},",
        f"    synchronous={mdef.synchronous},",
        f"    has_content={mdef.has_content},",
        *indent(_keyword("fields", _field_defs(mdef.fields))),
        f"    responses={string_tuple(mdef.responses)},",
        f"    chassis=frozenset({{{chassis}}})," if chassis else "    chassis=frozenset(),",
        ")",
    ]


def properties_definition(cdef: ClassDef) -> list[str]:
    """The class-body lines of a properties class's ``property_defs``."""
    value = _field_defs(cdef.properties)
    return [f"property_defs: ClassVar[tuple[FieldDef, ...]] = {value[0]}", *value[1:]]


def _class_definition(cdef: ClassDef) -> list[str]:
    methods = ", ".join(f"{method_class_name(m)}.DEFINITION" for m in cdef.methods)
    properties = f"{properties_class_name(cdef)}.property_defs" if cdef.properties else "()"
    return [
        f"{_string(cdef.name)}: ClassDef(",
        f"    name={_string(cdef.name)},",
        f"    class_id={cdef.class_id},",
        f"    properties={properties},",
        f"    methods=({methods},)," if methods else "    methods=(),",
        "),",
    ]


def _dict(items: Iterable[str]) -> list[str]:
    lines = list(items)
    return ["{", *indent(lines), "}"] if lines else ["{}"]


def spec_definition(spec: Spec, has_field_table_types: bool) -> list[str]:
    """The module-level lines defining ``SPEC``, after the classes, ``METHODS``,
    ``PROPERTIES`` and (with ``has_field_table_types``) ``FIELD_TABLE_TYPES``."""
    constants = (
        f"{_string(name)}: ({value}, {_optional_string(kind)}),"
        for name, (value, kind) in spec.constants.items()
    )
    domains = (f"{_string(name)}: {_string(typ)}," for name, typ in spec.domains.items())
    classes = (line for cdef in spec.classes.values() for line in _class_definition(cdef))
    aliases = "".join(f"{alias!r}, " for alias in spec.header_aliases)
    return [
        "",
        f"#: AMQP {spec.label}: its header, constants, domains, definitions and classes.",
        "SPEC = Spec(",
        f"    version={spec.version!r},",
        f"    protocol_header={spec.protocol_header!r},",
        f"    header_aliases=({aliases.rstrip()}),",
        *indent(_keyword("constants", _dict(constants))),
        *indent(_keyword("domains", _dict(domains))),
        *indent(_keyword("classes", _dict(classes))),
        *(["    field_table_types=FIELD_TABLE_TYPES,"] if has_field_table_types else []),
        "    method_classes=METHODS,",
        "    properties_classes=PROPERTIES,",
        ")",
    ]
