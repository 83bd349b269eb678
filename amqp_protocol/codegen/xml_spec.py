"""The generator's reader of the spec XML files shipped in ``amqp_protocol/spec/``.

Everything per version in the protocol package is generated from the ``Spec`` objects built
here (definitions without classes): ``python -m amqp_protocol.generate`` writes them, with
the method, content-property and error classes, to the modules of ``generated/``. Only the
generator imports this module: the protocol package never reads the XML when it runs.
"""

from __future__ import annotations

import keyword
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

from amqp_protocol.spec import ClassDef, FieldDef, FieldTableType, MethodDef, Spec

#: The spec XML files (shipped as package data, for the generator only).
SPEC_FOLDER = Path(__file__).parent.parent / "spec"

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
    spec = parse_spec((SPEC_FOLDER / filename).read_bytes())
    for extension in extensions:
        merge_extension(spec, (SPEC_FOLDER / extension).read_bytes())
    return spec
