"""The benchmarks and the shared test infrastructure (``testbed/``) import nothing from
``tests/``: what both need lives in ``testbed``, so a test module or a conftest can change
without breaking a benchmark."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module ``path`` imports, absolute (a relative import resolved against its package),
    with each name a ``from`` import takes (it may be a submodule)."""
    package = path.relative_to(root).parent.parts
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            modules.add(module)
            modules.update(f"{module}.{alias.name}" for alias in node.names)
    return modules


def test_imported_modules_resolves_absolute_relative_and_nested_imports(tmp_path: Path) -> None:
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    module = tmp_path / "tests" / "sub" / "mod.py"
    module.write_text(
        "import os\n"
        "from .. import support\n"
        "def f() -> None:\n"
        "    from tests.store.conftest import declare_queues\n"
    )
    assert imported_modules(module, tmp_path) == {
        "os",
        "tests",
        "tests.support",
        "tests.store.conftest",
        "tests.store.conftest.declare_queues",
    }


@pytest.mark.parametrize("folder", ["benchmarks", "testbed"])
def test_nothing_under_folder_imports_the_tests(folder: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if m == "tests" or m.startswith("tests.")
        )
        for path in sorted((ROOT / folder).rglob("*.py"))
    }
    offenders = {path: modules for path, modules in offenders.items() if modules}
    assert not offenders, f"{folder}/ imports from tests/: {offenders}"
