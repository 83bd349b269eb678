"""No package reads another object's private members: ``x._name`` where ``x`` is not
``self``, ``cls``, ``super()`` or a class (a name in CapWords: a handler table naming a
class's methods reads no object's state). An object's privates are its own; what a
collaborator needs is part of its contract (``broker/server/abc.py``,
``amqp_spark/client/abc.py``). Read from the source with ``ast``, as the import-graph test
reads imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("amqp_protocol", "amqp_spark", "amqp_spark_demo", "broker", "pyspark_amqp")
#: namedtuple's API: public although it starts with an underscore.
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
#: The reaches a package may keep, each with its reason (at most two per package).
JUSTIFIED: dict[str, set[str]] = {}


def private_reaches(source: str) -> list[str]:
    """``x._name`` expressions of ``source`` where ``x`` is another object."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__") or name in NAMEDTUPLE_API:
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and (owner.id in {"self", "cls"} or owner.id[:1].isupper()):
            continue
        if (
            isinstance(owner, ast.Call)
            and isinstance(owner.func, ast.Name)
            and owner.func.id == "super"
        ):
            continue
        found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def _package_reaches(package: str) -> list[str]:
    reaches = []
    for path in sorted((ROOT / package).rglob("*.py")):
        relative = path.relative_to(ROOT)
        if "generated" in relative.parts:
            continue  # written by the generator, which its own tests check
        reaches += [f"{relative}:{reach}" for reach in private_reaches(path.read_text())]
    return reaches


@pytest.mark.parametrize("package", PACKAGES)
def test_no_package_reads_another_objects_private_members(package: str) -> None:
    justified = JUSTIFIED.get(package, set())
    assert len(justified) <= 2
    reaches = [
        reach for reach in _package_reaches(package) if reach.split(": ", 1)[1] not in justified
    ]
    assert reaches == []


def test_the_reader_finds_a_private_reach_and_spares_self_cls_super_classes_and_namedtuples() -> (
    None
):
    source = (
        "class A:\n"
        "    def f(self, other):\n"
        "        self._a; cls._b; A._c; super()._d; other._e; other.__len__; p._replace()\n"
        "        self.other._f\n"
    )
    assert private_reaches(source) == ["3: other._e", "4: self.other._f"]
