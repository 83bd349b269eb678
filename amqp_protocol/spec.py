"""An AMQP version as the protocol package knows it: ``Spec`` and the definitions it holds.

Every version's ``Spec`` is checked-in code: ``python -m amqp_protocol.generate`` writes it,
with the version's method and content-property classes, to a module of ``generated/``
(``generated.spec_0_9_1.SPEC``) from the spec XML in ``spec/``. Nothing here reads the XML
(the generator's reader is ``codegen.xml_spec``) and nothing per method is written by hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .methods import Method
    from .properties import Properties


@dataclass(frozen=True)
class FieldDef:
    """One field of a method or one content property."""

    name: str  #: Python identifier
    xml_name: str
    #: The wire type: bit, octet, short, long, longlong, shortstr, longstr, timestamp,
    #: table, and for 0-9's message class and the 0-10 draft content, uuid and
    #: rfc1982-long-set (see ``codegen.xml_spec.PRIMITIVE_TYPES``).
    type: str


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


class Spec:
    """One AMQP version: its header, constants, domains, class definitions and classes.

    The generator builds one with no classes from the XML (the definitions it writes the
    classes from); a generated module builds its version's with the classes it defines,
    which then name it back (``Method.SPEC``).
    """

    def __init__(
        self,
        *,
        version: tuple[int, int, int],
        protocol_header: bytes,
        constants: dict[str, tuple[int, str | None]],
        domains: dict[str, str],
        classes: dict[str, ClassDef],
        field_table_types: tuple[FieldTableType, ...] = (),
        header_aliases: tuple[bytes, ...] = (),
        method_classes: Iterable[type[Method]] = (),
        properties_classes: Iterable[type[Properties]] = (),
    ) -> None:
        self.version = version  #: (major, minor, revision)
        self.protocol_header = protocol_header
        #: name -> (value, "soft-error"/"hard-error" or the XML's other class, or None)
        self.constants = constants
        self.domains = domains  #: domain -> primitive type
        self.classes = classes
        #: The field-table type codes the spec defines (0-10 draft); empty for the versions
        #: that use the type codes of the 0-9-1 errata (``values``).
        self.field_table_types = field_table_types
        #: Other headers that clients send for this version (``protocol_header`` is the one
        #: the spec states and servers offer).
        self.header_aliases = header_aliases
        self._methods: dict[str, type[Method]] = {}
        self._methods_by_id: dict[tuple[int, int], type[Method]] = {}
        for cls in method_classes:
            cls.SPEC = self
            self._methods[cls.NAME] = cls
            self._methods_by_id[(cls.CLASS_ID, cls.METHOD_ID)] = cls
        self._properties = {cls.class_name: cls for cls in properties_classes}
        self._properties_by_id = {cls.class_id: cls for cls in self._properties.values()}

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

    def __repr__(self) -> str:
        return f"<Spec AMQP {self.label}>"
