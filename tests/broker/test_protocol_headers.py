"""Every protocol header the protocol layer maps to a version (``spec_for_header``: the
header each spec states and the aliases clients send, such as py-amqplib's ``AMQP 1 1 9 1``
for 0-8) opens a connection of that version, on the bundled broker as on RabbitMQ."""

from __future__ import annotations

import pytest

from amqp_protocol import ALL_SPECS, Spec
from amqp_protocol.versions import spec_for_header
from tests.spec09.peer import Peer

#: The version connection.start announces: 0-8's XML (and RabbitMQ) say 8-0.
ANNOUNCED = {(0, 9, 1): (0, 9), (0, 9, 0): (0, 9), (0, 8, 0): (8, 0)}
HEADERS = [
    (spec, header) for spec in ALL_SPECS for header in (spec.protocol_header, *spec.header_aliases)
]


@pytest.mark.parametrize(
    ("spec", "header"), HEADERS, ids=["-".join(map(str, h[4:])) for _, h in HEADERS]
)
def test_a_header_the_protocol_layer_knows_opens_its_version(
    broker_url: str, spec: Spec, header: bytes
) -> None:
    assert spec_for_header(header) is spec
    peer = Peer(broker_url, spec, handshake=False, header=header)
    try:
        start = peer.start
        assert (start.version_major, start.version_minor) == ANNOUNCED[spec.version]
    finally:
        peer.close()
