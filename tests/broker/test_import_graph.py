"""The broker package's modules import one another in one direction: no cycle, counting every
import a reader must follow (those under ``TYPE_CHECKING`` and inside functions too). Read
from the source with ``ast``. A package's ``__init__`` counts only where it is imported by
name (``from broker import X`` with X not a submodule), not as the parent of a submodule."""

from __future__ import annotations

import ast
from pathlib import Path

import broker

ROOT = Path(broker.__file__).parent.parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in Path(broker.__file__).parent.rglob("*.py")}


def _imports(name: str, path: Path) -> set[str]:
    """The broker modules ``name`` (at ``path``) imports."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in MODULES:
                    found.add(submodule)
                elif target in MODULES:
                    found.add(target)
    return found - {name}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` as the modules along it, or [] when there is none."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str]:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return []
        for imported in sorted(graph[module]):
            if cycle := visit(imported, [*path, module]):
                return cycle
        done.add(module)
        return []

    for module in sorted(graph):
        if cycle := visit(module, []):
            return cycle
    return []


def test_the_broker_modules_import_one_another_without_a_cycle() -> None:
    graph = {name: _imports(name, path) for name, path in MODULES.items()}
    # the graph is read: relative, absolute, package and TYPE_CHECKING imports all count
    assert graph["broker.model.vhost"] >= {"broker.model.queues", "broker.model.queue_types"}
    assert "broker.server.spec09.lane_queue" in graph["broker.server.spec09.lanes"]
    assert "broker.server.connection_view" in graph["broker.server.abc"]  # TYPE_CHECKING
    assert "broker.runner" in graph["broker"]
    assert _cycle(graph) == []


def test_the_cycle_finder_names_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
