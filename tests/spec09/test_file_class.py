"""The file class: staging, resume, publish, deliver, ack, reject, qos and its errors."""

from __future__ import annotations

import time
from collections.abc import Callable

from amqp_protocol import Spec
from broker import Broker

from .dialects import in_both_dialects
from .flows import (
    declare_internal_exchange,
    declare_queue,
    peer_on,
    publish_file,
    receive_file,
    reject_a_file,
    stage_file,
)
from .peer import Peer


@in_both_dialects(
    "file.open-ok.staged-size:02",
    "file.publish.exchange:01",
    "file:04",
    draft=(
        "file.open-ok.staged-size:staging",
        "file.publish.exchange:default",
        "file:acknowledgement-support",
    ),
)
def test_a_staged_file_published_to_the_default_exchange_is_delivered(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    publish_file(peer, 1, name, b"file-body" * 100, "id-1", properties={"filename": "a.txt"})
    peer.call(1, "file.consume", queue=name, consumer_tag="c1")
    deliver, body = receive_file(peer, 1)
    assert body == b"file-body" * 100
    assert (deliver.consumer_tag, deliver.routing_key, deliver.identifier) == ("c1", name, "id-1")
    peer.send(1, "file.ack", delivery_tag=deliver.delivery_tag, multiple=False)
    peer.call(1, "file.cancel", consumer_tag="c1")
    assert peer.call(1, "queue.declare", queue=name, passive=True).queue == name


@in_both_dialects(
    "file.open-ok.staged-size:01",
    "file.open.content-size:01",
    draft=("file.open-ok.staged-size:behaviour", "file.open.content-size:content-size"),
)
def test_a_client_resumes_its_delivery_from_the_offset_it_gives(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    publish_file(peer, 1, name, b"0123456789", "resume-deliver")
    peer.call(1, "file.consume", queue=name, no_ack=True)
    peer.expect(1, "file.open")
    peer.send(1, "file.open-ok", staged_size=4)
    assert peer.expect(1, "file.stage").body == b"456789"
    peer.expect(1, "file.deliver")


@in_both_dialects()
def test_a_resume_offset_beyond_the_file_is_a_precondition_failure(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    publish_file(peer, 1, name, b"0123456789", f"beyond-{name}")
    peer.call(1, "file.consume", queue=name)
    peer.expect(1, "file.open")
    peer.send(1, "file.open-ok", staged_size=11)
    assert peer.channel_error(1) == 406
    peer.open_channel(2)
    peer.call(2, "file.consume", queue=name, no_ack=True)
    assert receive_file(peer, 2)[1] == b"0123456789"  # the file went back to its queue


@in_both_dialects()
def test_a_stage_cut_by_a_broken_connection_resumes_where_it_stopped(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    first = peer_factory()
    first.open_channel(1)
    declare_queue(first, 1, name)
    body = bytes(range(256)) * 4000
    ok = first.call(1, "file.open", identifier="big", content_size=len(body))
    assert ok.staged_size == 0
    # Send the method, header and part of the body of file.stage, then drop the socket.
    frames = first.proto.send_content(
        1, first.method("file.stage"), first.spec.properties("file")(), body
    )
    # Two whole body frames (frame-max 131072) and a partial third.
    first.sock.sendall(frames[:300_000])
    first.sock.close()
    first.closed = True
    time.sleep(0.3)  # the broker notices the closed socket
    second = peer_factory()
    second.open_channel(1)
    offset = stage_file(second, 1, "big", body)
    assert 0 < offset < len(body)
    second.send(1, "file.publish", exchange="", routing_key=name, identifier="big")
    second.call(1, "file.consume", queue=name, no_ack=True)
    _, received = receive_file(second, 1)
    assert received == body


@in_both_dialects()
def test_file_stage_without_file_open_is_a_command_invalid(peer: Peer) -> None:
    peer.send_content(1, "file.stage", b"data")
    assert peer.error(1) == ("connection", 503)


@in_both_dialects()
def test_publishing_an_unstaged_identifier_is_not_found(peer: Peer, name: str) -> None:
    peer.send(1, "file.publish", exchange="", routing_key=name, identifier="never-staged")
    assert peer.channel_error(1) == 404


@in_both_dialects(
    "file.qos.prefetch-count:01", draft=("file.qos.prefetch-count:prefetch-discretion",)
)
def test_file_deliveries_stay_within_the_prefetch_count(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    for i in range(3):
        publish_file(peer, 1, name, b"x%d" % i, f"q-{name}-{i}")
    peer.call(1, "file.qos", prefetch_size=0, prefetch_count=1, global_=False)
    peer.call(1, "file.consume", queue=name)
    deliver, _ = receive_file(peer, 1)
    peer.nothing(1, "file.open")
    peer.send(1, "file.ack", delivery_tag=deliver.delivery_tag, multiple=False)
    receive_file(peer, 1)


@in_both_dialects(
    "file.ack.multiple:01",
    "domain.delivery-tag:non-zero",
    draft=("file.ack.multiple:validation",),
)
def test_acking_an_unknown_delivery_tag_is_a_channel_error(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    publish_file(peer, 1, name, b"x", f"ack-{name}")
    peer.call(1, "file.consume", queue=name)
    deliver, _ = receive_file(peer, 1)
    assert deliver.delivery_tag != 0
    peer.send(1, "file.ack", delivery_tag=deliver.delivery_tag + 100, multiple=False)
    assert peer.channel_error(1) == 406


@in_both_dialects("file.reject:02", draft=("file.reject:not-selection",))
def test_a_rejected_file_without_requeue_is_discarded(peer: Peer, name: str) -> None:
    reject_a_file(peer, name, requeue=False)
    peer.nothing(1, "file.open")


@in_both_dialects(
    "file.consume.consumer-tag:01", draft=("file.consume.consumer-tag:not-existing-consumer",)
)
def test_a_second_file_consumer_with_the_same_tag_is_a_530(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "file.consume", queue=name, consumer_tag="dup")
    peer.send(1, "file.consume", queue=name, consumer_tag="dup")
    assert peer.error(1) == ("connection", 530)


@in_both_dialects("file.consume.exclusive:01", draft=("file.consume.exclusive:in-use",))
def test_exclusive_file_consume_on_a_queue_with_consumers_is_405(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "file.consume", queue=name, consumer_tag="a")
    peer.send(1, "file.consume", queue=name, consumer_tag="b", exclusive=True)
    assert peer.channel_error(1) == 405


@in_both_dialects("file.consume.queue:01", draft=("file.consume.queue:queue-exists-if-empty",))
def test_file_consume_of_an_empty_queue_name_without_a_declared_queue_is_530(peer: Peer) -> None:
    peer.send(1, "file.consume", queue="")
    assert peer.error(1) == ("connection", 530)


@in_both_dialects("file.publish.exchange:02", draft=("file.publish.exchange:internal",))
def test_file_publish_to_an_internal_exchange_is_403(
    bundled_broker_url: str, peer: Peer, name: str
) -> None:
    declare_internal_exchange(bundled_broker_url, name)
    publish_file(peer, 1, "k", b"x", f"int-{name}", exchange=name)
    assert peer.channel_error(1) == 403


@in_both_dialects("file:03", draft=("file:priority-levels",))
def test_file_messages_have_two_priority_levels(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    publish_file(peer, 1, name, b"low", f"lo-{name}", properties={"priority": 1})
    publish_file(peer, 1, name, b"high", f"hi-{name}", properties={"priority": 7})
    peer.call(1, "file.consume", queue=name, no_ack=True)
    assert [receive_file(peer, 1)[1] for _ in range(2)] == [b"high", b"low"]


@in_both_dialects("file.publish.mandatory:01", draft=("file.publish.mandatory:implementation",))
def test_an_unroutable_mandatory_file_is_returned(peer: Peer, name: str) -> None:
    publish_file(
        peer, 1, "nowhere-" + name, b"back", f"ret-{name}", exchange="amq.direct", mandatory=True
    )
    returned = peer.expect(1, "file.return")
    assert (returned.method.reply_code, returned.body) == (312, b"back")


@in_both_dialects("file:01", draft=("file:reliable-storage",))
def test_file_messages_of_a_durable_queue_survive_a_restart_until_acked(
    restarted: Callable[[], Broker], name: str, spec: Spec
) -> None:
    peer = peer_on(restarted().url, spec)
    declare_queue(peer, 1, name, durable=True)
    publish_file(peer, 1, name, b"kept on disk", f"durable-{name}", properties={"priority": 3})
    peer.call(1, "queue.declare", queue=name, passive=True)  # the publish is handled
    peer.close()
    peer = peer_on(restarted().url, spec)
    peer.call(1, "file.consume", queue=name)
    deliver, body = receive_file(peer, 1)
    assert (body, deliver.redelivered, deliver.identifier) == (
        b"kept on disk",
        True,
        f"durable-{name}",
    )
    peer.send(1, "file.ack", delivery_tag=deliver.delivery_tag)
    peer.close()
    peer = peer_on(restarted().url, spec)
    peer.call(1, "file.consume", queue=name, no_ack=True)
    peer.nothing(1, "file.open")
    peer.close()


def test_a_deleted_durable_queue_leaves_no_file_message_to_its_successor(
    restarted: Callable[[], Broker], name: str
) -> None:
    peer = peer_on(restarted().url)
    declare_queue(peer, 1, name, durable=True)
    publish_file(peer, 1, name, b"gone with its queue", f"deleted-{name}")
    assert peer.call(1, "queue.delete", queue=name).message_count == 1
    declare_queue(peer, 1, name, durable=True)
    peer.close()
    peer = peer_on(restarted().url)
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 0
    peer.close()
