"""The reader of ``spec/rabbitmq-stream-protocol.txt``: the stream protocol's response codes,
records and commands, as the definitions the stream writer (``stream_module``) turns into
code. The file's own header describes its lines and types."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

STREAM_SPEC_FILE = "rabbitmq-stream-protocol.txt"
_SPEC_DIR = Path(__file__).parent.parent / "spec"
#: Wire types of a fixed size: their ``struct`` code.
FIXED_CODES = {
    "uint8": "B",
    "uint16": "H",
    "uint32": "I",
    "uint64": "Q",
    "int64": "q",
    "bool8": "B",
}
#: The other wire types (``[Record]`` arrays aside).
VARIABLE_TYPES = frozenset(
    {
        "string",
        "bytes",
        "shortbytes",
        "[string]",
        "[uint64]",
        "[uint16]",
        "{string:string}",
        "{string:int64}",
        "offset",
        "messages",
        "messages2",
        "chunk",
    }
)
#: How a last field may be absent: read when present; written always, or only when not empty.
PRESENCES = ("required", "optional", "omit-empty")
_COMMAND = re.compile(r"^(\w+) (0x[0-9a-f]{4}) (\d+) (client|server|both):(.*)$")
_STRUCT = re.compile(r"^struct (\w+):(.*)$")
_CODE = re.compile(r"^code (\w+) (0x[0-9a-f]{2})$")


@dataclass(frozen=True)
class StreamField:
    name: str
    type: str
    presence: str = "required"

    @property
    def fixed(self) -> bool:
        return self.type in FIXED_CODES


@dataclass(frozen=True)
class StreamRecord:
    """A record of an array (``struct`` line)."""

    name: str
    fields: tuple[StreamField, ...]


@dataclass(frozen=True)
class StreamCommand:
    name: str
    key: int
    version: int
    sender: str
    fields: tuple[StreamField, ...]


@dataclass(frozen=True)
class StreamSpec:
    codes: tuple[tuple[str, int], ...]
    records: tuple[StreamRecord, ...]
    commands: tuple[StreamCommand, ...]


def _fields(text: str, records: dict[str, StreamRecord], where: str) -> tuple[StreamField, ...]:
    fields = []
    words = text.split()
    for i, word in enumerate(words):
        name, _, rest = word.partition(":")
        ftype, _, presence = rest.partition("/")
        presence = presence or "required"
        known = ftype in FIXED_CODES or ftype in VARIABLE_TYPES or ftype[1:-1] in records
        if not known or presence not in PRESENCES:
            raise ValueError(f"{STREAM_SPEC_FILE}: {where}: unknown field type {rest!r}")
        if presence != "required" and i != len(words) - 1:
            raise ValueError(f"{STREAM_SPEC_FILE}: {where}: only a last field may be absent")
        fields.append(StreamField(name, ftype, presence))
    return tuple(fields)


def read_stream_spec(path: Path = _SPEC_DIR / STREAM_SPEC_FILE) -> StreamSpec:
    codes: list[tuple[str, int]] = []
    records: dict[str, StreamRecord] = {}
    commands: list[StreamCommand] = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"line {number}"
        if m := _CODE.match(line):
            codes.append((m[1], int(m[2], 16)))
        elif m := _STRUCT.match(line):
            records[m[1]] = StreamRecord(m[1], _fields(m[2], records, where))
        elif m := _COMMAND.match(line):
            fields = _fields(m[5], records, where)
            commands.append(StreamCommand(m[1], int(m[2], 16), int(m[3]), m[4], fields))
        else:
            raise ValueError(
                f"{STREAM_SPEC_FILE}: {where}: not a code, struct or command: {line!r}"
            )
    return StreamSpec(tuple(codes), tuple(records.values()), tuple(commands))
