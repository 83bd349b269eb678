"""The codec's operations, counted one by one by a parent under callgrind
(``before_after.py``): run by path with a checkout first on ``PYTHONPATH``, it imports that
checkout's ``benchmarks.bench_codec`` and so its protocol package (an older tree's has
another name), and nothing of this tree. Standard library only, for the same reason.

It prints where its code came from (a JSON line), freezes the heap it has imported, then for
each operation: warms it up,
prints its name, waits for a line on stdin (the parent has zeroed the counters), runs it
``sys.argv[1]`` times, prints ``done`` and waits for the next line (the parent dumps).
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Callable, Iterator

from benchmarks import bench_codec as codec

WARM_UP = 200


def operations() -> Iterator[tuple[str, Callable[[], object]]]:
    """The ``ours`` side of each of ``bench_codec``'s figures, under shorter names."""
    messages = {
        "basic.publish": ("basic.publish", codec.PUBLISH, "server", codec.PROPERTIES),
        "basic.deliver": ("basic.deliver", codec.DELIVER, "client", codec.PROPERTIES),
        "basic.deliver, no properties": ("basic.deliver", codec.DELIVER, "client", {}),
    }
    for name, arguments in messages.items():
        encode, decode = codec._ours_message(*arguments)
        yield f"{name} encode", encode
        yield f"{name} decode", decode
    encoded = codec.values.encode_table(codec.TABLE)
    yield "field table encode", lambda: codec.values.encode_table(codec.TABLE)
    yield "field table decode", lambda: codec.values.decode_table(encoded, 0)


def main() -> None:
    n = int(sys.argv[1])
    origin = {"bench_codec": codec.__file__, "values": codec.values.__file__}
    print(json.dumps(origin), flush=True)
    # The counts are of the codec's work: the heap of what each tree imports (which differs
    # between trees) is left out of the collections that the operations' allocations start.
    gc.collect()
    gc.freeze()
    for name, operation in operations():
        for _ in range(WARM_UP):
            operation()
        print(name, flush=True)
        sys.stdin.readline()
        for _ in range(n):
            operation()
        print("done", flush=True)
        sys.stdin.readline()


if __name__ == "__main__":
    main()
