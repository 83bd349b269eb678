"""What a stream connection hands to the parties of its commands: the connection's reader
thread calls these, outside any of the connection's locks, so an implementation may take
its own lock but must not block for long (the thread reads every other frame too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from amqp_protocol.generated.stream import PublishingError

from .exceptions import StreamError


class PublisherListener(Protocol):
    """The confirms and errors of one publisher (``StreamClient.declare_publisher``)."""

    def confirmed(self, publishing_ids: Sequence[int]) -> None:
        """The broker wrote (or, deduplicating, had already written) these messages."""
        ...

    def failed(self, errors: Sequence[PublishingError]) -> None:
        """The broker refused these messages, each with its response code."""
        ...

    def closed(self, error: StreamError) -> None:
        """The publisher can confirm nothing more: its stream went away or the connection
        ended. Messages not confirmed by now may or may not be written."""
        ...
