"""The base class of the generated stream-protocol commands (``generated/stream.py``)."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from .values import Buffer

C = TypeVar("C", bound="Command")


class Command:
    """One stream-protocol command of one version: a request, a response or a one-way frame.

    ``KEY`` has the response bit (0x8000) for responses. ``encode()`` gives the whole frame,
    its size prefix included; ``decode(data)`` reads a frame's body (after the size
    prefix), whose key and version the caller has matched to the class.
    """

    __slots__: tuple[str, ...] = ()
    NAME: ClassVar[str]
    KEY: ClassVar[int]
    VERSION: ClassVar[int]
    #: "client", "server" or "both": who sends it.
    FROM: ClassVar[str]
    FIELD_NAMES: ClassVar[tuple[str, ...]]

    @property
    def is_response(self) -> bool:
        return bool(self.KEY & 0x8000)

    def encode(self) -> bytes:
        raise NotImplementedError

    @classmethod
    def decode(cls: type[C], data: Buffer, offset: int = 4) -> C:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.FIELD_NAMES)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.FIELD_NAMES)
        return f"{self.NAME}({fields})"
