"""One queue's deliveries received and not yet acked, as columns (``HeldDeliveries``).

The client hands a channel's deliveries over in runs of columns (``DeliveryColumns``: tags,
kinds, bodies), each run with its own numbering of the kinds it holds. Held, the runs become
one set of columns in tag order with one numbering of kinds, merged by their encoded form:
a run whose kinds are numbered as the held ones (a queue's deliveries mostly share one kind)
is appended as it is; otherwise its kind numbers are mapped, in C (``map``). Nothing here
costs a Python step per delivery.
"""

from __future__ import annotations

import bisect
import collections

from amqp_protocol.events import DeliveryColumns, DeliveryKind

#: Kinds held beyond this many (messages that differ one by one, e.g. by their message id or
#: timestamp) are renumbered when a batch is acked, keeping only those still held.
MAX_KINDS = 4096


class HeldDeliveries:
    """Deliveries in tag order: ``columns`` holds them, with the kinds numbered as one."""

    def __init__(self) -> None:
        self.columns = DeliveryColumns([], [], [], [], [])
        self._kind_of: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self.columns.tags)

    def add(self, run: DeliveryColumns) -> tuple[int, int]:
        """Hold ``run`` after the deliveries held; returns how many of it were marked
        redelivered and its body bytes."""
        held = self.columns
        numbers = [
            self._number(key, kind) for key, kind in zip(run.keys, run.distinct, strict=True)
        ]
        if numbers == list(range(len(numbers))):
            held.kinds += run.kinds
        else:
            held.kinds += map(numbers.__getitem__, run.kinds)
        held.tags += run.tags
        held.bodies += run.bodies
        return _redelivered(run), sum(map(len, run.bodies))

    def _number(self, key: bytes | None, kind: DeliveryKind) -> int:
        """The held number of a run's kind, a new one for a kind not held."""
        number = None if key is None else self._kind_of.get(key)
        if number is None:
            number = len(self.columns.distinct)
            self.columns.distinct.append(kind)
            self.columns.keys.append(key)
            if key is not None:
                self._kind_of[key] = number
        return number

    def after(self, tag: int) -> int:
        """The index of the first delivery held with a tag above ``tag``."""
        return bisect.bisect_right(self.columns.tags, tag)

    def tag_at(self, index: int) -> int:
        return self.columns.tags[index]

    def body_size(self, index: int) -> int:
        return len(self.columns.bodies[index])

    def rows(self, first: int, last: int) -> DeliveryColumns:
        """The deliveries from index ``first`` to ``last`` (excluded)."""
        return self.columns[first:last]

    def drop(self, count: int) -> int:
        """Forget the first ``count`` deliveries (acked); returns their body bytes."""
        held = self.columns
        size = sum(map(len, held.bodies[:count]))
        del held.tags[:count], held.kinds[:count], held.bodies[:count]
        if len(held.distinct) > MAX_KINDS:
            self._renumber()
        return size

    def _renumber(self) -> None:
        """Keep only the kinds still held, numbered anew. The lists are new ones: rows taken
        before (``rows``) keep the numbering they were taken with."""
        held = self.columns
        kept = sorted(set(held.kinds))
        number = {old: new for new, old in enumerate(kept)}
        distinct = [held.distinct[old] for old in kept]
        keys = [held.keys[old] for old in kept]
        self.columns = DeliveryColumns(
            held.tags, list(map(number.__getitem__, held.kinds)), held.bodies, distinct, keys
        )
        self._kind_of = {key: new for new, key in enumerate(keys) if key is not None}


def _redelivered(run: DeliveryColumns) -> int:
    """How many deliveries of ``run`` are of a kind marked redelivered."""
    marked = [number for number, kind in enumerate(run.distinct) if kind.redelivered]
    if not marked:
        return 0
    counts = collections.Counter(run.kinds)
    return sum(counts[number] for number in marked)
