"""What a ``Connection`` reports after reading bytes."""

from __future__ import annotations

from dataclasses import dataclass

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
    | ContentTooLarge
    | HeartbeatReceived
    | OtherFrameReceived
    | RequestReceived
    | ResponseReceived
)
