"""The base of the method classes.

Every method of every version is a subclass of ``Method`` in a module of ``generated/``
(``generated.spec_0_9_1.BasicQos``), written by ``python -m amqp_protocol.generate``: typed
fields in ``__slots__`` and a straight-line ``encode``/``decode`` pair (see ``codegen``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .spec import MethodDef, Spec


class Method:
    """Base of the generated method classes. Fields are plain attributes."""

    __slots__ = ()
    NAME: ClassVar[str]
    CLASS_ID: ClassVar[int]
    METHOD_ID: ClassVar[int]
    SYNCHRONOUS: ClassVar[bool]
    HAS_CONTENT: ClassVar[bool]
    DEFINITION: ClassVar[MethodDef]
    FIELD_NAMES: ClassVar[tuple[str, ...]]
    SPEC: ClassVar[Spec]

    def __init__(self, **fields: Any) -> None:  # each generated class has its own
        raise TypeError("instantiate a generated method class, not Method")

    def encode(self) -> bytes:
        """The payload of a method frame: class-id, method-id and the arguments."""
        raise NotImplementedError

    @classmethod
    def decode(cls, data: bytes, offset: int) -> tuple[Method, int]:
        """Decode the arguments at ``offset``; returns the method and the offset after it."""
        raise NotImplementedError

    @classmethod
    def responses(cls) -> tuple[str, ...]:
        return cls.DEFINITION.responses

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.FIELD_NAMES}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash((self.NAME, tuple(map(repr, self.fields().values()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.fields().items())
        return f"<{self.NAME} {args}>"
