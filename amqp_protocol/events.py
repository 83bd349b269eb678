"""What a ``Connection`` reports after reading bytes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .methods import Method
from .properties import Properties
from .spec import Spec


@dataclass(slots=True)
class ProtocolHeaderReceived:
    """Server side: the client's protocol header named a version we speak."""

    spec: Spec


@dataclass(slots=True)
class UnsupportedProtocol:
    """The peer's protocol header named a version we do not speak.

    On the server, ``reply`` is our preferred header, to be sent before closing the socket
    (the spec's negotiation). On the client, ``header`` is what the server offered instead.
    """

    header: bytes
    reply: bytes


@dataclass(slots=True)
class MethodReceived:
    channel: int
    method: Method


@dataclass(slots=True)
class ContentReceived:
    """A content-bearing method with its header and complete body."""

    channel: int
    method: Method
    properties: Properties
    body: bytes


class DeliveryKind(NamedTuple):
    """What the deliveries of one kind share: all of a basic.deliver but its delivery tag,
    and the content's properties."""

    consumer_tag: str
    redelivered: bool
    exchange: str
    routing_key: str
    properties: Properties


@dataclass(slots=True)
class DeliveryColumns:
    """Deliveries of one channel as columns, in the order they arrived: per delivery its
    tag, its kind (an index into ``distinct``) and its body.

    ``keys`` holds each distinct kind's encoded form (its method frame without the delivery
    tag, and its content header's properties): equal keys are equal kinds, so that the kinds
    of several runs can be merged; None for a kind read frame by frame, a kind of its own.
    """

    tags: list[int]
    kinds: list[int]
    bodies: list[bytes]
    distinct: list[DeliveryKind]
    keys: list[bytes | None]

    def __len__(self) -> int:
        return len(self.tags)

    def __getitem__(self, rows: slice) -> DeliveryColumns:
        """The deliveries ``rows`` (a slice), sharing the kinds."""
        return DeliveryColumns(
            self.tags[rows], self.kinds[rows], self.bodies[rows], self.distinct, self.keys
        )


@dataclass(slots=True)
class DeliveriesReceived:
    """A run of basic.deliver contents on a channel that takes them as columns
    (``Connection.deliver_as_columns``)."""

    channel: int
    columns: DeliveryColumns


@dataclass(slots=True)
class ContentTooLarge:
    """A body over ``Connection.max_body_size`` (as its content header announced) has
    arrived in full.

    The connection skips that body's frames itself (nothing of it is buffered) and reports
    it after the last one; the application answers as it sees fit, e.g. a broker closes the
    channel with 406 then, as RabbitMQ 4 does (measured: not before the whole body is in, so
    a client that publishes without confirms finishes writing it first).
    """

    channel: int
    method: Method
    size: int
    limit: int


@dataclass(slots=True)
class HeartbeatReceived:
    pass


@dataclass(slots=True)
class OtherFrameReceived:
    """A 0-9 out-of-band or trace frame (types 4-7), left to the application."""

    frame_type: int
    channel: int
    payload: bytes


@dataclass(slots=True)
class RequestReceived:
    """0-10 draft: a method in a frame-request (type 9), with its content if it has one."""

    request_id: int
    response_mark: int
    received: MethodReceived | ContentReceived


@dataclass(slots=True)
class ResponseReceived:
    """0-10 draft: a method in a frame-response (type 10): it answers the requests
    ``request_id`` to ``request_id + batch_offset``."""

    response_id: int
    request_id: int
    batch_offset: int
    received: MethodReceived | ContentReceived


Event = (
    ProtocolHeaderReceived
    | UnsupportedProtocol
    | MethodReceived
    | ContentReceived
    | DeliveriesReceived
    | ContentTooLarge
    | HeartbeatReceived
    | OtherFrameReceived
    | RequestReceived
    | ResponseReceived
)
