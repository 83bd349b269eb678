"""The rules of a specification, as the conformance reports count them.

Every ``<rule>`` of a spec file gets an id ``class.method[.field]:name`` (or
``domain.NAME:name`` for rules on domains), unique across the file. Tests claim rules of
``amqp0-9.xml`` with ``@pytest.mark.spec_rule("queue.declare:...")`` and rules of the
transitional 0-10 draft with ``@pytest.mark.spec010_rule(...)``; the plugin checks every
claimed id exists in that spec.
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib import resources

#: The specs with a conformance report: the pytest marker that claims their rules, by file.
SPECS = {"amqp0-9.xml": "spec_rule", "amqp-transitional0-10.xml": "spec010_rule"}


@dataclass(frozen=True)
class Rule:
    id: str
    class_name: str  #: "" for domain rules
    method: str
    field: str
    name: str
    has_scenario: bool  #: the spec gives a test scenario
    must: bool  #: the rule's text says MUST / MUST NOT
    text: str


def _text(el: ET.Element) -> str:
    docs = (" ".join(d.itertext()) for d in _docs(el) if d.get("type") != "scenario")
    return " ".join(" ".join(docs).split())


def _docs(el: ET.Element) -> list[ET.Element]:
    return [d for d in el if d.tag.rpartition("}")[2] == "doc"]


def _walk(el: ET.Element, ctx: dict[str, str], out: list[Rule]) -> None:
    for child in el:
        child.tag = child.tag.rpartition("}")[2]  # the 0-10 draft's elements have a namespace
        if child.tag == "rule":
            if ctx.get("domain"):
                rid = f"domain.{ctx['domain']}:{child.get('name')}"
            else:
                path = ".".join(ctx[k] for k in ("class", "method", "field") if ctx.get(k))
                rid = f"{path}:{child.get('name')}"
            text = _text(child)
            out.append(
                Rule(
                    id=rid,
                    class_name=ctx.get("class", ""),
                    method=ctx.get("method", ""),
                    field=ctx.get("field", ""),
                    name=child.get("name", ""),
                    has_scenario=any(d.get("type") == "scenario" for d in _docs(child)),
                    must="MUST" in text,
                    text=text,
                )
            )
        elif child.tag in ("class", "method", "field", "domain"):
            inner = dict(ctx)
            if child.tag == "class":
                inner = {"class": child.get("name", "")}
            inner[child.tag] = child.get("name", "")
            _walk(child, inner, out)
        else:
            _walk(child, ctx, out)


@functools.cache
def rules(spec: str = "amqp0-9.xml") -> dict[str, Rule]:
    """All rules of ``spec`` (a file of ``amqp_protocol/spec``) by id, in document order."""
    xml = resources.files("amqp_protocol").joinpath("spec").joinpath(spec).read_bytes()
    out: list[Rule] = []
    _walk(ET.fromstring(xml), {}, out)
    return {rule.id: rule for rule in out}
