"""Reading a streaming query's checkpoint the way Spark writes it, for ``trigger(once=True)``
on classic queues: Spark calls nothing on the source after the only batch of a once run, so
the source looks the batch up there when the run ends (see ``classic_micro_batch``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def latest_batch_committed_at(checkpoint: Path, offset: Mapping[str, Any]) -> bool:
    """Whether the last batch planned in the query checkpoint ``checkpoint`` ends at
    ``offset`` for one of its sources and Spark has committed it.

    Spark writes ``offsets/<N>`` when it plans batch N (a version line, a metadata JSON
    line, then one line per source: that source's end offset as JSON, ``-`` for none) and
    ``commits/<N>`` atomically once the batch is done. Offsets are compared parsed, not as
    text (Spark's JSON spacing is not ours).
    """
    batches = [p for p in (checkpoint / "offsets").glob("[0-9]*") if p.name.isdigit()]
    if not batches:
        return False
    last = max(batches, key=lambda p: int(p.name))
    lines = last.read_text(encoding="utf-8").splitlines()[2:]
    if not any(_json_or_none(line) == offset for line in lines):
        return False
    return (checkpoint / "commits" / last.name).is_file()


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
