"""The broker's server is one core with protocol dialects plugged in (docs/architecture.md,
"The broker's server"): the core imports no dialect, so a new version (the 0-10 draft) is a
new dialect registered in app.py and the core does not change. Read from the source with
``ast``; imports under ``TYPE_CHECKING`` count too (they tie modules together as much)."""

from __future__ import annotations

import ast
from pathlib import Path

import broker

SERVER = Path(broker.__file__).parent / "server"
#: The core, and the contract the dialects implement.
CORE = (
    "abc",
    "channel",
    "connection",
    "content_pump",
    "core_handlers",
    "dialect",
    "publisher_confirms",
    "transactions",
)
#: The dialects, registered in app.py.
DIALECTS = ("spec09", "spec091", "spec010")


def _server_imports(module: Path) -> set[str]:
    """The modules of broker/server that ``module`` imports, as ``spec09.lanes`` etc."""
    package = module.parent.relative_to(SERVER).parts
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        up = node.level - 1
        if up > len(package):
            continue  # above broker/server
        base = package[: len(package) - up]
        target = [*base, *(node.module.split(".") if node.module else [])]
        for alias in node.names:
            candidate = [*target, alias.name]
            if (SERVER.joinpath(*candidate).with_suffix(".py")).exists() or (
                SERVER.joinpath(*candidate) / "__init__.py"
            ).exists():
                found.add(".".join(candidate))
            elif target:
                found.add(".".join(target))
    return found


def _reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = SERVER.joinpath(*name.split("."))
        module = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if module.exists():
            todo.extend(_server_imports(module))
    return seen - {start}


def test_the_server_core_imports_no_dialect() -> None:
    for core in CORE:
        reached = _reachable(core)
        dialects = sorted(r for r in reached if r.split(".")[0] in DIALECTS)
        assert not dialects, f"broker/server/{core}.py reaches dialect modules {dialects}"


def test_only_the_server_builder_imports_the_dialects() -> None:
    importers = {
        str(path.relative_to(SERVER))
        for path in SERVER.rglob("*.py")
        if path.parent == SERVER
        and any(name.split(".")[0] in DIALECTS for name in _server_imports(path))
        and path.stem not in DIALECTS
    }
    assert importers == {"app.py"}
