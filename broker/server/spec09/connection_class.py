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
from collections.abc import Callable
from typing import Any

from amqp_protocol import SPEC_0_8, Spec, errors, events, frames
from amqp_protocol.generated import spec_0_9_1
from amqp_protocol.generated.any_version import ConnectionOpen

from ..abc import Channel, Connection

log = logging.getLogger(__name__)


def start_version(spec: Spec) -> tuple[int, int]:
    """connection.start's version: for 0-8 the one its XML states (major 8, minor 0), which
    RabbitMQ sends too."""
    if spec is SPEC_0_8:
        return 8, 0
    return spec.version[0], spec.version[1]


def server_properties(properties: dict[str, Any]) -> dict[str, Any]:
    """connection.start's server-properties with "host" too."""
    return {**properties, "host": socket.gethostname()}


def redirected(conn: Connection, m: ConnectionOpen) -> bool:
    """Send connection.redirect and end the connection when the config says so."""
    if isinstance(m, spec_0_9_1.ConnectionOpen):
        return False  # 0-9-1 has no redirect (and no insist field)
    targets = conn.config.redirect.get(m.virtual_host)
    if not targets or m.insist:
        return False
    redirect = conn.handshake.redirect(targets[0], " ".join(targets))
    log.info("connection %s: vhost %r redirected to %s", conn.peer, m.virtual_host, targets[0])
    conn.send_method(0, redirect)
    conn.abort()
    return True


def flow_publishers(
    conn: Connection, active: bool, flow: Callable[[Channel], str] = lambda _: "channel.flow"
) -> None:
    """Stop or restart the publishers of every open channel with the ``flow`` method it
    names for the channel (channel.flow; the 0-10 draft's sessions take session.flow)."""
    for channel_id, channel in conn.channels.items():
        if not channel.closed:
            conn.send_method(channel_id, conn.spec.method(flow(channel))(active=active))


def other_frame(conn: Connection, ev: events.OtherFrameReceived) -> None:
    if ev.frame_type == frames.TRACE:
        log.debug("connection %s: trace frame on channel %d ignored", conn.peer, ev.channel)
        return
    raise errors.UnexpectedFrame(
        f"UNEXPECTED_FRAME - out-of-band frame (type {ev.frame_type}) on channel "
        f"{ev.channel}, which has no out-of-band transfers configured"
    )
