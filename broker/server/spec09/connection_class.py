"""0-9's connection-level behaviour on the server: redirects, out-of-band and trace frames,
and refused tuning.

- connection.start's server-properties carry "host" too on 0-9 (rule
  connection.start.server-properties:required-fields); 0-9-1 keeps RabbitMQ's set. To a
  0-8 client it announces version 8-0, as 0-8's XML and RabbitMQ do.
- connection.redirect: ``redirect`` in the broker config maps a virtual host to servers
  ("host[:port]"); a 0-9/0-8 client opening that virtual host without ``insist`` gets
  connection.redirect to the first of them (known-hosts: all of them) and the connection
  ends. A client that insists is served here (rule connection.open.insist:behaviour).
- The protocol header ``AMQP 1 1 9 1``, which py-amqplib and other pre-standard 0-8 clients
  send, opens a 0-8 connection, as it does on RabbitMQ: the protocol layer negotiates it as
  one of 0-8's ``header_aliases``.
- Frame types 4-7 (oob-method, oob-header, oob-body, trace): the spec names them only.
  Out-of-band transfers would be configured by channel.open's out-of-band field, whose
  syntax the spec leaves "to be formally defined at a later date"; no channel has them
  configured, so an out-of-band frame is an unexpected frame (505, connection exception).
  A trace frame carries no protocol state and is ignored.
- While the broker is over its memory watermark it stops the publishers of 0-9 connections
  with channel.flow(active=false) on each of their channels, and restarts them with
  channel.flow(active=true) (rules file:02, basic:03, message:03); their messages are kept,
  never discarded (basic:02, file:02, message:02).
- A connection.tune-ok over the server's limits, or with frame-max under frame-min-size,
  closes the socket without a connection.close (rules connection.tune-ok.channel-max:
  upper-limit, connection.tune-ok.frame-max:upper-limit and :minimum).
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Any

from amqp_protocol import SPEC_0_8, errors, events, frames
from amqp_protocol.generated import spec_0_9_1
from amqp_protocol.generated.any_version import ConnectionOpen

if TYPE_CHECKING:
    from ..connection import AMQPConnection

log = logging.getLogger(__name__)


def speaks_0_9(conn: AMQPConnection) -> bool:
    return conn.spec.version < (0, 9, 1)


def adjust_start(conn: AMQPConnection, start: Any) -> None:
    """connection.start as 0-9 and 0-8 want it: "host" in the server-properties, and for
    0-8 the version its XML states (major 8, minor 0), which RabbitMQ sends too."""
    if not speaks_0_9(conn):
        return
    start.server_properties["host"] = socket.gethostname()
    if conn.spec is SPEC_0_8:
        start.version_major, start.version_minor = 8, 0


def redirected(conn: AMQPConnection, m: ConnectionOpen) -> bool:
    """Send connection.redirect and end the connection when the config says so."""
    if isinstance(m, spec_0_9_1.ConnectionOpen):
        return False  # 0-9-1 has no redirect (and no insist field)
    targets = conn.config.redirect.get(m.virtual_host)
    if not targets or m.insist:
        return False
    redirect = conn.spec.method("connection.redirect")(
        host=targets[0], known_hosts=" ".join(targets)
    )
    log.info("connection %s: vhost %r redirected to %s", conn.peer, m.virtual_host, targets[0])
    conn.send_method(0, redirect)
    conn.abort()
    return True


def flow_publishers(conn: AMQPConnection, active: bool) -> None:
    if not speaks_0_9(conn):
        return
    flow = conn.spec.method("channel.flow")(active=active)
    for channel_id, channel in conn.channels.items():
        if not channel.closed:
            conn.send_method(channel_id, flow)


def other_frame(conn: AMQPConnection, ev: events.OtherFrameReceived) -> None:
    if ev.frame_type == frames.TRACE:
        log.debug("connection %s: trace frame on channel %d ignored", conn.peer, ev.channel)
        return
    raise errors.UnexpectedFrame(
        f"UNEXPECTED_FRAME - out-of-band frame (type {ev.frame_type}) on channel "
        f"{ev.channel}, which has no out-of-band transfers configured"
    )


def refuse_tuning(conn: AMQPConnection, err: errors.AMQPError) -> None:
    """Close the socket, no negotiated close: the 0-9 rules for a bad tune-ok, and what
    RabbitMQ 4 does in 0-9-1 (it closes 3 s later; measured on 4.0.5)."""
    log.info("connection %s: tune-ok refused (%s); closing the socket", conn.peer, err)
    conn.abort()
