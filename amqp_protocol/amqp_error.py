"""The base of the AMQP errors; ``errors`` holds one subclass per reply code of the specs."""

from __future__ import annotations


class AMQPError(Exception):
    """An AMQP exception as a close method carries it: reply code, text and culprit method."""

    reply_code: int = 0
    name: str = "amqp-error"
    hard: bool = True

    def __init__(
        self,
        reply_text: str = "",
        class_id: int = 0,
        method_id: int = 0,
        *,
        reply_code: int | None = None,
    ) -> None:
        if reply_code is not None:
            self.reply_code = reply_code
        self.reply_text = reply_text or self.name.upper().replace("-", "_")
        self.class_id = class_id
        self.method_id = method_id
        super().__init__(f"{self.reply_code} {self.reply_text}")

    def with_culprit(self, class_id: int, method_id: int) -> AMQPError:
        """Name the method that caused the error (the close carries its ids)."""
        self.class_id, self.method_id = class_id, method_id
        return self
