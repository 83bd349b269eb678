"""The model's modules import one another in one direction: no cycle, counting every import
a reader must follow (those under ``TYPE_CHECKING`` and inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

import broker.model

MODEL = Path(broker.model.__file__).parent


def _imports(path: Path) -> set[str]:
    """The sibling modules ``path`` imports (relative imports of broker.model's own)."""
    siblings = {p.stem for p in MODEL.glob("*.py")}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.module and node.module.startswith("broker.model."):
                found.add(node.module.split(".")[2])
    return (found & siblings) - {path.stem}


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


def test_the_model_modules_import_one_another_without_a_cycle() -> None:
    graph = {path.stem: _imports(path) for path in MODEL.glob("*.py")}
    assert graph["vhost"] >= {"queues", "persistence", "queue_types"}  # the graph is read
    assert _cycle(graph) == []
