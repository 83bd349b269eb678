"""The AMQP specifications, read from the XML files shipped in ``spec/``.

Everything per method in the protocol package is generated from the ``Spec`` objects built
here: ``python -m amqp_protocol.generate`` writes the method, content-property and error
classes to the modules of ``generated/``; ``load_spec`` pairs a version's XML with its
generated classes. Nothing per method is written by hand.
"""

from __future__ import annotations

import keyword
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .methods import Method
    from .properties import Properties

#: The wire types of the spec's primitive domains. ``content`` is the body of 0-9's
#: message.transfer, which the XML uses without defining: as in Qpid's 0-9 implementation,
#: an octet (0 inline, 1 reference) followed by a long string. The 0-10 draft adds ``uuid``
#: (16 octets) and ``rfc1982-long-set`` (a short holding the byte length of the longs that
#: follow, two per closed interval), which it names without defining their layout either;
#: both are laid out as Qpid's transitional 0-10 codec does.
PRIMITIVE_TYPES = frozenset(
    {
        "bit",
        "octet",
        "short",
        "long",
        "longlong",
        "shortstr",
        "longstr",
        "timestamp",
        "table",
        "content",
        "uuid",
        "rfc1982-long-set",
    }
)


def identifier(xml_name: str) -> str:
    """The Python attribute name for an XML field or method name.

    0-8 writes names with spaces, 0-9 with hyphens; 0-9 spells ``nowait`` where 0-9-1 spells
    ``no-wait``: both become ``no_wait`` so code written against one version reads the other.
    """
    name = xml_name.replace("-", "_").replace(" ", "_")
    if name == "nowait":
        name = "no_wait"
    if keyword.iskeyword(name):
        name += "_"
    return name


def camel(xml_name: str) -> str:
    """``recover-sync-ok`` -> ``RecoverSyncOk``."""
    return "".join(part.capitalize() for part in xml_name.replace(" ", "-").split("-"))


@dataclass(frozen=True)
class FieldDef:
    """One field of a method or one content property."""

    name: str  #: Python identifier
    xml_name: str
    type: str  #: one of PRIMITIVE_TYPES


@dataclass(frozen=True)
class MethodDef:
    name: str  #: "class.method" with the XML's hyphens, e.g. "basic.recover-sync-ok"
    class_name: str
    class_id: int
    method_id: int
    synchronous: bool
    has_content: bool
    fields: tuple[FieldDef, ...]
    responses: tuple[str, ...]  #: names of the methods that answer this one
    chassis: frozenset[str]  #: "client" and/or "server": who may receive it


@dataclass(frozen=True)
class ClassDef:
    name: str
    class_id: int
    properties: tuple[FieldDef, ...]
    methods: tuple[MethodDef, ...]


@dataclass(frozen=True)
class FieldTableType:
    """One field-table type code of the 0-10 draft (a ``field-table-*`` constant)."""

    code: int
    name: str  #: the constant's name without ``field-table-``, e.g. "signed-int"
    width: int | None  #: octets of a fixed-size value (``width``); None for a variable one
    length_width: int | None  #: octets of a variable value's length field (``lfwidth``)
    datatype: str  #: "signed-integer", "string", "field-table", ...


@dataclass
class Spec:
    """One AMQP version: its header, constants, domains, classes and generated code."""

    version: tuple[int, int, int]  #: (major, minor, revision)
    protocol_header: bytes
    constants: dict[str, tuple[int, str | None]]  #: name -> (value, "soft-error"/"hard-error")
    domains: dict[str, str]  #: domain -> primitive type
    classes: dict[str, ClassDef]
    #: The field-table type codes the spec defines (0-10 draft); empty for the versions that
    #: use the type codes of the 0-9-1 errata (``values``).
    field_table_types: tuple[FieldTableType, ...] = ()
    #: Other headers that clients send for this version (``protocol_header`` is the one the
    #: spec states and servers offer).
    header_aliases: tuple[bytes, ...] = ()
    _methods: dict[str, type[Method]] = field(default_factory=dict, repr=False)
    _methods_by_id: dict[tuple[int, int], type[Method]] = field(default_factory=dict, repr=False)
    _properties: dict[str, type[Properties]] = field(default_factory=dict, repr=False)
    _properties_by_id: dict[int, type[Properties]] = field(default_factory=dict, repr=False)

    @property
    def label(self) -> str:
        major, minor, revision = self.version
        return f"{major}-{minor}" + (f"-{revision}" if revision else "")

    @property
    def has_request_frames(self) -> bool:
        """The version has the 0-10 draft's frame-request and frame-response (types 9, 10)."""
        return "frame-request" in self.constants

    def method(self, name: str) -> type[Method]:
        """The generated class of ``name`` ("basic.publish"); KeyError if this version lacks it."""
        return self._methods[name]

    def has_method(self, name: str) -> bool:
        return name in self._methods

    def method_by_id(self, class_id: int, method_id: int) -> type[Method] | None:
        return self._methods_by_id.get((class_id, method_id))

    def properties(self, class_name: str) -> type[Properties]:
        """The generated content-properties class of a content class ("basic", "file", ...)."""
        return self._properties[class_name]

    def properties_by_id(self, class_id: int) -> type[Properties] | None:
        return self._properties_by_id.get(class_id)

    @property
    def methods(self) -> dict[str, type[Method]]:
        return dict(self._methods)

    def constant(self, name: str) -> int:
        return self.constants[name][0]

    def __hash__(self) -> int:
        return hash(self.version)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and other.version == self.version


def _resolve_type(domains: dict[str, str], domain: str) -> str:
    seen = set()
    while domain not in PRIMITIVE_TYPES:
        if domain in seen or domain not in domains:
            raise ValueError(f"domain {domain!r} does not resolve to a primitive type")
        seen.add(domain)
        domain = domains[domain]
    return domain


def _fields(elements: list[ET.Element], domains: dict[str, str]) -> tuple[FieldDef, ...]:
    return tuple(
        FieldDef(
            name=identifier(el.get("name", "")),
            xml_name=el.get("name", ""),
            type=_resolve_type(domains, el.get("domain") or el.get("type") or ""),
        )
        for el in elements
    )


def _without_namespace(root: ET.Element) -> ET.Element:
    """``root`` with the XML namespace taken off every tag: the 0-10 draft's root declares
    ``xmlns="http://www.amqp.org/schema/amqp.xsd"``, so its tags are ``{...}class``."""
    for element in root.iter():
        if element.tag.startswith("{"):
            element.tag = element.tag.split("}", 1)[1]
    return root


def _field_table_types(root: ET.Element) -> tuple[FieldTableType, ...]:
    def octets(text: str | None) -> int | None:
        return None if text is None else int(text)

    return tuple(
        FieldTableType(
            code=int(c.get("value", "0"), 0),
            name=c.get("name", "").removeprefix("field-table-"),
            width=octets(c.get("width")),
            length_width=octets(c.get("lfwidth")),
            datatype=c.get("datatype", ""),
        )
        for c in root.findall("constant")
        if c.get("class") == "field-table-type"
    )


def parse_spec(xml_text: bytes) -> Spec:
    """Build a ``Spec`` (without generated code) from the text of a spec XML file."""
    root = _without_namespace(ET.fromstring(xml_text))
    major, minor = int(root.get("major", "0")), int(root.get("minor", "0"))
    revision = int(root.get("revision", "0"))
    aliases: tuple[bytes, ...] = ()
    if (major, minor) == (8, 0):
        # 0-8's XML says major=8 minor=0; its header is "AMQP" 1 1 8 0. py-amqplib
        # (amqplib/client_0_8/transport.py) and other pre-standard 0-8 clients send
        # "AMQP" 1 1 9 1, which RabbitMQ takes for 0-8 too.
        version, header = (0, 8, 0), b"AMQP\x01\x01\x08\x00"
        aliases = (b"AMQP\x01\x01\x09\x01",)
    elif revision:
        version, header = (major, minor, revision), b"AMQP\x00" + bytes([major, minor, revision])
    else:
        version, header = (major, minor, 0), b"AMQP\x01\x01" + bytes([major, minor])
    constants = {
        c.get("name", "").replace(" ", "-"): (int(c.get("value", "0"), 0), c.get("class"))
        for c in root.findall("constant")
    }
    domains = {
        d.get("name", "").replace(" ", "-"): d.get("type", "") for d in root.findall("domain")
    }
    domains = {
        name: (typ.replace(" ", "-") if typ not in PRIMITIVE_TYPES else typ)
        for name, typ in domains.items()
    }
    for name in list(domains):
        domains[name.replace("-", " ")] = domains[name]
    classes = {cdef.name: cdef for cdef in _classes(root, domains)}
    return Spec(
        version=version,
        protocol_header=header,
        header_aliases=aliases,
        constants=constants,
        domains=domains,
        classes=classes,
        field_table_types=_field_table_types(root),
    )


def _classes(root: ET.Element, domains: dict[str, str]) -> list[ClassDef]:
    out = []
    for cls in root.findall("class"):
        cname = cls.get("name", "")
        cid = int(cls.get("index", "0"))
        methods = []
        for m in cls.findall("method"):
            mname = m.get("name", "").replace(" ", "-")
            methods.append(
                MethodDef(
                    name=f"{cname}.{mname}",
                    class_name=cname,
                    class_id=cid,
                    method_id=int(m.get("index", "0")),
                    synchronous=m.get("synchronous") == "1",
                    has_content=m.get("content") == "1",
                    fields=_fields(m.findall("field"), domains),
                    responses=tuple(
                        f"{cname}.{r.get('name', '').replace(' ', '-')}"
                        for r in m.findall("response")
                    ),
                    chassis=frozenset(c.get("name", "") for c in m.findall("chassis")),
                )
            )
        out.append(
            ClassDef(
                name=cname,
                class_id=cid,
                properties=_fields(cls.findall("field"), domains),
                methods=tuple(methods),
            )
        )
    return out


def merge_extension(spec: Spec, xml_text: bytes) -> None:
    """Add an extension file's methods to ``spec`` (before code generation).

    New methods are added; a method the spec already has only gains the extension's
    responses, so an extension can never change the wire format of an existing method.
    """
    for ext in _classes(_without_namespace(ET.fromstring(xml_text)), spec.domains):
        base = spec.classes[ext.name]
        methods = {m.name: m for m in base.methods}
        for m in ext.methods:
            if m.name in methods:
                old = methods[m.name]
                methods[m.name] = replace(old, responses=old.responses + m.responses)
            else:
                methods[m.name] = m
        spec.classes[ext.name] = replace(base, methods=tuple(methods.values()))


def read_spec(filename: str, *extensions: str) -> Spec:
    """The ``Spec`` of a spec file shipped with the package with ``extensions`` merged into
    it, without classes: what ``generate`` writes the classes from."""
    folder = resources.files(__package__).joinpath("spec")
    spec = parse_spec(folder.joinpath(filename).read_bytes())
    for extension in extensions:
        merge_extension(spec, folder.joinpath(extension).read_bytes())
    return spec


def load_spec(
    sources: tuple[str, ...],
    methods: Iterable[type[Method]],
    properties: Iterable[type[Properties]],
) -> Spec:
    """A ``Spec`` read from ``sources`` (a spec file and its extensions) with the classes
    generated from them (a module of ``generated``) registered on it.

    Classes that do not match the XML (a generated module older than a change to the XML or
    the generator) are left out with a warning rather than misread the wire; they do not
    stop the import, so that ``python -m amqp_protocol.generate`` can still run to rewrite
    them (the test suite fails until it has).
    """
    spec = read_spec(*sources)
    by_name = {cls.NAME: cls for cls in methods}
    props_by_name = {cls.class_name: cls for cls in properties}
    stale: list[str] = []
    for cdef in spec.classes.values():
        for mdef in cdef.methods:
            cls = by_name.pop(mdef.name, None)
            if cls is None or tuple(f.name for f in mdef.fields) != cls.FIELD_NAMES:
                stale.append(mdef.name)
                continue
            cls.DEFINITION, cls.SPEC = mdef, spec
            spec._methods[mdef.name] = cls
            spec._methods_by_id[(mdef.class_id, mdef.method_id)] = cls
        if cdef.properties:
            pcls = props_by_name.pop(cdef.name, None)
            if pcls is None or pcls.field_names != tuple(p.name for p in cdef.properties):
                stale.append(f"{cdef.name} properties")
                continue
            pcls.property_defs = cdef.properties
            spec._properties[cdef.name] = pcls
            spec._properties_by_id[cdef.class_id] = pcls
    stale += [*by_name, *props_by_name]
    if stale:
        warnings.warn(
            f"generated classes differ from {sources} ({', '.join(stale)}): "
            "run python -m amqp_protocol.generate",
            stacklevel=2,
        )
    return spec
