"""The draft's request and response frames (types 9 and 10) on the server.

The draft names the two frame types ("needed for the transition from 0-9 to 0-10, while still
on 0-9 framing") and says no more; the protocol layer lays them out as Qpid's implementation
of that framing does (docs/protocol-0-10.md), and the broker answers them as Qpid's broker
did:

- a method the client sends in a frame-request is executed as if it had come in a method
  frame (the core's ``Connection.handle_request``): same handlers, same errors;
- its reply, a method its definition names as a response (queue.declare-ok for
  queue.declare, basic.get-ok or get-empty for basic.get, channel.open-ok, session.attached,
  ...), goes back in a frame-response whose request-id is the request's and whose
  response-id counts the channel's responses from 1 (a channel opened again counts afresh);
  batch-offset is 0, one response per request. Everything else the method causes (a
  delivery, a channel.close for a channel exception) goes out in method frames, and a
  method without a response (queue.bind, basic.ack) is answered by nothing;
- a request's response-mark acknowledges the server's requests, and the server sends none,
  so it is read and not used;
- a frame-response from the client answers nothing the server asked: 503 command-invalid,
  the draft's code for "an invalid sequence of frames".

Malformed request frames (shorter than their ids, their method cut short) are the protocol
layer's 502; a request on a channel that is not open is its 504, as for a method frame.
"""

from __future__ import annotations

import functools
import weakref

from amqp_protocol import Method, Spec, errors, events

from ..abc import Connection


@functools.cache
def _responses(spec: Spec) -> dict[str, tuple[str, ...]]:
    """Each method's responses, by name, as ``spec`` defines them."""
    return {m.name: m.responses for c in spec.classes.values() for m in c.methods}


class Requests:
    """The response ids of the channels of the server's 0-10 connections."""

    def __init__(self) -> None:
        self._last: weakref.WeakKeyDictionary[Connection, dict[int, int]] = (
            weakref.WeakKeyDictionary()
        )

    def channel_opened(self, conn: Connection, channel_id: int) -> None:
        """The channel's responses are counted from 1 again."""
        self._last.setdefault(conn, {})[channel_id] = 0

    @staticmethod
    def response_received(ev: events.ResponseReceived) -> None:
        raise errors.CommandInvalid(
            f"COMMAND_INVALID - frame-response (request-id {ev.request_id}) from the client: "
            "the server sent no request"
        )

    def request_received(self, conn: Connection, ev: events.RequestReceived) -> None:
        received = ev.received
        channel = received.channel
        replies = _responses(conn.spec)[received.method.NAME]
        last = self._last.setdefault(conn, {})

        def respond(method: Method) -> bytes | None:
            if method.NAME not in replies:
                return None
            last[channel] = last.get(channel, 0) + 1
            return conn.proto.send_response(channel, method, last[channel], ev.request_id)

        conn.handle_request(received, respond)
