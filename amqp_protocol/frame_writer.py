"""Frames out: methods, contents and heartbeats into the bytes of their frames.

``FrameWriter`` is one of the parts ``Connection`` is made of (see ``connection.py``): it
splits bodies by the connection's frame-max and reports the life-cycle methods it writes
to the channel life cycle.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from . import frames
from .errors import protocol_error
from .life_cycle import LIFE_CYCLE_CLASSES, ChannelLifeCycle
from .methods import Method
from .properties import Properties

#: Aliases, not imported by name: see ``frames``' docstring.
_FRAME_HEAD = frames.FRAME_HEADER
_END_AND_HEAD = frames.END_AND_HEADER
_HEADER_FRAME_HEAD = frames.HEADER_FRAME_HEAD
_REQUEST_IDS = frames.REQUEST_IDS
_NO_FRAME_LIMIT = frames.NO_FRAME_LIMIT


class FrameWriter(ChannelLifeCycle):
    """The bytes of what this side sends."""

    #: 0: no limit, as in connection.tune.
    frame_max: int

    def initiate(self) -> bytes:
        """Client: the protocol header that opens the conversation."""
        assert self.spec is not None
        return self.spec.protocol_header

    def send_method(self, channel: int, method: Method) -> bytes:
        if method.CLASS_ID <= LIFE_CYCLE_CLASSES:
            self._track(channel, method.NAME, sent=True)
        payload = method.encode()
        return _FRAME_HEAD.pack(frames.METHOD, channel, len(payload)) + payload + b"\xce"

    def send_request(
        self, channel: int, method: Method, request_id: int, response_mark: int = 0
    ) -> bytes:
        """0-10 draft: ``method`` in a frame-request. A content-bearing method's header and
        body frames are the caller's to follow it with (``send_content`` writes a method
        frame)."""
        return self._send_wrapped(frames.REQUEST, channel, method, (request_id, response_mark, 0))

    def send_response(
        self,
        channel: int,
        method: Method,
        response_id: int,
        request_id: int,
        batch_offset: int = 0,
    ) -> bytes:
        """0-10 draft: ``method`` in a frame-response answering the requests ``request_id``
        to ``request_id + batch_offset``."""
        return self._send_wrapped(
            frames.RESPONSE, channel, method, (response_id, request_id, batch_offset)
        )

    def _send_wrapped(
        self, frame_type: int, channel: int, method: Method, ids: tuple[int, int, int]
    ) -> bytes:
        if self.spec is None or not self.spec.has_request_frames:
            label = self.spec.label if self.spec is not None else "an unnegotiated connection"
            raise ValueError(f"AMQP {label} has no request or response frames")
        try:
            packed = _REQUEST_IDS.pack(*ids)
        except struct.error as exc:
            raise protocol_error(
                502, f"request or response frame ids {ids}: {exc}", method
            ) from None
        if method.CLASS_ID <= LIFE_CYCLE_CLASSES:
            self._track(channel, method.NAME, sent=True)
        payload = packed + method.encode()
        return _FRAME_HEAD.pack(frame_type, channel, len(payload)) + payload + b"\xce"

    def send_content(
        self, channel: int, method: Method, properties: Properties, body: bytes
    ) -> bytes:
        """A content-bearing method with its header and body frames, split by frame-max."""
        payload = method.encode()
        header = properties.encode_header(len(body))
        parts = [
            _FRAME_HEAD.pack(frames.METHOD, channel, len(payload)),
            payload,
            _END_AND_HEAD.pack(frames.FRAME_END, frames.HEADER, channel, len(header)),
            header,
        ]
        frame_max = self.frame_max or _NO_FRAME_LIMIT
        if len(body) <= frame_max - frames.FRAME_OVERHEAD:
            if body:
                parts += [
                    _END_AND_HEAD.pack(frames.FRAME_END, frames.BODY, channel, len(body)),
                    body,
                ]
            parts.append(b"\xce")
        else:
            parts.append(b"\xce")
            parts += frames.encode_body_frames(channel, body, frame_max)
        return b"".join(parts)

    def content_frames(
        self, channel: int, method: Method, properties: Properties, body: bytes
    ) -> bytes:
        """The header and body frames that ``send_content`` writes after ``method``'s frame
        (in the 0-10 draft they also follow a method sent in a frame-request or
        frame-response). Cut from ``send_content``'s bytes, so that its hot path stays one
        call and one join, and the two cannot frame a content differently."""
        whole = self.send_content(channel, method, properties, body)
        _, _, size = _FRAME_HEAD.unpack_from(whole)
        return whole[frames.FRAME_OVERHEAD + size :]

    def send_encoded_contents(
        self, channel: int, class_id: int, contents: Iterable[tuple[bytes, bytes, bytes]]
    ) -> bytes:
        """Many content-bearing methods of class ``class_id`` at once, from their encoded
        parts: each item is (``Method.encode()``, ``Properties.encode_list()``, body). The
        bytes are those ``send_content`` writes for each, concatenated; a method payload
        that is the same object as the item before's is framed only once."""
        frame_max = self.frame_max or _NO_FRAME_LIMIT
        body_limit = frame_max - frames.FRAME_OVERHEAD
        header_head = _HEADER_FRAME_HEAD.pack
        body_head = _END_AND_HEAD.pack
        parts: list[bytes] = []
        last_payload: bytes | None = None
        method_frame = b""
        for payload, property_list, body in contents:
            if payload is not last_payload:
                last_payload = payload
                method_frame = (
                    _FRAME_HEAD.pack(frames.METHOD, channel, len(payload)) + payload + b"\xce"
                )
            size = len(body)
            header = header_head(frames.HEADER, channel, 12 + len(property_list), class_id, 0, size)
            if 0 < size <= body_limit:
                parts += (
                    method_frame,
                    header,
                    property_list,
                    body_head(frames.FRAME_END, frames.BODY, channel, size),
                    body,
                    b"\xce",
                )
            else:
                parts += (method_frame, header, property_list, b"\xce")
                parts += frames.encode_body_frames(channel, body, frame_max)
        return b"".join(parts)

    def send_heartbeat(self) -> bytes:
        return frames.HEARTBEAT_FRAME
