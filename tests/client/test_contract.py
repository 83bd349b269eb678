"""The connector's objects speak through public contracts (``amqp_spark/client/abc.py`` between
a connection and its channels): no module of ``amqp_spark`` reads another object's private
members, and the channel does not import the connection. Read from the source with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

import amqp_spark

PACKAGE = Path(amqp_spark.__file__).parent
#: namedtuple's public API, whose names start with an underscore.
PUBLIC_UNDERSCORED = {"_replace", "_asdict", "_fields", "_make"}


def _is_own(value: ast.expr) -> bool:
    """``self``, ``cls``, ``super()`` or a class (a CamelCase name): the object's own members."""
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls") or value.id[:1].isupper()
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "super"
    )


def _private_reaches(source: str) -> list[str]:
    """``line: expression`` of each read of another object's private member in ``source``."""
    return [
        f"{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and node.attr not in PUBLIC_UNDERSCORED
        and not _is_own(node.value)
    ]


def _imported_modules(path: Path) -> set[str]:
    """The sibling modules ``path`` imports (``from .x import ...``), TYPE_CHECKING too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module)
    return found


def test_no_module_of_amqp_spark_reads_another_objects_private_members() -> None:
    reaches = [
        f"{path.relative_to(PACKAGE.parent)}:{hit}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for hit in _private_reaches(path.read_text())
    ]
    assert reaches == []


def test_the_check_finds_a_read_of_another_objects_private_member() -> None:
    source = (
        "def f(conn, point):\n    return conn._proto, self._own, super()._base, point._replace\n"
    )
    assert _private_reaches(source) == ["2: conn._proto"]


def test_the_channel_and_publishing_depend_on_the_contract_not_on_the_connection() -> None:
    client = PACKAGE / "client"
    for module in ("channel.py", "publishing.py", "abc.py"):
        assert "connection" not in _imported_modules(client / module), module
    assert "abc" in _imported_modules(client / "channel.py")
