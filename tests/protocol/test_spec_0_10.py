"""The transitional 0-10 draft as generated from its XML: its classes, methods, constants,
domains and protocol header, and what it changes in the classes it shares with 0-9."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from importlib import resources

import pytest

from amqp_protocol import ALL_SPECS, KNOWN_SPECS, SPEC_0_9, SPEC_0_10, errors, frames
from amqp_protocol.codegen.xml_spec import parse_spec
from amqp_protocol.generated import spec_0_10
from amqp_protocol.spec import Spec
from amqp_protocol.versions import spec_for_header

_XML = resources.files("amqp_protocol").joinpath("spec/amqp-transitional0-10.xml").read_bytes()
_NS = "{http://www.amqp.org/schema/amqp.xsd}"


def test_the_draft_has_the_16_classes_and_120_methods_its_xml_counts() -> None:
    root = ET.fromstring(_XML)
    xml_classes = root.findall(f"{_NS}class")
    assert len(SPEC_0_10.classes) == len(xml_classes) == 16
    assert len(SPEC_0_10.methods) == sum(len(c.findall(f"{_NS}method")) for c in xml_classes)
    assert len(SPEC_0_10.methods) == 120
    assert len(spec_0_10.METHODS) == 120


def test_the_draft_adds_the_classes_of_0_10_with_their_ids() -> None:
    ids = {name: cdef.class_id for name, cdef in SPEC_0_10.classes.items()}
    assert {
        "session": 20,
        "channel": 21,
        "dtx-demarcation": 100,
        "dtx-coordination": 105,
        "message": 120,
        "binding": 130,
        "execution": 140,
    }.items() <= ids.items()
    session = [m.name for m in SPEC_0_10.classes["session"].methods]
    assert session == [
        f"session.{name}"
        for name in [
            "open",
            "attached",
            "flow",
            "flow-ok",
            "close",
            "closed",
            "resume",
            "ping",
            "pong",
            "suspend",
            "detached",
            "ack",
            "high-water-mark",
            "solicit-ack",
        ]
    ]
    assert SPEC_0_10.has_method("exchange.query") and SPEC_0_10.has_method("exchange.query-ok")
    assert [m.name for m in SPEC_0_10.classes["execution"].methods] == [
        "execution.flush",
        "execution.complete",
    ]


def test_shared_classes_keep_the_drafts_differences_from_0_9() -> None:
    publish_0_9, publish_0_10 = SPEC_0_9.method("basic.publish"), SPEC_0_10.method("basic.publish")
    assert "mandatory" in publish_0_9.FIELD_NAMES
    assert publish_0_10.FIELD_NAMES == (
        "ticket",
        "exchange",
        "routing_key",
        "reject_unroutable",
        "immediate",
    )
    assert "alternate_exchange" in SPEC_0_10.method("exchange.declare").FIELD_NAMES
    assert not SPEC_0_10.has_method("exchange.declare-ok")  # the draft drops the -ok replies
    assert not SPEC_0_10.has_method("tx.select-ok")
    assert (
        SPEC_0_10.classes["channel"].class_id == 21 and SPEC_0_9.classes["channel"].class_id == 20
    )
    assert "cluster_id" not in SPEC_0_10.properties("basic").field_names


def test_the_drafts_constants_and_reply_codes() -> None:
    assert SPEC_0_10.constant("frame-request") == frames.REQUEST == 9
    assert SPEC_0_10.constant("frame-response") == frames.RESPONSE == 10
    assert SPEC_0_10.has_request_frames
    assert not any(spec.has_request_frames for spec in ALL_SPECS)
    xa = {name: value for name, (value, _) in SPEC_0_10.constants.items() if name.startswith("xa")}
    assert xa == {
        "xa-ok": 0,
        "xa-rbrollback": 1,
        "xa-rbtimeout": 2,
        "xa-heurhaz": 3,
        "xa-heurcom": 4,
        "xa-heurrb": 5,
        "xa-heurmix": 6,
        "xa-rdonly": 7,
    }
    assert SPEC_0_10.constants["invalid-argument"] == (542, "hard-error")
    assert errors.error_for_code(542) is errors.InvalidArgument
    assert errors.InvalidArgument.hard


def test_the_drafts_39_domains_resolve_to_wire_types() -> None:
    xml_domains = {d.get("name") for d in ET.fromstring(_XML).findall(f"{_NS}domain")}
    assert len(xml_domains) == 39
    assert xml_domains <= set(SPEC_0_10.domains)
    assert SPEC_0_10.domains["session-id"] == "uuid"
    assert SPEC_0_10.domains["rfc1982-long"] == "long"
    attached = SPEC_0_10.method("session.attached").DEFINITION
    assert [(f.name, f.type) for f in attached.fields] == [
        ("session_id", "uuid"),
        ("detached_lifetime", "long"),
    ]
    ack = SPEC_0_10.method("session.ack").DEFINITION
    assert [f.type for f in ack.fields] == ["long", "rfc1982-long-set"]


def test_the_field_table_type_codes_are_the_xmls() -> None:
    constants = [
        c
        for c in ET.fromstring(_XML).findall(f"{_NS}constant")
        if c.get("class") == "field-table-type"
    ]
    assert [(t.code, f"field-table-{t.name}") for t in spec_0_10.FIELD_TABLE_TYPES] == [
        (int(c.get("value", ""), 16), c.get("name")) for c in constants
    ]
    assert SPEC_0_10.field_table_types == spec_0_10.FIELD_TABLE_TYPES
    assert all(not spec.field_table_types for spec in ALL_SPECS)


def test_parse_spec_reads_a_namespaced_xml_as_a_plain_one() -> None:
    body = (
        '<constant name="frame-end" value="0xce"/>'
        '<domain name="queue-name" type="shortstr"/>'
        '<class name="queue" index="50"><method name="purge" index="30">'
        '<field name="queue" domain="queue-name"/></method></class>'
    )
    plain = parse_spec(f'<amqp major="0" minor="10">{body}</amqp>'.encode())
    namespaced = parse_spec(
        f'<amqp xmlns="{_NS[1:-1]}" major="0" minor="10">{body}</amqp>'.encode()
    )
    for spec in (plain, namespaced):
        assert spec.constants == {"frame-end": (206, None)}
        assert [m.name for m in spec.classes["queue"].methods] == ["queue.purge"]


def test_header_amqp_1_1_0_10_names_the_draft() -> None:
    assert SPEC_0_10.protocol_header == b"AMQP\x01\x01\x00\x0a"
    assert spec_for_header(b"AMQP\x01\x01\x00\x0a") is SPEC_0_10
    assert SPEC_0_10 in KNOWN_SPECS
    # What the broker offers is unchanged until it has a dialect for the draft.
    assert spec_for_header(b"AMQP\x01\x01\x00\x0a", ALL_SPECS) is None


@pytest.mark.parametrize("spec", KNOWN_SPECS, ids=lambda s: s.label)
def test_each_known_header_names_its_own_version(spec: Spec) -> None:
    assert spec_for_header(spec.protocol_header) is spec
