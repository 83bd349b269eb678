"""Every protocol header the protocol layer maps to a version (``spec_for_header``: the
header each spec states and the aliases clients send, such as py-amqplib's ``AMQP 1 1 9 1``
for 0-8) opens a connection of that version, on the bundled broker as on RabbitMQ 3.10; on
RabbitMQ 4 those of 0-9-1 and 0-9 only: 4 no longer speaks 0-8 (it answers 0-8's headers
with AMQP 1.0's), so the 0-8 headers are checked on the bundled broker alone."""

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
SPOKEN_BY_RABBITMQ_4 = [(spec, header) for spec, header in HEADERS if spec.version != (0, 8, 0)]
ONLY_OURS = [(spec, header) for spec, header in HEADERS if spec.version == (0, 8, 0)]


def _ids(headers: list[tuple[Spec, bytes]]) -> list[str]:
    return ["-".join(map(str, h[4:])) for _, h in headers]


@pytest.mark.parametrize(("spec", "header"), SPOKEN_BY_RABBITMQ_4, ids=_ids(SPOKEN_BY_RABBITMQ_4))
def test_a_header_the_protocol_layer_knows_opens_its_version(
    broker_url: str, spec: Spec, header: bytes
) -> None:
    _opens(broker_url, spec, header)


@pytest.mark.parametrize("broker_url", ["bundled"], indirect=True)
@pytest.mark.parametrize(("spec", "header"), ONLY_OURS, ids=_ids(ONLY_OURS))
def test_a_0_8_header_opens_a_0_8_connection(broker_url: str, spec: Spec, header: bytes) -> None:
    _opens(broker_url, spec, header)


def _opens(broker_url: str, spec: Spec, header: bytes) -> None:
    assert spec_for_header(header) is spec
    peer = Peer(broker_url, spec, handshake=False, header=header)
    try:
        start = peer.start
        assert (start.version_major, start.version_minor) == ANNOUNCED[spec.version]
    finally:
        peer.close()
