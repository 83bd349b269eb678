"""Source snippets shared by the generated method and property codecs.

Generated ``encode``/``decode`` functions are compiled from text so that each one is
straight-line code for its own fields: fixed-size fields go through one precompiled
``struct``, short and long strings are decoded inline, only tables and 0-9's message content
call out to ``values``. The helpers here give, per wire type, the expression that encodes an
attribute and the statements that decode one.
"""

from __future__ import annotations

import struct
from typing import Any

from . import values

#: ``struct`` codes of the fixed-size types.
STRUCT_CODES = {"octet": "B", "short": "H", "long": "I", "longlong": "Q", "timestamp": "Q"}

#: Exceptions an encoder turns into a 502 syntax error: an integer out of its field's range,
#: a string that is not encodable.
ENCODE_ERRORS = (struct.error, UnicodeEncodeError)
#: Exceptions a decoder turns into a 502 syntax error: input that ends too early.
DECODE_ERRORS = (struct.error, IndexError)


def namespace() -> dict[str, Any]:
    """Globals of generated code: the encoders and decoders the snippets refer to."""
    return {
        "U32": values.U32,
        "EMPTY_CONTENT": values.Content(),
        "ts": values.timestamp_seconds,
        "sstr": values.encode_shortstr,
        "lstr": values.encode_longstr,
        "table": values.encode_table,
        "content": values.encode_content,
        "dtable": values.decode_table,
        "dcontent": values.decode_content,
        "syntax_error": values.syntax_error,
        "ENCODE_ERRORS": ENCODE_ERRORS,
        "DECODE_ERRORS": DECODE_ERRORS,
    }


def encode_expression(ftype: str, value: str) -> str:
    """Python expression for the wire bytes of a variable-size ``value`` of type ``ftype``."""
    return {
        "shortstr": f"sstr({value})",
        "longstr": f"lstr({value})",
        "table": f"table({value})",
        "content": f"content({value})",
    }[ftype]


def decode_statements(ftype: str, target: str) -> list[str]:
    """Statements decoding a variable-size value at ``data[offset]`` into ``target``.

    Strings are sliced without bounds checks; a generated decoder checks once, at its end,
    that ``offset`` did not pass the end of ``data`` (a slice past the end is short, not an
    error, and ``offset`` only grows).
    """
    if ftype == "shortstr":
        return [
            "_n = data[offset] + 1",
            f"{target} = data[offset + 1 : offset + _n].decode('utf-8', 'surrogateescape')",
            "offset += _n",
        ]
    if ftype == "longstr":
        return [
            "_n = U32.unpack_from(data, offset)[0] + 4",
            f"{target} = bytes(data[offset + 4 : offset + _n])",
            "offset += _n",
        ]
    if ftype == "table":
        return [f"{target}, offset = dtable(data, offset)"]
    return [f"{target}, offset = dcontent(data, offset)"]


def compile_functions(source: str, filename: str, names: dict[str, Any]) -> dict[str, Any]:
    """Execute generated ``source`` with the shared namespace plus ``names``."""
    scope = namespace() | names
    exec(compile(source, filename, "exec"), scope)
    return scope


def indent(lines: list[str], level: int = 1) -> list[str]:
    return [("    " * level + line) if line else line for line in lines]
