"""The checked-in generated modules are what the spec XML generates, and nothing builds
protocol classes at run time."""

from __future__ import annotations

import shutil
from pathlib import Path

import amqp_protocol
from amqp_protocol import KNOWN_SPECS
from amqp_protocol.generate import GENERATED, generated_modules, stale_modules


def test_checked_in_modules_are_what_the_xml_generates() -> None:
    assert stale_modules() == [], "run: python -m amqp_protocol.generate"


def test_an_edited_or_missing_generated_module_counts_as_stale(tmp_path: Path) -> None:
    for name in generated_modules():
        shutil.copy(GENERATED / name, tmp_path / name)
    assert stale_modules(tmp_path) == []
    edited = tmp_path / "spec_0_9.py"
    edited.write_text(edited.read_text().replace("return m, offset", "return m, offset + 1", 1))
    (tmp_path / "reply_codes.py").unlink()
    assert stale_modules(tmp_path) == ["spec_0_9.py", "reply_codes.py"]


def test_every_method_and_properties_class_is_a_generated_module_class() -> None:
    for spec in KNOWN_SPECS:
        classes = [
            *spec.methods.values(),
            *(spec.properties(c) for c in spec.classes if spec.classes[c].properties),
        ]
        assert classes
        assert {cls.__module__ for cls in classes} == {
            f"amqp_protocol.generated.spec_{spec.label.replace('-', '_')}"
        }


def test_the_protocol_package_has_no_exec() -> None:
    package = Path(amqp_protocol.__file__).parent
    for path in package.rglob("*.py"):
        assert "exec(" not in path.read_text(), path
