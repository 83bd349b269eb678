"""A message of the file, stream or message class, as the lanes hold it."""

from __future__ import annotations

from typing import Any

from amqp_protocol import SPEC_0_9

from ...model.message import Message


class ClassMessage(Message):
    """A message of the file, stream or message class.

    ``properties`` is the class's generated properties object (file, stream) or, for the
    message class, the dict of message.transfer's header fields. ``Message.__init__`` reads
    basic properties, so the shared attributes are filled here.
    """

    def __init__(
        self,
        content_class: str,
        exchange: str,
        routing_key: str,
        properties: Any,
        body: bytes,
        *,
        priority: int | None = None,
        identifier: str = "",
    ) -> None:
        self.content_class = content_class
        self.class_id = SPEC_0_9.classes[content_class].class_id
        self.exchange = exchange
        self.routing_key = routing_key
        self.properties = properties
        self.body = body
        self.identifier = identifier
        self._header = None
        self._envelope = None
        self.priority = priority if isinstance(priority, int) else 0
        self.ttl = None
        self.msg_id = 0  #: its journal id in a journaled lane (see lane_queue)
        self.blind_keys = ()

    @property
    def persistent(self) -> bool:
        return False

    @property
    def headers(self) -> dict[str, Any]:
        """The properties' headers; a message-class message's application-headers."""
        properties = self.properties
        if isinstance(properties, dict):
            headers = properties.get("application_headers")
        else:
            headers = getattr(properties, "headers", None)
        return headers if isinstance(headers, dict) else {}
