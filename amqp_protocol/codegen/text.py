"""Helpers of the generator's writers: indentation, tuple displays and the names of the
generated classes."""

from __future__ import annotations

from collections.abc import Sequence

from amqp_protocol.spec import ClassDef, MethodDef


def indent(lines: list[str], level: int = 1) -> list[str]:
    return [("    " * level + line) if line else line for line in lines]


def string_tuple(names: Sequence[str]) -> str:
    """A tuple display of string literals."""
    quoted = ", ".join('"' + name + '"' for name in names)
    return f"({quoted},)" if names else "()"


def camel(xml_name: str) -> str:
    """``recover-sync-ok`` -> ``RecoverSyncOk``."""
    return "".join(part.capitalize() for part in xml_name.replace(" ", "-").split("-"))


def method_class_name(mdef: MethodDef) -> str:
    """``basic.recover-sync-ok`` -> ``BasicRecoverSyncOk``."""
    return camel(mdef.class_name) + camel(mdef.name.split(".", 1)[1])


def properties_class_name(cdef: ClassDef) -> str:
    return f"{camel(cdef.name)}Properties"
