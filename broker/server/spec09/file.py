"""The file class: staging (open, open-ok, stage) in both directions, publish, deliver,
return, ack, reject, qos, consume and cancel.

Client to server: file.open(identifier, content-size) -> file.open-ok(staged-size: what a
previous, interrupted staging of the same identifier left) -> file.stage with the content
from that offset -> file.publish(identifier). A stage cut by a broken connection keeps the
octets that arrived. Server to client, per delivery: file.open -> the client's file.open-ok
-> file.stage from the client's offset -> file.deliver; one delivery at a time per channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from amqp_protocol import errors
from amqp_protocol.generated.any_version import (
    FileAck,
    FileCancel,
    FileConsume,
    FileOpen,
    FileOpenOk,
    FileProperties,
    FilePublish,
    FileQos,
    FileReject,
    FileStage,
)

from . import consumers, rejects, staging
from .class_message import ClassMessage
from .publishing import publish
from .state import OutgoingFile, state_of

if TYPE_CHECKING:
    from ...model.message import QueuedMessage
    from ...model.queues import Consumer, Queue
    from ..abc import Channel


class FileSink:
    """Delivers file messages of a channel's file consumers."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def can_deliver(self, consumer: Consumer) -> bool:
        ch = self.channel
        return state_of(ch).outgoing_file is None and consumers.may_deliver(ch, consumer)

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        ch = self.channel
        tag = ch.track_delivery(consumer, queue, entry)
        state_of(ch).outgoing_file = OutgoingFile(consumer, queue, entry, tag)
        message = entry.message
        identifier = getattr(message, "identifier", "") or f"delivery-{tag}"
        ch.send(
            ch.conn.spec.method("file.open")(identifier=identifier, content_size=len(message.body))
        )

    def consumer_cancelled(self, consumer: Consumer) -> None:
        consumers.forget(self.channel, consumer)


def _qos(ch: Channel, m: FileQos) -> None:
    state_of(ch).prefetch["file"] = m.prefetch_count
    ch.send(ch.conn.spec.method("file.qos-ok")())


def _consume(ch: Channel, m: FileConsume) -> None:
    consumer = consumers.consume(
        ch, m.queue, m.consumer_tag, "file", FileSink(ch), no_ack=m.no_ack, exclusive=m.exclusive
    )
    if not m.no_wait:
        ch.send(ch.conn.spec.method("file.consume-ok")(consumer_tag=consumer.tag))
    consumer.queue.dispatch()


def _cancel(ch: Channel, m: FileCancel) -> None:
    consumers.cancel(ch, m.consumer_tag)
    if not m.no_wait:
        ch.send(ch.conn.spec.method("file.cancel-ok")(consumer_tag=m.consumer_tag))


def _open(ch: Channel, m: FileOpen) -> None:
    """The client starts (or resumes) staging ``identifier``."""
    ext = state_of(ch)
    if ext.staging is not None:
        raise errors.CommandInvalid(f"COMMAND_INVALID - staging of '{ext.staging}' not finished")
    staged = staging.get(ch, m.identifier)
    if staged is None or staged.complete or len(staged.data) > m.content_size:
        staged = staging.Staged(b"")
        staging.put(ch, m.identifier, staged)
    ext.staging = m.identifier
    ch.send(ch.conn.spec.method("file.open-ok")(staged_size=len(staged.data)))


def stage(ch: Channel, m: FileStage, properties: FileProperties, body: bytes) -> None:
    """The client's file.stage: the content from the offset file.open-ok gave."""
    ext = state_of(ch)
    if ext.staging is None:
        raise errors.CommandInvalid("COMMAND_INVALID - file.stage without file.open")
    identifier, ext.staging = ext.staging, None
    staged = staging.get(ch, identifier) or staging.Staged(b"")
    staging.put(ch, identifier, staging.Staged(staged.data + body, properties, complete=True))


def interrupted(ch: Channel, partial: bytes) -> None:
    """The channel went away in the middle of a stage: keep what arrived for a resume."""
    ext = state_of(ch)
    if ext.staging is None:
        return
    staged = staging.get(ch, ext.staging) or staging.Staged(b"")
    staging.put(ch, ext.staging, staging.Staged(staged.data + partial))
    ext.staging = None


def _publish(ch: Channel, m: FilePublish) -> None:
    staged = staging.get(ch, m.identifier)
    if staged is None or not staged.complete:
        raise errors.NotFound(f"NOT_FOUND - no staged file '{m.identifier}'")
    staging.pop(ch, m.identifier)
    priority = staged.properties.priority
    message = ClassMessage(
        "file",
        m.exchange,
        m.routing_key,
        staged.properties,
        staged.data,
        priority=priority,
        identifier=m.identifier,
    )
    publish(ch, m.exchange, message, m.mandatory, m.immediate)


def _open_ok(ch: Channel, m: FileOpenOk) -> None:
    """The client is ready for the file we opened: stage it from its offset, deliver it."""
    ext = state_of(ch)
    outgoing = ext.outgoing_file
    if outgoing is None:
        raise errors.CommandInvalid("COMMAND_INVALID - file.open-ok without file.open")
    message = outgoing.lane.as_delivered(outgoing.entry)
    if not 0 <= m.staged_size <= len(message.body):
        raise errors.PreconditionFailed(
            f"PRECONDITION_FAILED - staged-size {m.staged_size} outside the "
            f"{len(message.body)}-octet file"
        )
    ext.outgoing_file = None
    spec = ch.conn.spec
    ch.conn.send_content(
        ch.id, spec.method("file.stage")(), message.properties, message.body[m.staged_size :]
    )
    identifier = getattr(message, "identifier", "") or f"delivery-{outgoing.delivery_tag}"
    deliver = spec.method("file.deliver")(
        consumer_tag=outgoing.consumer.tag,
        delivery_tag=outgoing.delivery_tag,
        redelivered=outgoing.entry.redelivered,
        exchange=message.exchange,
        routing_key=message.routing_key,
        identifier=identifier,
    )
    ch.send(deliver)
    outgoing.lane.dispatch()


def _ack(ch: Channel, m: FileAck) -> None:
    ch.settle_or_hold("ack", m.delivery_tag, m.multiple)


def _reject(ch: Channel, m: FileReject) -> None:
    rejects.reject(ch, m.delivery_tag, m.requeue)


HANDLERS = {
    "file.qos": _qos,
    "file.consume": _consume,
    "file.cancel": _cancel,
    "file.open": _open,
    "file.open-ok": _open_ok,
    "file.publish": _publish,
    "file.ack": _ack,
    "file.reject": _reject,
}
