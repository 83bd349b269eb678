"""The checked-in generated modules are what the spec XML generates, and nothing builds
protocol classes or reads the XML at run time."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import amqp_protocol
from amqp_protocol import KNOWN_SPECS
from amqp_protocol.codegen.modules import GENERATED, VERSIONS, generated_modules, stale_modules
from amqp_protocol.codegen.xml_spec import read_spec
from amqp_protocol.spec import Spec


def test_checked_in_modules_are_what_the_xml_generates() -> None:
    assert stale_modules() == [], "run: python -m amqp_protocol.generate"


@pytest.mark.parametrize("module", sorted(VERSIONS))
def test_each_generated_spec_holds_what_its_xml_defines(module: str) -> None:
    """The definitions are checked-in literals: equal, value for value, to the XML's."""
    xml = read_spec(*VERSIONS[module])
    spec: Spec = importlib.import_module(f"amqp_protocol.generated.{module}").SPEC
    assert (spec.version, spec.protocol_header, spec.header_aliases) == (
        xml.version,
        xml.protocol_header,
        xml.header_aliases,
    )
    assert spec.constants == xml.constants and spec.domains == xml.domains
    assert spec.classes == xml.classes and spec.field_table_types == xml.field_table_types
    for cdef in spec.classes.values():
        for mdef in cdef.methods:
            cls = spec.method(mdef.name)
            assert cls.DEFINITION is mdef and cls.SPEC is spec
            assert spec.method_by_id(mdef.class_id, mdef.method_id) is cls
        if cdef.properties:
            assert spec.properties(cdef.name).property_defs is cdef.properties


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


def test_importing_the_protocol_client_and_broker_opens_no_xml_nor_the_generator() -> None:
    """Every version's definitions are checked-in code: an audit hook sees each file opened
    while the protocol (with all four versions), the client and the broker are imported."""
    probe = (
        "import json, sys\n"
        "opened = []\n"
        "def audit(event, args):\n"
        "    if event == 'open' and isinstance(args[0], (str, bytes)):\n"
        "        opened.append(str(args[0]))\n"
        "sys.addaudithook(audit)\n"
        "import amqp_protocol, amqp_spark.client, broker, broker.cli\n"
        "assert len(amqp_protocol.KNOWN_SPECS) == 4\n"
        "print(json.dumps({'opened': opened, 'modules': sorted(sys.modules)}))\n"
    )
    found = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
    )
    assert any(path.endswith(".py") or path.endswith(".pyc") for path in found["opened"])
    assert [path for path in found["opened"] if path.lower().endswith(".xml")] == []
    loaded = set(found["modules"])
    assert "amqp_protocol.generated.spec_0_10" in loaded
    assert not {"amqp_protocol.codegen", "amqp_protocol.generate", "xml.etree"} & loaded
