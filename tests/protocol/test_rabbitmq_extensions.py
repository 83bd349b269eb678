"""The RabbitMQ extensions merged into 0-9-1 from spec/rabbitmq-0-9-1-extensions.xml."""

from __future__ import annotations

import pika.frame
import pika.spec
import pytest

from amqp_protocol import SPEC_0_9_1, Connection, events


@pytest.mark.parametrize(
    ("ours", "pikas"),
    [
        (
            SPEC_0_9_1.method("connection.blocked")(reason="low on memory"),
            pika.spec.Connection.Blocked(reason="low on memory"),
        ),
        (SPEC_0_9_1.method("connection.unblocked")(), pika.spec.Connection.Unblocked()),
        (
            SPEC_0_9_1.method("connection.update-secret")(new_secret=b"s3", reason="rotate"),
            pika.spec.Connection.UpdateSecret(new_secret=b"s3", reason="rotate"),
        ),
        (SPEC_0_9_1.method("connection.update-secret-ok")(), pika.spec.Connection.UpdateSecretOk()),
    ],
)
def test_extension_methods_are_encoded_as_pika_encodes_them(ours: object, pikas: object) -> None:
    client = Connection("client", SPEC_0_9_1)
    assert client.send_method(0, ours) == pika.frame.Method(0, pikas).marshal()  # type: ignore[arg-type]


def test_a_client_decodes_connection_blocked_from_the_server() -> None:
    client = Connection("client", SPEC_0_9_1)
    frame = pika.frame.Method(0, pika.spec.Connection.Blocked(reason="disk")).marshal()
    (event,) = client.receive_data(frame)
    assert isinstance(event, events.MethodReceived)
    assert event.method.NAME == "connection.blocked" and event.method.reason == "disk"  # type: ignore[attr-defined]


def test_basic_recover_expects_recover_ok_and_existing_methods_keep_their_fields() -> None:
    recover = SPEC_0_9_1.method("basic.recover")
    assert recover.responses() == ("basic.recover-ok",)
    assert recover.FIELD_NAMES == ("requeue",)
